"""The ioazctl socket: a thread accepting connections on a Unix socket, one thread per client.

The daemon never dies of a client: a malformed line gets an error response, a line longer
than MAX_LINE is refused, a client that stalls is dropped after CLIENT_TIMEOUT_S, and at most
MAX_CLIENTS non-root clients are served at once (the rest are told so and closed; root
always gets through, so stalled clients of other users cannot lock the administrator out).

Permissions. The socket file is root:ioaz. Its mode is 0666, not 0660: connecting to a Unix
socket needs write permission on it, and every user may read status, explain and history.
What a client may *change* is decided per request from the kernel's SO_PEERCRED (uid 0 or the
ioaz group), not from the file mode. Without an ioaz group only root may change anything,
and the daemon says so in its log.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

from . import peer as peers
from .protocol import MAX_LINE, RequestError, decode, encode, error, handle

log = logging.getLogger("ioaz.api")

SOCKET_MODE = 0o666
CLIENT_TIMEOUT_S = 5.0
MAX_CLIENTS = 16


class ApiServer:
    def __init__(self, daemon: Any, path: os.PathLike | str):
        self.daemon = daemon
        self.path = Path(path)
        self.sock = _listen(self.path)
        self.slots = threading.BoundedSemaphore(MAX_CLIENTS)
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._accept_loop, name="ioaz-api", daemon=True)
        self.thread.start()
        log.info(json.dumps({"event": "api", "socket": str(self.path)}))

    def _accept_loop(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                if self.closing.is_set():
                    return
                continue
            try:
                who = peers.peer_of(conn)
            except OSError:
                conn.close()
                continue
            slot = self.slots.acquire(blocking=False)
            # Root is never locked out by other users' stalled connections.
            if not slot and who.uid != 0:
                _refuse(conn, "busy: too many clients at once, try again")
                continue
            threading.Thread(target=self._serve, args=(conn, who, slot),
                             name="ioaz-api-client", daemon=True).start()

    def _serve(self, conn: socket.socket, who: peers.Peer, slot: bool) -> None:
        try:
            # A whole request must arrive within CLIENT_TIMEOUT_S, not each piece of it: a
            # client trickling a byte every few seconds would otherwise hold its slot for ever
            # (16 such clients locked every other non-root user out).
            deadline = time.monotonic() + CLIENT_TIMEOUT_S
            buf = b""
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    if len(buf) > MAX_LINE:
                        conn.sendall(encode(error(f"request longer than {MAX_LINE} bytes",
                                                  "request")))
                        _drain(conn)
                        return
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    conn.settimeout(left)
                    chunk = conn.recv(65536)
                    if not chunk:
                        if buf.strip():      # a last request without its newline
                            conn.sendall(self._answer(buf, who))
                        return
                    buf += chunk
                    continue
                line, buf = buf[:nl], buf[nl + 1:]
                if line.strip():
                    conn.settimeout(CLIENT_TIMEOUT_S)
                    conn.sendall(self._answer(line, who))
                    deadline = time.monotonic() + CLIENT_TIMEOUT_S   # the next request's
        except (OSError, ValueError):
            pass   # timed out, reset, or went away: nothing to answer
        finally:
            conn.close()
            if slot:
                self.slots.release()

    def _answer(self, line: bytes, who: peers.Peer) -> bytes:
        if len(line) > MAX_LINE:
            return encode(error(f"request longer than {MAX_LINE} bytes", "request"))
        try:
            req = decode(line)
        except RequestError as e:
            return encode(error(str(e), "request"))
        allowed = peers.may_change(who, peers.group_id())
        return encode(handle(self.daemon, req, allowed, str(who)))

    def close(self) -> None:
        self.closing.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(timeout=5)
        try:
            if stat.S_ISSOCK(self.path.lstat().st_mode):
                self.path.unlink()
        except OSError:
            pass


def _drain(conn: socket.socket, limit: int = 16 << 20) -> None:
    """Read and drop what the client still sends (bounded by the timeout and `limit`):
    closing with unread input makes the kernel reset the connection, and the client would
    lose the error we just sent."""
    conn.shutdown(socket.SHUT_WR)
    n = 0
    while n < limit:
        chunk = conn.recv(65536)
        if not chunk:
            return
        n += len(chunk)


def _refuse(conn: socket.socket, why: str) -> None:
    try:
        conn.settimeout(1.0)
        conn.sendall(encode(error(why, "busy")))
    except OSError:
        pass
    finally:
        conn.close()


def _listen(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise RuntimeError(f"{path}: exists and is not a socket; not removing it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(1.0)
            probe.connect(str(path))
        except OSError:
            path.unlink()          # stale, from a daemon that died
        else:
            raise RuntimeError(f"{path}: another ioazd is serving it")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    _own(path)
    sock.listen(16)
    return sock


def _own(path: Path) -> None:
    gid = peers.group_id()
    if gid is None:
        log.warning(json.dumps({
            "event": "api_group_missing", "group": peers.GROUP,
            "effect": "only root may change anything through the socket; create the group "
                      "(make install does) and restart to delegate"}))
        gid = 0
    if os.geteuid() == 0:
        os.chown(path, 0, gid)
    os.chmod(path, SOCKET_MODE)


def start_api_server(daemon: Any, path: os.PathLike | str) -> ApiServer:
    return ApiServer(daemon, path)
