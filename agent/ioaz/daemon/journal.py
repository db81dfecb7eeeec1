"""ioazd's log straight to journald, with fields an operator can select on.

Under systemd ioazd writes each event as a journal entry of its own through journald's native
socket (systemd.journal-fields(7), the protocol of sd_journal_send), not as a line of stderr:
PRIORITY from the level, SYSLOG_IDENTIFIER=ioazd, the JSON event as MESSAGE, and from the
event the fields DEVICE (the disk it is about) and IOAZ_EVENT, so that

    journalctl -u ioazd DEVICE=sda          everything about one disk
    journalctl -u ioazd IOAZ_EVENT=switch   every switch
    journalctl -u ioazd -p warning          the warnings and errors

work. A datagram journald does not take (the socket gone, too large) is written to stderr
instead, where the unit's StandardError=journal still catches it.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import struct
import sys

JOURNAL_SOCKET = "/run/systemd/journal/socket"
PRIORITY = {logging.CRITICAL: 2, logging.ERROR: 3, logging.WARNING: 4, logging.INFO: 6,
            logging.DEBUG: 7}


def field(name: str, value: str) -> bytes:
    """One field in the native protocol: NAME=value, or a length-prefixed value when it holds
    a newline."""
    data = value.encode("utf-8", errors="replace")
    if b"\n" not in data:
        return name.encode() + b"=" + data + b"\n"
    return name.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"


def entry(message: str, levelno: int, identifier: str = "ioazd") -> bytes:
    """The datagram for one log record; an event's device and name become fields of their own."""
    out = [field("MESSAGE", message), field("PRIORITY", str(PRIORITY.get(levelno, 6))),
           field("SYSLOG_IDENTIFIER", identifier)]
    start = message.find("{")
    if start >= 0:
        try:
            event = json.loads(message[start:].splitlines()[0])
        except ValueError:
            event = None
        if isinstance(event, dict):
            if isinstance(event.get("device"), str) and event["device"]:
                out.append(field("DEVICE", event["device"]))
            if isinstance(event.get("event"), str) and event["event"]:
                out.append(field("IOAZ_EVENT", event["event"]))
    return b"".join(out)


class JournalHandler(logging.Handler):
    def __init__(self, path: str = JOURNAL_SOCKET) -> None:
        super().__init__()
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
        except Exception:
            self.handleError(record)
            return
        try:
            self.sock.sendto(entry(message, record.levelno), self.path)
        except OSError:
            sys.stderr.write(f"<{PRIORITY.get(record.levelno, 6)}>{message}\n")

    def close(self) -> None:
        self.sock.close()
        super().close()


def stderr_is_journal() -> bool:
    """Whether stderr is the journal stream systemd gave this service: JOURNAL_STREAM names it
    (DEV:INODE), and a child of the service whose stderr someone else captures inherits the
    variable but not the stream (systemd.exec(5))."""
    want = os.environ.get("JOURNAL_STREAM", "")
    try:
        dev, ino = (int(x) for x in want.split(":"))
        st = os.fstat(sys.stderr.fileno())
    except (ValueError, OSError):
        return False
    return (st.st_dev, st.st_ino) == (dev, ino)


def available() -> bool:
    """Running under systemd with our stderr in the journal and journald there to take
    entries."""
    return stderr_is_journal() and os.path.exists(JOURNAL_SOCKET)
