"""The ioazctl socket against a stand-in daemon: the protocol, its errors, who may change
what, and ioazctl's own options. Clients that hang up, stall, trickle or come in hundreds are
in test_api_clients.py.

The real daemon behind the same server is tested in tests/integration/test_ctl_daemon.py.
"""
from __future__ import annotations

import json
import os
import random
import socket
import stat

import api_standin
import pytest
from api_standin import StandIn, raw
from ioaz.api import protocol, server
from ioaz.api.client import ConnectError, call
from ioaz.api.peer import Peer, may_change
from ioaz.api.protocol import RequestError, parse_duration
from ioaz.cli import ioazctl

api = api_standin.api     # the fixture: a StandIn behind a real server


def test_status_round_trip_and_socket_mode(api):
    _d, srv = api
    r = call(srv.path, {"cmd": "status"})
    assert r["ok"] and r["result"]["devices"][0]["scheduler"] == "bfq"
    assert stat.S_IMODE(os.stat(srv.path).st_mode) == server.SOCKET_MODE


@pytest.mark.parametrize("gid", [None, 4321], ids=["no-group", "group"])
def test_the_socket_belongs_to_group_ioaz_and_a_missing_group_is_said(
        tmp_path, monkeypatch, caplog, gid):
    """Reliability 2.6: without a group ioaz only root may change anything, and the log says
    so at start; with one, the socket is root:ioaz (as root; other users cannot chown)."""
    monkeypatch.setattr(server.peers, "group_id", lambda name="ioaz": gid)
    srv = server.start_api_server(StandIn(), tmp_path / "s.sock")
    try:
        st = os.stat(srv.path)
        assert stat.S_IMODE(st.st_mode) == 0o666
        warned = [r for r in caplog.records if "api_group_missing" in r.getMessage()]
        if gid is None:
            assert [r.levelname for r in warned] == ["WARNING"]
            assert "only root may change anything" in warned[0].getMessage()
        else:
            assert warned == []
        if os.geteuid() == 0:
            assert (st.st_uid, st.st_gid) == (0, gid or 0)
    finally:
        srv.close()


def test_one_request_per_line_several_per_connection(api):
    d, srv = api
    out = raw(srv.path, b'{"cmd":"ping"}\n{"cmd":"history","limit":5}\n')
    assert [o["ok"] for o in out] == [True, True]
    assert d.calls == [("history", None, 5)]


@pytest.mark.parametrize("line,kind,text", [
    (b"{not json\n", "request", "malformed request"),
    (b"[1,2]\n", "request", "expected a JSON object"),
    (b'{"cmd":"format-disk"}\n', "request", "unknown command"),
    (b'{"cmd":"pin","device":"sdz"}\n', "request", "missing 'policy'"),
    (b'{"cmd":"pin","device":"sdz","policy":"bfq","for":"soon"}\n', "request",
     "bad duration"),
    (b'{"cmd":"pin","device":"sdz","policy":"bfq","for_s":-5}\n', "request",
     "more than zero"),
    (b'{"cmd":"pin","device":"nope","policy":"deadline"}\n', "refused", "unknown device"),
    (b'{"cmd":"reload"}\n', "internal", "RuntimeError: boom"),
    (b"\xff\xfe\n", "request", "not UTF-8"),
    # a duplicate key is refused, not the last one taken (it would have reloaded)
    (b'{"cmd":"status","cmd":"reload"}\n', "request", "key 'cmd' given twice"),
    (b'{"cmd":"status","x":' + b"[" * 5000 + b"]" * 5000 + b"}\n", "request",
     "nested deeper than 8"),
    (b'{"cmd":"pin","device":"sdz","policy":"bfq","for_s":NaN}\n', "request",
     "NaN is not a number"),
    (b'{"cmd":"history","limit":' + b"9" * 5000 + b"}\n", "request", "malformed request"),
    # reliability 1.1, the report's cases one by one
    (b'"status"\n', "request", "expected a JSON object"),
    (b"null\n", "request", "expected a JSON object"),
    (b'{"cmd":5}\n', "request", "unknown command 5 (expected one of"),
    (b'{"cmd":["status"]}\n', "request", "unknown command ['status']"),
    (b'{"cmd":"pin","device":5,"policy":"bfq"}\n', "request",
     "pin: missing 'device' (a string)"),
    (b'{"cmd":"pin","policy":"bfq"}\n', "request", "pin: missing 'device' (a string)"),
    (b'{"cmd":"pin","device":"sdz","policy":"bfq","for_s":' + b"9" * 5000 + b"}\n",
     "request", "malformed request"),
    (b'{"cmd":"pin","device":"sdz","policy":"bfq","for_s":Infinity}\n', "request",
     "Infinity is not a number JSON allows"),
    (b'{"cmd":"pin","device":"sdz","policy":"bfq","for_s":1e999}\n', "request",
     "bad duration 'inf': must be more than zero"),
    (b'{"cmd":"pin","device":"sdz","policy":"bfq","for_s":true}\n', "request",
     "for_s must be a number of seconds, got True"),
    (b'{"cmd":"history","limit":"5"}\n', "request",
     "limit must be a whole number from 1 to 100000, got '5'"),
    (b'{"cmd":"history","limit":100000000000000000000000}\n', "request",
     "limit must be a whole number from 1 to 100000, got 100000000000000000000000"),
    (b'{"cmd":"pin","device":"/dev/../../etc","policy":"deadline"}\n', "refused",
     "unknown device '../../etc'"),
    ('{"cmd":"ping"}'.encode("utf-16") + b"\n", "request", "not UTF-8 (byte 0)"),
])
def test_bad_requests_get_clear_errors_and_the_server_lives(api, line, kind, text, caplog):
    _, srv = api
    (r,) = raw(srv.path, line)
    assert r["ok"] is False and r["kind"] == kind and text in r["error"]
    assert call(srv.path, {"cmd": "ping"})["ok"]
    if kind == "request":   # the client's mistake: no traceback in the daemon's log
        assert not any(rec.exc_info for rec in caplog.records)


@pytest.mark.parametrize("data", [b"x" * (protocol.MAX_LINE * 3), b"x" * (10 << 20) + b"\n"],
                         ids=["192KiB", "10MB-with-newline"])
def test_huge_line_is_refused_not_buffered_forever(api, data):
    _, srv = api
    (r,) = raw(srv.path, data)
    assert r["ok"] is False and "longer than" in r["error"]
    assert call(srv.path, {"cmd": "ping"})["ok"]


PING = b'{"cmd":"ping"}'
BINARY = random.Random(11).randbytes(1 << 20)     # 1 MB; about 4,000 of its bytes are newlines


@pytest.mark.parametrize("data,answers", [
    (b"\n" * 1_000_000 + PING + b"\n", [True]),    # blank lines are skipped, not answered
    ((PING + b"\n") * 2000, [True] * 2000),
    (PING, [True]),                                 # the last request needs no newline
    (PING[:-1] + b',"pad":"' + b"x" * (protocol.MAX_LINE - 30 - 23) + b'"}\n', [True]),
    (BINARY, [False] * sum(1 for x in BINARY.split(b"\n") if x.strip())),
], ids=["1M-newlines", "2000-pings", "no-newline", "64KiB-30", "1MB-binary"])
def test_many_lines_on_one_connection_are_answered_line_by_line(api, data, answers, caplog):
    """Reliability 1.1: every non-blank line gets its own answer, in order, on the one
    connection; garbage lines are refused as the client's mistake, not logged as ours."""
    _, srv = api
    out = raw(srv.path, data, timeout=20)
    assert [o["ok"] for o in out] == answers
    assert all(o["result"] == {"pong": True} for o in out if o["ok"])
    assert all(o["kind"] == "request" for o in out if not o["ok"])
    assert not any(rec.exc_info for rec in caplog.records)
    assert call(srv.path, {"cmd": "ping"})["ok"]


# one request of every command that changes something (a KeyError for a new one)
CHANGES = {"pin": {"device": "sdz", "policy": "deadline"}, "unpin": {"device": "sdz"},
           "pause": {"device": "sdz"}, "resume": {"device": "sdz"},
           "goal": {"device": "sdz", "goal": "latency"}, "reload": {}}


@pytest.mark.parametrize("cmd", sorted(protocol.WRITE_COMMANDS))
def test_write_commands_need_root_or_the_group(cmd):
    d = StandIn()
    r = protocol.handle(d, {"cmd": cmd, **CHANGES[cmd]}, may_change=False,
                        who="uid 1234, pid 1")
    assert r == {"ok": False, "kind": "permission",
                 "error": f"permission denied: {cmd} changes the system and needs root or "
                          "the ioaz group (uid 1234, pid 1)"}
    assert d.calls == []
    assert protocol.handle(d, {"cmd": "status"}, may_change=False)["ok"]


def test_peer_rules():
    me = os.getpid()
    assert may_change(Peer(me, 0, 0), None)
    assert not may_change(Peer(me, 1234, 1234), None)
    assert may_change(Peer(me, 1234, 4321), 4321)
    assert not may_change(Peer(me, 1234, 1234), 4321)


def test_a_live_socket_is_not_stolen_and_a_stale_one_is_replaced(tmp_path):
    path = tmp_path / "s.sock"
    srv = server.start_api_server(StandIn(), path)
    try:
        with pytest.raises(RuntimeError, match="another ioazd"):
            server.start_api_server(StandIn(), path)
    finally:
        srv.close()
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()                        # the file stays, nobody listens
    srv = server.start_api_server(StandIn(), path)
    try:
        assert call(path, {"cmd": "ping"})["ok"]
    finally:
        srv.close()
    assert not path.exists()


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("30m", 1800), ("1h30m", 5400),
                                          ("2d", 172800), ("45", 45), ("0.5", 0.5)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "30x", "m30", "1h 30m", "-5", "0", "inf", "400d"])
def test_bad_durations(text):
    with pytest.raises(RequestError, match="bad duration"):
        parse_duration(text)


def test_ioazctl_against_the_socket(api, capsys):
    d, srv = api
    assert ioazctl.main(["status", "--socket", str(srv.path)]) == 0
    out = capsys.readouterr().out
    assert "DEVICE" in out and "sdz" in out and "8/random/read" in out
    assert ioazctl.main(["pin", "sdz", "deadline", "--for", "30m",
                         "--socket", str(srv.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["for_s"] == 1800
    assert ioazctl.main(["pin", "nope", "deadline", "--socket", str(srv.path)]) == 1
    assert "unknown device 'nope'" in capsys.readouterr().err
    assert ioazctl.main(["pin", "sdz", "deadline", "--for", "later",
                         "--socket", str(srv.path)]) == 2
    assert "bad duration 'later'" in capsys.readouterr().err
    assert ("pin", "sdz", "deadline", 1800.0) in d.calls


def test_ioazctl_without_a_daemon(tmp_path, capsys):
    assert ioazctl.main(["status", "--socket", str(tmp_path / "none.sock")]) == 1
    assert "no such socket" in capsys.readouterr().err
    with pytest.raises(ConnectError):
        call(tmp_path / "none.sock", {"cmd": "status"})


def test_matrix_validate_needs_no_daemon(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: matrix\ncells: 3\n")
    good = os.path.join(os.path.dirname(__file__), "..", "..", "decision_matrices",
                        "ioaz-table3-mean.yaml")
    assert ioazctl.main(["matrix", "validate", good]) == 0
    assert "OK" in capsys.readouterr().out
    assert ioazctl.main(["matrix", "validate", str(bad)]) == 1
    assert f"{bad}:" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["--json", "status", "--socket", "S"],
    ["status", "--json", "--socket", "S"],
    ["--socket", "S", "--json", "status"],
    ["--socket", "X", "status", "--socket", "S", "--json"],   # after the command wins
])
def test_global_options_before_or_after_the_command(argv):
    args = ioazctl.build_parser().parse_args(argv)
    assert (args.command, args.json, args.socket) == ("status", True, "S")


def test_version_and_defaults(capsys):
    from ioaz import __version__
    args = ioazctl.build_parser().parse_args(["status"])
    assert args.json is False and args.socket
    assert ioazctl.build_parser().parse_args(["--json", "observe"]).json is True
    with pytest.raises(SystemExit) as e:
        ioazctl.build_parser().parse_args(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"ioazctl {__version__}"
