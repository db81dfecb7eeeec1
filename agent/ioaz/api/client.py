"""The client side of the socket: one request, one response."""
from __future__ import annotations

import errno
import json
import os
import socket
import time
from typing import Any

DEFAULT_SOCKET = "/run/ioaz/ioaz.sock"
MAX_RESPONSE = 64 << 20     # a status of thousands of devices is far below this


class ConnectError(OSError):
    """The daemon cannot be reached (not running, wrong path, no permission on the file)."""


def _connect(s: socket.socket, path: str, timeout: float) -> None:
    """connect(), waiting while the listen backlog is full: a Unix socket answers EAGAIN then
    (a flood of connections), and root must still get through once the server drains it."""
    end = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            s.connect(path)
            return
        except BlockingIOError as e:
            if e.errno != errno.EAGAIN or time.monotonic() + pause > end:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def call(path: os.PathLike | str, request: dict[str, Any],
         timeout: float = 10.0) -> dict[str, Any]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        try:
            _connect(s, os.fspath(path), timeout)
        except FileNotFoundError:
            raise ConnectError(f"cannot reach ioazd at {path}: no such socket (is ioazd "
                               "running? --socket PATH)") from None
        except PermissionError:
            raise ConnectError(f"cannot reach ioazd at {path}: permission denied on the "
                               "socket") from None
        except OSError as e:
            raise ConnectError(f"cannot reach ioazd at {path}: {e.strerror}") from None
        try:
            s.sendall(json.dumps(request).encode() + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            pass   # the server answered and closed first (busy): its answer is still queued
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
            if len(buf) > MAX_RESPONSE:
                raise ConnectError("response too large")
        if not buf.strip():
            raise ConnectError(f"ioazd at {path} closed the connection without answering")
        try:
            resp = json.loads(buf.split(b"\n", 1)[0])
        except json.JSONDecodeError as e:
            raise ConnectError(f"ioazd at {path} answered something unreadable: {e}") from None
        if not isinstance(resp, dict) or "ok" not in resp:
            raise ConnectError(f"ioazd at {path} answered something unexpected")
        return resp
    except TimeoutError:
        raise ConnectError(f"ioazd at {path} did not answer within {timeout:g} s") from None
    finally:
        s.close()
