"""Hostile scenarios of docs/reliability.md on a whole, real ioazd (the unit tests take the
parts apart): a flood of idle connections to the metrics port at systemd's default soft limit of
1024 descriptors (2.9), 16 connections trickling a byte every 4 s into the socket (2.7), a
managed, pinned loop device detached under the daemon and its name then given to another disk
(3.6, 2.2's identity), 50 devices detached at once (5.5) and kills timed around a pinned switch
(3.2)."""
from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from conftest import fio_args, need_tool
from ioaz.api import server
from test_ctl_daemon import BIN, active, start_ioazd, wait_for

pytestmark = [pytest.mark.root, pytest.mark.slow]

FLOOD = 2600     # the connections of the 2026-11-23 run


def _cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_connections_at_nofile_1024_blind_neither_the_windows_nor_root(make_loop, tmp_path):
    """2,600 idle TCP connections to the metrics port of an ioazd whose soft NOFILE is 1024
    (2026-11-23: 1,023 descriptors taken, every window failing with "Too many open files",
    root's status and pin timing out, 120% CPU). Now, during the flood: the windows go on
    with the probe up, root's status answers and its pin is applied, ioazd holds well under
    its limit and spends under half a CPU; after it, a scrape answers; at SIGTERM the disk
    gets its scheduler back."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < FLOOD + 200:
        pytest.skip(f"this process may hold at most {hard} descriptors, not {FLOOD}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, FLOOD + 200), hard))
    d = start_ioazd(make_loop, tmp_path, nofile=1024)
    original = d.found[d.dev]
    try:
        log = _flood(d)
    finally:
        d.stop()
    assert active(d.dev) == original
    assert "Traceback" not in log


def _flood(d) -> str:
    host, port = d.metrics_url.split("//")[1].split("/")[0].split(":")
    limits = Path(f"/proc/{d.proc.pid}/limits").read_text()
    assert [ln.split()[3] for ln in limits.splitlines() if ln.startswith("Max open files")] \
        == ["1024"]
    flood: list[socket.socket] = []
    try:
        w0 = d.ctl_json("status")["windows"]
        for _ in range(FLOOD):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex((host, int(port)))
            flood.append(s)
        cpu0, t0 = _cpu_s(d.proc.pid), time.monotonic()
        time.sleep(4)
        cpu_share = (_cpu_s(d.proc.pid) - cpu0) / (time.monotonic() - t0)
        fds = len(os.listdir(f"/proc/{d.proc.pid}/fd"))
        started = time.monotonic()
        st = d.ctl_json("status")
        status_s = time.monotonic() - started
        assert st["collector_up"] is True and st["windows"] >= w0 + 3, st
        assert status_s < 5, status_s
        r = d.ctl("pin", d.dev, "deadline")
        assert r.returncode == 0, r.stderr
        wait_for("root's pin to be applied during the flood",
                 lambda: active(d.dev) == "mq-deadline", 5)
        assert fds < 900, f"ioazd holds {fds} descriptors of its 1024"
        assert cpu_share < 0.5, f"ioazd spent {cpu_share:.2f} CPU-s a second during the flood"
        assert "Too many open files" not in d.log_text()
    finally:
        for s in flood:
            s.close()
    body = wait_for("a scrape after the flood", lambda: _scrape(d.metrics_url), 10)
    assert "ioaz_" in body
    return str(d.log_text())


def _scrape(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            return str(r.read().decode())
    except OSError:
        return None


SLOWLORIS = Path(__file__).with_name("slowloris.py")
TRICKLE_S = 22.0        # the report's shorter run was 20 s
TRICKLE_EVERY_S = 4.0   # inside the old timeout of 5 s a recv, which each byte started again


def test_connections_trickling_a_byte_every_4_s_lock_no_user_out(make_loop, tmp_path,
                                                                  unprivileged_user):
    """Slowloris (reliability 2.7) on a real ioazd with its real slots: an unprivileged user
    keeps 16 connections to the socket, each sending one byte every 4 s and opened again when
    the daemon drops it (2026-11-23: for 20 s and for 45 s every non-root client was told
    busy the whole time, root alone served). A request must now be whole within
    CLIENT_TIMEOUT_S, so each trickling connection is dropped by then and its slot freed.
    During 22 s of it: root's `ioazctl status` is answered every time; the user's own
    `status`, asked every 0.25 s, may be told busy, but never for longer than the deadline
    and a little; the daemon drops every trickling connection by its deadline; no
    traceback."""
    need_tool("runuser")
    d = start_ioazd(make_loop, tmp_path)
    n = max(16, server.MAX_CLIENTS)        # the report's 16; every slot, were there more
    script = d.dir / SLOWLORIS.name
    shutil.copy(SLOWLORIS, script)
    os.chmod(script, 0o644)
    as_user = ["runuser", "-u", unprivileged_user, "--", "/usr/bin/python3", str(script)]
    procs: list[subprocess.Popen] = []
    try:
        trickler = subprocess.Popen([*as_user, "trickle", str(d.socket), str(n), str(TRICKLE_S),
                                     str(TRICKLE_EVERY_S)], stdout=subprocess.PIPE, text=True)
        procs.append(trickler)
        assert trickler.stdout is not None and trickler.stdout.readline() == "ready\n"
        poller = subprocess.Popen([*as_user, "poll", str(d.socket), str(TRICKLE_S + 2), "0.25"],
                                  stdout=subprocess.PIPE, text=True)
        procs.append(poller)
        root = []
        while trickler.poll() is None:
            r = d.ctl("status", "--json")
            root.append(r.returncode == 0 and json.loads(r.stdout)["devices"] != [])
            time.sleep(0.5)
        conns = [json.loads(line) for line in trickler.communicate(timeout=10)[0].splitlines()]
        polls = [json.loads(line) for line in poller.communicate(timeout=30)[0].splitlines()]
        log = d.log_text()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        d.stop()
    bound = server.CLIENT_TIMEOUT_S + 2.0   # the deadline, the poll's step, a loaded machine
    held = [c for c in conns if not c["busy"]]
    lived = [c["closed"] - c["opened"] for c in held if c["closed"] is not None]
    stretches = _busy_stretches(polls)
    print(f"root: {sum(root)} of {len(root)} answered; the user: "
          f"{sum(p['kind'] == 'ok' for p in polls)} of {len(polls)} answered, the longest "
          f"stretch told busy {max(stretches, default=0):.2f} s; {len(held)} trickling "
          f"connections, the longest dropped after {max(lived, default=0):.2f} s")
    assert len(root) >= 10 and all(root), root
    assert {p["kind"] for p in polls} <= {"ok", "busy"}, polls
    assert stretches, "the user was never told busy: the trickle did not fill the slots"
    assert max(stretches) < bound, (stretches, polls)
    # the attack went on throughout: each connection dropped was opened again
    assert len(held) >= 2 * n, conns
    assert lived and max(lived) < server.CLIENT_TIMEOUT_S + 1.0, lived
    assert "Traceback" not in log


def _busy_stretches(polls: list[dict]) -> list[float]:
    """How long each run of `busy` answers lasted: from the first request told busy to the
    next one answered (or the last one's answer, if none was)."""
    out: list[float] = []
    since = None
    for p in polls:
        if p["kind"] == "busy" and since is None:
            since = p["t"]
        elif p["kind"] == "ok" and since is not None:
            out.append(p["t"] - since)
            since = None
    if since is not None:
        out.append(polls[-1]["t"] + polls[-1]["took"] - since)
    return out


def test_a_pinned_device_detached_is_dropped_and_its_name_on_another_disk_is_a_new_device(
        make_loop, tmp_path):
    """`losetup -d` of a pinned loop device while ioazd manages it and another (2026-11-23:
    survived, on an unpinned one). It is logged as vanished and leaves the status; the other
    device is still served (a pin on it is applied). The name then attached to another
    backing file is a new disk (a new diskseq): added as a new device, in auto, not the
    pinned one; until then the empty name is not managed. At SIGTERM the other device gets its
    scheduler back, and the log has no traceback."""
    other = make_loop(512)
    Path(f"/sys/block/{other}/queue/rotational").write_text("1")
    d = start_ioazd(make_loop, tmp_path, other)
    dev = d.dev
    original_other = d.found[other]
    backing = Path("/dev/shm") / f"ioaz-test-{uuid.uuid4().hex[:8]}.img"
    try:
        assert d.ctl("pin", dev, "deadline").returncode == 0
        wait_for("the pin", lambda: active(dev) == "mq-deadline", 5)
        subprocess.run(["losetup", "-d", f"/dev/{dev}"], check=True)
        wait_for("device_vanished", lambda: f'"device_vanished", "device": "{dev}"'
                 in d.log_text(), 8)
        names = [x["device"] for x in d.ctl_json("status")["devices"]]
        assert dev not in names and other in names, d.log_text()[-3000:]
        r = d.ctl("pin", other, "deadline")
        assert r.returncode == 0, r.stderr
        wait_for("the pin on the other device", lambda: active(other) == "mq-deadline", 5)
        # windows later, the empty name is still not taken for a disk (its new diskseq and
        # the scan's cached answer once made it "appear" again, with no medium)
        time.sleep(2.5)
        assert dev not in [x["device"] for x in d.ctl_json("status")["devices"]]
        with open(backing, "wb") as f:
            f.truncate(256 << 20)
        subprocess.run(["losetup", f"/dev/{dev}", str(backing)], check=True)
        wait_for("the new disk under the old name",
                 lambda: dev in [x["device"] for x in d.ctl_json("status")["devices"]], 8)
        assert d.device(dev)["mode"] == "auto"
        log = d.log_text()
    finally:
        d.stop()
        backing.unlink(missing_ok=True)
    assert active(other) == original_other
    assert "Traceback" not in log


def test_fifty_devices_detached_at_once_are_dropped_and_the_rest_served(make_loop, tmp_path):
    """Reliability 5.5: 50 of ioazd's 52 devices detached in one `losetup -d` (2026-11-23:
    survived, 50 `device_vanished` in 0.12 s). Each is logged as vanished once; the status
    then lists the two left, a pin on one of them is applied, and at SIGTERM it gets its
    scheduler back. No traceback."""
    keep = make_loop(256)
    Path(f"/sys/block/{keep}/queue/rotational").write_text("1")
    gone = [make_loop(16) for _ in range(50)]
    d = start_ioazd(make_loop, tmp_path, keep, *gone)
    original = d.found[keep]
    try:
        wait_for("52 devices managed", lambda: len(d.ctl_json("status")["devices"]) == 52, 10)
        t0 = time.monotonic()
        subprocess.run(["losetup", "-d", *(f"/dev/{g}" for g in gone)], check=True)
        wait_for("50 device_vanished",
                 lambda: d.log_text().count('"device_vanished"') >= 50, 15)
        print(f"50 devices detached: the last device_vanished {time.monotonic() - t0:.2f} s "
              "after losetup -d (polled every 0.2 s)")
        names = sorted(x["device"] for x in d.ctl_json("status")["devices"])
        assert names == sorted([d.dev, keep]), names
        r = d.ctl("pin", keep, "deadline")
        assert r.returncode == 0, r.stderr
        wait_for("the pin on a device left", lambda: active(keep) == "mq-deadline", 5)
        time.sleep(2)   # windows after: none of the 50 is logged again, none comes back
        log = d.log_text()
        assert log.count('"device_vanished"') == 50, log[-3000:]
        for g in gone:
            assert log.count(f'"device_vanished", "device": "{g}"') == 1, (g, log[-3000:])
        assert len(d.ctl_json("status")["devices"]) == 2
    finally:
        d.stop()
    assert active(keep) == original
    assert "Traceback" not in log


QUEUE_KEYS = ("scheduler", "nr_requests", "read_ahead_kb", "max_sectors_kb", "rotational")


def reads_done(dev: str) -> int:
    """Reads completed on `dev` so far (the stat file's first field)."""
    return int(Path(f"/sys/block/{dev}/stat").read_text().split()[0])


def _queue(dev: str) -> dict[str, str]:
    return {k: Path(f"/sys/block/{dev}/queue/{k}").read_text().strip() for k in QUEUE_KEYS}


@pytest.mark.parametrize("offset_ms", [-5, 0, 1, 2, 5, 10, 20, 40, 80, 120])
def test_a_kill_timed_around_a_pinned_switch_is_restored(make_loop, tmp_path, offset_ms):
    """SIGKILL from 5 ms before to 120 ms after root pins two disks to a scheduler each is not
    on, with 4 random readers on each, so the switches drain busy queues (2026-11-23: 30 of
    30 restored, one kill left a temporary state file behind for ever). Then what the unit's
    ExecStopPost runs, `ioazd --restore`: both disks' queues are as they were before ioazd
    started, whichever switch the kill interrupted, and no temporary file is left in the state
    directory."""
    devs = [make_loop(256), make_loop(256)]
    for dev in devs:
        queue = Path(f"/sys/block/{dev}/queue")
        (queue / "rotational").write_text("1")
        (queue / "scheduler").write_text("none")
    before = {dev: _queue(dev) for dev in devs}
    d = start_ioazd(lambda _size: devs[0], tmp_path, devs[1])
    pins = [[str(BIN / "ioazctl"), "pin", dev, "deadline", "--socket", str(d.socket)]
            for dev in devs]
    reads0 = {dev: reads_done(dev) for dev in devs}
    readers = [subprocess.Popen(fio_args(dev, rw="randread", jobs=4, seconds=30, size_mb=256),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for dev in devs]
    try:
        wait_for("the readers' first reads",
                 lambda: all(reads_done(dev) > reads0[dev] + 100 for dev in devs), 10)
        if offset_ms < 0:
            d.proc.kill()
            time.sleep(-offset_ms / 1000)
        asked = [subprocess.Popen(pin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for pin in pins]
        if offset_ms >= 0:
            time.sleep(offset_ms / 1000)
            d.proc.kill()
        d.proc.wait(10)
        for a in asked:
            a.wait(30)
        r = subprocess.run([str(BIN / "ioazd"), "--config", str(d.config), "--restore"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "Traceback" not in r.stdout + r.stderr
        assert {dev: _queue(dev) for dev in devs} == before
        state = d.dir / "state"
        left = [p.name for p in state.iterdir() if p.name.endswith(".tmp")] \
            if state.exists() else []
        assert left == []
        assert all(x.poll() is None for x in readers), \
            "the readers ended before the restore: not busy throughout"
    finally:
        for x in readers:
            x.kill()
            x.wait()
        d.stop()
