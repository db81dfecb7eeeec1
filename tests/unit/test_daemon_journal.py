"""ioazd's journal entries, read off a real datagram socket standing in for journald's: the
fields of the native protocol, DEVICE and IOAZ_EVENT from the event, a multi-line message
length-prefixed. (In the guest, tests/testbed selects on DEVICE= with the real journalctl.)"""
from __future__ import annotations

import json
import logging
import socket
import struct
from pathlib import Path

from ioaz.daemon.journal import JournalHandler, entry


def parse(datagram: bytes) -> dict[str, str]:
    out, i = {}, 0
    while i < len(datagram):
        nl = datagram.index(b"\n", i)
        line = datagram[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            out[k.decode()] = v.decode()
            i = nl + 1
        else:
            (n,) = struct.unpack("<Q", datagram[nl + 1:nl + 9])
            out[line.decode()] = datagram[nl + 9:nl + 9 + n].decode()
            i = nl + 9 + n + 1
    return out


def test_an_event_carries_its_device_and_name_as_fields(tmp_path: Path) -> None:
    sock_path = tmp_path / "journal.socket"
    journald = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    journald.bind(str(sock_path))
    journald.settimeout(5)
    log = logging.getLogger("ioaz.test.journal")
    log.propagate = False
    log.setLevel(logging.INFO)
    h = JournalHandler(str(sock_path))
    h.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(h)
    try:
        event = {"event": "switch", "device": "sdb", "from": "mq-deadline", "to": "bfq"}
        log.warning(json.dumps(event))
        got = parse(journald.recv(65536))
        assert got == {"MESSAGE": json.dumps(event), "PRIORITY": "4",
                       "SYSLOG_IDENTIFIER": "ioazd", "DEVICE": "sdb", "IOAZ_EVENT": "switch"}
        log.info("plain words, no event")
        assert parse(journald.recv(65536))["PRIORITY"] == "6"
    finally:
        log.removeHandler(h)
        h.close()
        journald.close()


def test_a_multi_line_message_is_length_prefixed() -> None:
    msg = '{"event": "device_error", "device": "sda"}\nTraceback (most recent call last):\n  x'
    got = parse(entry(msg, logging.ERROR))
    assert got["MESSAGE"] == msg and got["PRIORITY"] == "3" and got["DEVICE"] == "sda"


def test_without_journald_the_entry_goes_to_stderr(tmp_path: Path, capsys) -> None:
    h = JournalHandler(str(tmp_path / "no-such-socket"))
    h.setFormatter(logging.Formatter("%(message)s"))
    h.emit(logging.makeLogRecord({"msg": '{"event": "x"}', "levelno": logging.ERROR}))
    assert capsys.readouterr().err == '<3>{"event": "x"}\n'


def test_only_the_stream_systemd_named_is_the_journal(tmp_path: Path, monkeypatch) -> None:
    """A child of a service inherits JOURNAL_STREAM; its stderr, captured by its parent, is
    not the journal, and its log must stay on that stderr (the testbed bench reads it)."""
    import os
    import sys

    from ioaz.daemon import journal
    f = tmp_path / "stderr"
    with open(f, "w") as err:
        st = os.fstat(err.fileno())
        monkeypatch.setattr(sys, "stderr", err)
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
        assert journal.stderr_is_journal()
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino + 1}")
        assert not journal.stderr_is_journal() and not journal.available()
        monkeypatch.setenv("JOURNAL_STREAM", "garbage")
        assert not journal.stderr_is_journal()
