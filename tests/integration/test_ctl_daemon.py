"""ioazctl against a real ioazd: a real process on a real loop device, driven by real fio.

The loop device is marked rotational so the IOAZ tables apply (goal mean, Table 3):
one sequential reader -> fcfs (`none`), eight random readers ->
anticipatory (bfq). Damping is shortened (hysteresis 2 windows, dwell 2 s) to keep this quick.
The RunningIoazd helper is shared with test_prometheus_scrape.py.
"""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket as so
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, fio_args, need_root, need_schedulers, need_tool

BIN = Path(sys.executable).parent
SIZE_MB = 1024
pytestmark = [pytest.mark.root, pytest.mark.slow]


def active(dev: str) -> str:
    line = Path(f"/sys/block/{dev}/queue/scheduler").read_text()
    return line.split("[")[1].split("]")[0]


def wait_for(what: str, pred, timeout: float, step: float = 0.2):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


class RunningIoazd:
    """ioazd on loop devices (the first is `dev`), its socket in a directory every user can
    traverse."""

    def __init__(self, devs: list[str], matrix_dir: Path, metrics_detail: str = "basic",
                 nofile: int | None = None):
        self.dev = devs[0]
        # /tmp/pytest-of-root is 0700: the unprivileged-user test needs a reachable socket.
        self.dir = Path(tempfile.mkdtemp(prefix="ioaz-ctl-"))
        os.chmod(self.dir, 0o755)
        self.socket = self.dir / "ioaz.sock"
        self.config = self.dir / "ioaz.yaml"
        self.matrix_dir = matrix_dir
        # each disk's scheduler before ioazd took it, which SIGTERM must give back (ioazd's
        # idle policy puts a quiet disk that spins on bfq at start)
        self.found = {d: active(d) for d in devs}
        self.config.write_text(yaml.safe_dump({
            "window_s": 1.0, "probe": "bpf",
            "devices": {"include": devs, "exclude": []},
            "thresholds": str(REPO / "decision_matrices" / "thresholds.yaml"),
            "state_dir": str(self.dir / "state"), "socket": str(self.socket),
            "metrics": {"listen": "127.0.0.1:0", "detail": metrics_detail},
            "decide": {"goal": "mean", "matrix_dir": str(matrix_dir),
                       "hysteresis_windows": 2, "min_dwell_s": 2, "cooldown_s": 1}}))
        self.log = open(self.dir / "ioazd.log", "w+")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen([str(BIN / "ioazd"), "--config", str(self.config)],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=(lambda: _soft_nofile(nofile)) if nofile
                                     else None)
        port = wait_for("ioazd to serve metrics and its socket", self._started, 15)
        self.metrics_url = f"http://127.0.0.1:{port}/metrics"

    def _started(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"ioazd exited {self.proc.returncode}:\n{self.log_text()}")
        m = re.search(r'"event": "metrics", "listen": "127\.0\.0\.1:(\d+)"', self.log_text())
        return m and self.socket.exists() and int(m.group(1))

    def log_text(self) -> str:
        return (self.dir / "ioazd.log").read_text()

    def ctl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "ioazctl"), *args, "--socket", str(self.socket)],
                              capture_output=True, text=True, timeout=30, check=False)

    def ctl_json(self, *args: str):
        r = self.ctl(*args, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def device(self, name: str | None = None) -> dict:
        name = name or self.dev
        (d,) = [d for d in self.ctl_json("status")["devices"] if d["device"] == name]
        return d

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _soft_nofile(n: int) -> None:
    """In the child before exec: the soft descriptor limit systemd gives a service that sets
    no LimitNOFILE (1024), the hard one left as it is."""
    import resource
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def start_ioazd(make_loop, tmp_path: Path, *more: str,
                metrics_detail: str = "basic", nofile: int | None = None) -> RunningIoazd:
    need_root()
    need_tool("fio")
    dev = make_loop(SIZE_MB)
    Path(f"/sys/block/{dev}/queue/rotational").write_text("1")
    matrices = tmp_path / "matrices"
    shutil.copytree(REPO / "decision_matrices", matrices)
    return RunningIoazd([dev, *more], matrices, metrics_detail, nofile)


@pytest.fixture
def ioazd(make_loop, tmp_path):
    d = start_ioazd(make_loop, tmp_path)
    yield d
    d.stop()


def fio_bg(dev: str, rw: str, jobs: int, seconds: float) -> subprocess.Popen:
    return subprocess.Popen(fio_args(dev, rw=rw, jobs=jobs, seconds=seconds, size_mb=SIZE_MB),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_pin_overrides_the_matrix_and_expires_on_time(ioazd):
    dev = ioazd.dev
    fio = fio_bg(dev, "read", 1, 14)      # the matrix says fcfs (none) for this
    try:
        wait_for("the matrix to choose fcfs", lambda: ioazd.device()["policy"] == "fcfs", 6)
        r = ioazd.ctl("pin", dev, "deadline", "--for", "4s")
        t_pin = time.monotonic()
        assert r.returncode == 0, r.stderr
        assert "pinned" in r.stdout and "deadline" in r.stdout
        wait_for("the pin to take effect", lambda: active(dev) == "mq-deadline", 3)
        d = ioazd.device()
        assert d["mode"] == "pinned" and d["pin"]["policy"] == "deadline"
        assert 0 < d["pin"]["remaining_s"] <= 4
        # Expiry: back to the matrix, which puts fcfs (none) back for the same workload.
        wait_for("the pin to expire", lambda: ioazd.device()["mode"] == "auto", 7)
        expired_after = time.monotonic() - t_pin
        assert 3.5 <= expired_after <= 6.5, expired_after
        wait_for("the matrix's choice to return", lambda: active(dev) == "none", 6)
        reasons = [h["reason"] for h in ioazd.ctl_json("history", "--device", dev)]
        assert "pin" in reasons
    finally:
        fio.kill()
        fio.wait()


def test_unpin_returns_to_auto_and_bad_requests_are_refused(ioazd):
    dev = ioazd.dev
    assert ioazd.ctl("pin", dev, "latency-ish").returncode == 1
    r = ioazd.ctl("pin", dev, "kyber")
    assert r.returncode == 0 and "until unpinned" in r.stdout
    wait_for("kyber", lambda: active(dev) == "kyber", 3)
    assert ioazd.device()["pin"] == {"policy": "kyber", "remaining_s": None}
    r = ioazd.ctl("unpin", dev)
    assert r.returncode == 0 and ioazd.device()["mode"] == "auto"
    assert ioazd.device()["pin"] is None

    r = ioazd.ctl("pin", "nosuchdisk", "deadline")
    assert r.returncode == 1 and f"unknown device 'nosuchdisk' (managed: {dev})" in r.stderr
    r = ioazd.ctl("pin", dev, "warp")
    assert r.returncode == 1 and "unknown policy 'warp'" in r.stderr
    r = ioazd.ctl("pin", dev, "deadline", "--for", "30 minutes")
    assert r.returncode == 2 and "bad duration '30 minutes'" in r.stderr
    r = ioazd.ctl("goal", dev, "speed")
    assert r.returncode == 1 and "unknown goal 'speed'" in r.stderr
    # names are looked up, never joined to a path (reliability 2.5)
    r = ioazd.ctl("pin", "../../etc/passwd", "deadline")
    assert r.returncode == 1 and "unknown device '../../etc/passwd'" in r.stderr
    r = ioazd.ctl("pin", dev, "../../etc/passwd")
    assert r.returncode == 1 and "unknown policy '../../etc/passwd'" in r.stderr
    assert ioazd.device()["mode"] == "auto"
    assert ioazd.ctl("goal", dev, "throughput").returncode == 0
    # Garbage on the socket does not hurt the daemon.
    with so.socket(so.AF_UNIX) as s:
        s.connect(str(ioazd.socket))
        s.sendall(b"\x00{{{ not json\n")
        assert b'"ok":false' in s.recv(4096)
    assert ioazd.ctl("status").returncode == 0 and ioazd.proc.poll() is None


def test_pause_holds_the_scheduler_and_resume_lets_ioaz_decide(ioazd):
    dev = ioazd.dev
    need_schedulers(dev, "bfq")   # what the readers' cell wants after resume
    before = active(dev)
    r = ioazd.ctl("pause", dev)
    assert r.returncode == 0 and "paused" in r.stdout
    fio = fio_bg(dev, "randread", 8, 12)   # the matrix would say anticipatory (bfq)
    try:
        time.sleep(4)
        d = ioazd.device()
        assert d["mode"] == "paused" and active(dev) == before
        # psync readers wait for each request: shallow; 4 KiB each: small
        assert d["class"] == {"processes": "8", "pattern": "random", "mode": "read",
                              "depth": "shallow", "size": "small"}
        assert ioazd.ctl("resume", dev).returncode == 0
        wait_for("bfq after resume", lambda: active(dev) == "bfq", 6)
        assert ioazd.device()["mode"] == "auto"
        # the window right after a switch is the cooldown's, with no verdict: each explain
        # (JSON, then the human one, a window may pass between) waits for a judged window
        ex = wait_for("a judged window after the switch", lambda: (
            e if (e := ioazd.ctl_json("explain", dev))["decision"]["verdict"] else None), 4)
        assert ex["decision"]["verdict"]["policy"] == "anticipatory"
        human = wait_for("explain of a judged window", lambda: (
            o if "(cooldown)" not in (o := ioazd.ctl("explain", dev).stdout) else None), 4)
        assert "8/random/read" in human and "ioaz-table3-mean" in human
    finally:
        fio.kill()
        fio.wait()


def test_reload_with_a_broken_matrix_keeps_the_old_one(ioazd):
    need_schedulers(ioazd.dev, "bfq")   # the old table's policy for the readers
    table = ioazd.matrix_dir / "ioaz-table3-mean.yaml"
    good = table.read_text()
    table.write_text(good.replace("kind: matrix", "kind: matrix\nbogus_key: 1", 1))
    windows = ioazd.ctl_json("status")["windows"]
    r = ioazd.ctl("reload")
    assert r.returncode == 1
    assert "reload rejected, old configuration kept" in r.stderr
    assert f"{table}:" in r.stderr          # FILE:LINE of what is wrong
    # The daemon keeps deciding with the old matrices.
    wait_for("more windows", lambda: ioazd.ctl_json("status")["windows"] > windows + 1, 5)
    fio = fio_bg(ioazd.dev, "randread", 8, 8)
    try:
        wait_for("bfq from the old table", lambda: active(ioazd.dev) == "bfq", 7)
    finally:
        fio.kill()
        fio.wait()
    table.write_text(good)
    r = ioazd.ctl("reload")
    assert r.returncode == 0 and f"reloaded {ioazd.config}" in r.stdout


CLIENT = """import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\\n")
print(s.makefile().readline(), end="")
"""


def test_unprivileged_user_reads_but_may_not_change(ioazd, unprivileged_user):
    need_tool("setpriv")
    need_tool("newgidmap")      # unshare --map-groups=auto maps the user's subordinate gids
    user = unprivileged_user
    script = ioazd.dir / "client.py"
    script.write_text(CLIENT)
    os.chmod(script, 0o644)
    made_group = False
    try:
        def as_user(req: dict, *wrap: str, prefix: tuple[str, ...] = ()) -> dict:
            r = subprocess.run([*(prefix or ("runuser", "-u", user, "--")), *wrap,
                                "/usr/bin/python3", str(script), str(ioazd.socket),
                                json.dumps(req)],
                               capture_output=True, text=True, timeout=20, check=False)
            assert r.returncode == 0, r.stderr
            return json.loads(r.stdout)

        def refused(r: dict) -> bool:
            return r["ok"] is False and r["error"].startswith("permission denied")

        st = as_user({"cmd": "status"})
        assert st["ok"] and st["result"]["devices"][0]["device"] == ioazd.dev
        assert as_user({"cmd": "explain", "device": ioazd.dev})["ok"]
        assert as_user({"cmd": "history"})["ok"]
        assert as_user({"cmd": "ping"})["result"] == {"pong": True}
        # every command that changes something (reliability 2.2)
        for req in ({"cmd": "pin", "policy": "deadline"}, {"cmd": "unpin"}, {"cmd": "pause"},
                    {"cmd": "resume"}, {"cmd": "goal", "goal": "latency"}, {"cmd": "reload"}):
            assert refused(as_user({**req, "device": ioazd.dev})), req
        # root in a user namespace of its own is still the user to ioazd: the kernel hands
        # the socket the credentials as the daemon's namespace sees them (reliability 2.3),
        # also with the user's subordinate gids (/etc/subgid) mapped into it
        mapped = subprocess.run(["runuser", "-u", user, "--", "unshare", "-r",
                                 "--map-groups=auto", "cat", "/proc/self/gid_map"],
                                capture_output=True, text=True, check=False)
        assert mapped.returncode == 0 and len(mapped.stdout.splitlines()) == 2, mapped
        for wrap in (("unshare", "-r"), ("unshare", "-r", "--map-groups=auto"),
                     ("unshare", "-rpf", "--mount-proc")):
            r = as_user({"cmd": "pin", "device": ioazd.dev, "policy": "deadline"}, *wrap)
            assert refused(r), (wrap, r)
        d = ioazd.device()
        assert d["mode"] == "auto" and d["goal"] != "latency"
        # A member of group ioaz may change things (the group is looked up per request).
        group = subprocess.run(["getent", "group", "ioaz"], capture_output=True, check=False)
        if group.returncode != 0:
            subprocess.run(["groupadd", "--system", "ioaz"], check=True)
            made_group = True
        subprocess.run(["usermod", "-aG", "ioaz", user], check=True)
        r = as_user({"cmd": "pin", "device": ioazd.dev, "policy": "deadline", "for": "5s"})
        assert r["ok"], r
        assert ioazd.device()["mode"] == "pinned"
        assert as_user({"cmd": "pause", "device": ioazd.dev})["ok"]
        assert as_user({"cmd": "resume", "device": ioazd.dev})["ok"]
        assert ioazd.device()["mode"] == "auto"
        # the same uid without its supplementary groups is no member (reliability 2.4)
        pw = pwd.getpwnam(user)
        r = as_user({"cmd": "pause", "device": ioazd.dev},
                    prefix=("setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}",
                            "--clear-groups"))
        assert refused(r), r
        assert ioazd.device()["mode"] == "auto"
    finally:
        if made_group:
            subprocess.run(["groupdel", "ioaz"], capture_output=True, check=False)
