"""What `ioazd --check` finds beyond the file itself: the places the configuration names must work.

A configuration can be well-formed and still not start: the metrics address is taken or not on
this machine, the socket's path is too long for a Unix socket or blocked by a file, the state
directory sits under a regular file or on a read-only mount. The unit runs `--check` before
every start (ExecStartPre), so these are found there, each with the setting's FILE:LINE, rather
than as a daemon that dies (or serves no metrics) after it has started.

Nothing here changes anything: the bind is given back at once, no directory is made.
"""
from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

from ..bdi import DEBUGFS
from ..located import DocPath, ValidationError, load_file
from .config import DaemonConfig

# sockaddr_un.sun_path is 108 bytes on Linux, one of them the terminating NUL
MAX_SOCKET_PATH = 107


def problems(cfg: DaemonConfig) -> list[str]:
    """FILE:LINE: what will not work, one line each; [] when everything can be used."""
    where = _Where(cfg.file)
    out: list[str] = []
    if cfg.metrics_listen:
        why = _cannot_bind(cfg.metrics_listen)
        if why:
            out.append(where.at(("metrics", "listen"),
                                f"metrics.listen {cfg.metrics_listen}: cannot be bound: {why}"))
    why = _socket_problem(cfg.socket)
    if why:
        out.append(where.at(("socket",), f"socket {cfg.socket}: {why}"))
    if not cfg.dry_run:
        why = _directory_problem(cfg.state_dir)
        if why:
            out.append(where.at(("state_dir",), f"state_dir {cfg.state_dir}: {why}"))
    return out


def warnings(cfg: DaemonConfig, debugfs: str | Path = DEBUGFS) -> list[str]:
    """FILE:LINE: what will work, but less well than it could; not a reason to refuse."""
    m = cfg.model
    if m is None or "dirty_fill" not in [n for n, _ in m.schema]:
        return []
    if (Path(debugfs) / "bdi").is_dir():
        return []
    # the model then reads the feature as missing everywhere, as if no writer were held back
    return [_Where(cfg.file).at(
        ("classifier", "model"),
        f"classifier.model {cfg.model_file}: reads each disk's dirty data (dirty_fill) from "
        f"{debugfs}/bdi, which is not there (debugfs is not mounted; systemd's "
        "sys-kernel-debug.mount mounts it): the model will read it as missing")]


class _Where:
    """The line a setting was written on, or the file alone for a default."""

    def __init__(self, file: str) -> None:
        self.file = file
        try:
            self.doc = load_file(file) if file else None
        except ValidationError:
            self.doc = None

    def at(self, path: DocPath, message: str) -> str:
        if self.doc is None or not isinstance(self.doc.data, dict):
            return f"{self.file or '(defaults)'}: {message}"
        if path[0] not in self.doc.data:
            return f"{self.file}: {message} (the default; set {path[0]} to change it)"
        return f"{self.file}:{self.doc.line(path)}: {message}"


def _cannot_bind(listen: str) -> str | None:
    host, _, port = listen.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        return f"the host does not resolve ({e})"
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return "the address is in use (another ioazd, or another service on that port)"
            if e.errno == errno.EADDRNOTAVAIL:
                return "the address is not one of this machine's"
            return e.strerror or str(e)
    return None


def _socket_problem(path: Path) -> str | None:
    if len(os.fsencode(str(path))) > MAX_SOCKET_PATH:
        return (f"the path is {len(os.fsencode(str(path)))} bytes; a Unix socket's path has "
                f"at most {MAX_SOCKET_PATH}")
    if path.is_symlink() or (path.exists() and not path.is_socket()):
        return "a file that is not a socket is in its place (ioazd replaces only a socket)"
    return _directory_problem(path.parent)


def _directory_problem(directory: Path) -> str | None:
    """Why `directory` cannot be made (if missing) and written to, or None."""
    d = directory
    while not d.exists():
        if d.is_symlink():
            return f"{d} is a dangling symbolic link"
        d = d.parent
    if not d.is_dir():
        return f"{d} is a file, not a directory"
    # the mount first: access() fails on it too, and would hide why
    if os.statvfs(d).f_flag & os.ST_RDONLY:
        return f"{d} is on a read-only file system"
    if not os.access(d, os.W_OK | os.X_OK):
        return f"{d} cannot be written to (as user {os.geteuid()})"
    return None
