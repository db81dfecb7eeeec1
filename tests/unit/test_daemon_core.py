"""The daemon's window loop without a kernel: a fake probe, a fake sysfs tree, a fake actuator.

What an operator relies on: one device that fails does not stop the others; dry-run never
writes; a vanished device is dropped; a control call on an unknown device is a client error.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from fake_sysfs import FakeKernel
from ioaz.actuate.types import ActuationResult, QueueSettings
from ioaz.daemon import views
from ioaz.daemon.compose import build
from ioaz.daemon.config import load_config
from ioaz.daemon.core import ControlError
from ioaz.probe.layout import LAT_SLOTS
from ioaz.probe.snapshot import DeviceSnapshot

S = 1_000_000_000


def busy(name: str, t: float, n: int) -> DeviceSnapshot:
    """n random 4k writes per second from one process, since t=0."""
    k = int(n * t)
    lat = [0] * LAT_SLOTS
    lat[17] = k
    return DeviceSnapshot(name=name, major=7, minor=0, t_ns=int(t * S), source="bpf",
                          completed=[0, k, 0, 0, 0],
                          completed_bytes=[0, 4096 * k, 0, 0, 0], bios=k, bios_seq=0,
                          lat_sum_ns=k * 2**17, lat_hist=lat, procs={100: k})


class FakeSource:
    name = "bpf"

    def __init__(self, names):
        self.names, self.t = list(names), 0.0

    def read(self, names=None):
        self.t += 1.0
        return {n: busy(n, self.t, 500) for n in self.names}

    def close(self):
        pass


class Stoppable(FakeSource):
    """Busy until stop() is called; every window after that is idle."""

    stopped_at: float | None = None

    def stop(self):
        self.stopped_at = self.t

    def read(self, names=None):
        if self.stopped_at is None:
            return super().read(names)
        self.t += 1.0
        return {n: replace(busy(n, self.stopped_at, 500), t_ns=int(self.t * S))
                for n in self.names}


@dataclass
class FakeActuator:
    broken: set = field(default_factory=set)
    applied: list = field(default_factory=list)
    knobs: list = field(default_factory=list)
    last_written: dict = field(default_factory=dict)
    queues: list = field(default_factory=list)

    def check_drift(self, device, scheduler=None):
        return []

    def apply(self, device, realisation, queue=None):
        """What ioazd sets when it takes a disk (the queue settings, no switch)."""
        self.queues.append((device, realisation.scheduler, queue))
        return ActuationResult(device=device, scheduler_after=realisation.scheduler)

    def apply_tuned(self, device, realisation, features, queue=None, raid=False):
        if device in self.broken:
            raise OSError(5, f"{device}: I/O error")
        self.applied.append((device, realisation.scheduler))
        self.knobs.append((device, dict(realisation.knobs)))
        self.queues.append((device, realisation.scheduler, queue))
        return ActuationResult(device=device, switched=True, stall_s=0.01,
                               scheduler_after=realisation.scheduler)

    def restore_all(self):
        return []

    def stop_watching(self, device):
        pass

    def forget(self, device):
        pass


@pytest.fixture
def fake_sys(tmp_path):
    kernel = FakeKernel(tmp_path / "sys")
    kernel.add_device("sda", dev="8:0", rotational=True)
    kernel.add_device("sdb", dev="8:16", rotational=True)
    return kernel


BASE = ("devices: {include: ['sd*'], exclude: []}\n"
        "decide: {hysteresis_windows: 2, min_dwell_s: 0, cooldown_s: 0}\n")


def make(tmp_path, kernel, dry=False, extra=""):
    p = tmp_path / "ioaz.yaml"
    p.write_text(BASE + extra)
    cfg = load_config(p, dry_run=dry)
    act = FakeActuator()
    clock = iter(range(1000))
    return build(cfg, FakeSource(["sda", "sdb"]), act, kernel,
                 clock=lambda: float(next(clock))), act


def test_a_failing_device_does_not_stop_the_others(tmp_path, fake_sys):
    d, act = make(tmp_path, fake_sys)
    act.broken.add("sda")
    d.start()
    for _ in range(4):
        d.window()
    assert ("sdb", "mq-deadline") in act.applied        # 1/random/write -> deadline
    assert d.devices["sda"].errors >= 1 and "I/O error" in d.devices["sda"].last_error
    assert d.windows == 4


def test_a_window_out_of_descriptors_keeps_every_device_and_the_next_one_goes_on(
        tmp_path, fake_sys, caplog):
    """Reliability 2.9: on 2026-11-23 every window failed with EMFILE while the metrics port
    held the descriptors. A window that cannot read its facts says so (collector_up,
    collector_error, logged) and changes nothing; the daemon goes on, and decides again
    as soon as the probe reads."""
    import errno
    d, act = make(tmp_path, fake_sys)
    d.start()
    real = d.source.read

    def out_of_descriptors(names=None):
        raise OSError(errno.EMFILE, "Too many open files", "/sys/block")
    d.source.read = out_of_descriptors
    for _ in range(3):
        assert d.window() == []
    assert d.collector_up is False and "Too many open files" in d.collector_error
    assert any("collector_error" in r.getMessage() for r in caplog.records)
    assert set(d.devices) == {"sda", "sdb"} and act.applied == []
    d.source.read = real
    for _ in range(3):
        assert len(d.window()) == 2
    assert d.collector_up is True and d.collector_error is None and d.windows == 3
    assert ("sdb", "mq-deadline") in act.applied


def test_dry_run_decides_but_never_writes(tmp_path, fake_sys):
    d, act = make(tmp_path, fake_sys, dry=True)
    d.start()
    for _ in range(4):
        d.window()
    assert act.applied == []
    assert any(h["dry_run"] and h["to_scheduler"] == "mq-deadline" for h in d.history)


def test_a_vanished_device_is_dropped(tmp_path, fake_sys):
    d, _act = make(tmp_path, fake_sys)
    d.start()
    d.window()
    fake_sys.remove_device("sdb")
    d.source.names.remove("sdb")
    d.window()
    assert set(d.devices) == {"sda"}


def test_control_errors_name_the_bad_value(tmp_path, fake_sys):
    d, _ = make(tmp_path, fake_sys)
    d.start()
    with pytest.raises(ControlError, match="unknown device 'sdz'"):
        d.control_pin("sdz", "deadline", None)
    with pytest.raises(ControlError, match="unknown policy 'fastest'"):
        d.control_pin("sda", "fastest", None)
    with pytest.raises(ControlError, match="unknown goal 'speed'"):
        d.control_goal("sda", "speed")
    assert d.control_pin("sda", "cfq", 60)["mode"] == "pinned"


@pytest.mark.parametrize("req,kind,text", [
    ({"cmd": "pin", "device": "sda", "policy": "../../etc/passwd"}, "refused",
     "unknown policy '../../etc/passwd'"),
    ({"cmd": "pin", "device": "../../etc/passwd", "policy": "deadline"}, "refused",
     "unknown device '../../etc/passwd'"),
    ({"cmd": "pause", "device": "sda/../../../etc"}, "refused",
     "unknown device 'sda/../../../etc'"),
    ({"cmd": "explain", "device": "/dev/../../etc"}, "refused", "unknown device '../../etc'"),
    ({"cmd": "goal", "device": "sda", "goal": "../../etc/shadow"}, "refused",
     "unknown goal '../../etc/shadow'"),
    ({"cmd": "goal", "device": "sda", "goal": {"mean": 1}}, "request",
     "goal: missing 'goal' (a string)"),
], ids=["policy", "device", "device-below-a-name", "dev-prefix", "goal", "goal-a-dict"])
def test_names_like_paths_are_refused_and_touch_no_file(tmp_path, fake_sys, req, kind, text):
    """Reliability 1.1 and 2.5: the daemon itself behind the real socket. A name is looked up
    among the managed devices, the policies and the goals, never joined to a path: the
    request is refused by name, nothing under the (fake) sysfs changes, no device leaves
    auto."""
    from ioaz.api.client import call
    from ioaz.api.server import start_api_server
    d, act = make(tmp_path, fake_sys)
    d.start()
    tree = tmp_path / "sys"
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    srv = start_api_server(d, tmp_path / "s.sock")
    try:
        r = call(srv.path, req)
    finally:
        srv.close()
    assert r["ok"] is False and r["kind"] == kind and text in r["error"], r
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before
    assert act.applied == [] and {rec.state.mode.value for rec in d.devices.values()} == {"auto"}


def test_reload_says_what_waits_for_a_restart(tmp_path, fake_sys):
    d, _ = make(tmp_path, fake_sys)
    d.start()
    p = tmp_path / "ioaz.yaml"
    p.write_text(p.read_text() + f"socket: {tmp_path}/other.sock\nhistory: 7\n"
                 "thresholds: " + str(d.config.thresholds_file) + "\n")
    r = d.control_reload()
    assert set(r["not_applied"]) == {"socket", "history"}
    assert "takes a restart" in r["not_applied"]["socket"]
    assert d.config.socket != tmp_path / "other.sock"      # the running value stays
    assert d.config.history != 7
    assert d.control_reload()["not_applied"] == {"socket": r["not_applied"]["socket"],
                                                 "history": r["not_applied"]["history"]}


def test_a_reload_warns_of_a_knob_known_to_harm(tmp_path, fake_sys, caplog):
    """The same warning `ioazd --check` gives (daemon/hazards.py), at the new file's line; the
    reload goes ahead."""
    from ioaz.home import MATRICES
    d, _ = make(tmp_path, fake_sys)
    d.start()
    text = (MATRICES / "policies.yaml").read_text()
    bfq = "      - scheduler: bfq\n"
    at = text.index(bfq, text.index("  cfq:\n")) + len(bfq)
    policies = tmp_path / "policies.yaml"
    policies.write_text(text[:at] + "        knobs:\n          low_latency: 0\n" + text[at:])
    p = tmp_path / "ioaz.yaml"
    p.write_text(p.read_text().replace("decide: {", f"decide: {{policies: {policies}, ", 1))
    with caplog.at_level("WARNING", logger="ioaz.daemon"):
        d.control_reload()
    line = text[:at].count("\n") + 2
    assert any('"config_warning"' in r.getMessage()
               and f"{policies}:{line}: policy cfq: bfq low_latency=0" in r.getMessage()
               for r in caplog.records), caplog.text
    assert d.config.decide.policies is not None
    assert d.config.decide.policies.path == str(policies)


@pytest.mark.parametrize("before,after,key", [
    ("", "dry_run: true\n", "dry_run"),
    ("dry_run: true\n", "dry_run: false\n", "dry_run"),
    ("", "window_s: 0.5\n", "window_s"),
    ("", "metrics: {listen: '127.0.0.1:29999'}\n", "metrics_listen"),
    ("", "state_dir: TMP/elsewhere\n", "state_dir"),
    ("", "probe: diskstats\n", "probe"),
], ids=["dry_run-false-to-true", "dry_run-true-to-false", "window_s-0.5", "metrics.listen",
        "state_dir", "probe"])
def test_a_reload_keeps_what_was_built_at_start_and_says_so(tmp_path, fake_sys, before, after,
                                                           key):
    """Reliability R7 and R8: the report's dry_run false->true was applied and true->false
    silently kept, socket, metrics.listen and state_dir kept under the answer "reloaded", and
    window_s 0.5 applied. Each now waits for a restart, and the answer says so."""
    d, act = make(tmp_path, fake_sys, extra=before.replace("TMP", str(tmp_path)))
    d.start()
    running = getattr(d.config, key)
    (tmp_path / "ioaz.yaml").write_text(BASE + after.replace("TMP", str(tmp_path)))
    r = d.control_reload()
    assert list(r["not_applied"]) == [key], r
    assert r["not_applied"][key].endswith("(takes a restart)")
    assert getattr(d.config, key) == running
    for _ in range(3):
        d.window()
    assert bool(act.applied) is not d.config.dry_run      # the running dry_run still rules


def test_a_dry_run_from_the_command_line_outlasts_a_reload(tmp_path, fake_sys):
    d, act = make(tmp_path, fake_sys, dry=True, extra="dry_run: false\n")
    d.start()
    assert d.control_reload()["not_applied"] == {}
    for _ in range(3):
        d.window()
    assert d.config.dry_run and act.applied == []


@pytest.mark.parametrize("text,why", [
    ("window_s: [1,\n", ":2: YAML syntax error"),
    ("window_s: 1\nbogus: 1\n", ":2: unknown setting 'bogus'"),
    ("decide: {matrix_dir: /nonexistent/matrices}\n",
     ":1: decide.matrix_rules[0].matrices.min: matrix file not found"),
    (None, ":0: cannot read file: No such file or directory"),
], ids=["syntax-error", "unknown-key", "missing-matrix_dir", "config-deleted"])
def test_a_bad_reload_keeps_the_running_configuration(tmp_path, fake_sys, text, why):
    """Reliability R1: the file named with what is wrong; the old configuration stays and
    the windows go on deciding with it."""
    d, act = make(tmp_path, fake_sys)
    d.start()
    running = d.config
    p = tmp_path / "ioaz.yaml"
    if text is None:
        p.unlink()
    else:
        p.write_text(text)
    with pytest.raises(ControlError) as e:
        d.control_reload()
    assert str(e.value).startswith("reload rejected, old configuration kept:\n")
    assert f"{p}{why}" in str(e.value), e.value
    assert d.config is running
    for _ in range(4):
        d.window()
    assert ("sdb", "mq-deadline") in act.applied


def test_journal_lines_carry_their_priority():
    import logging

    from ioaz.daemon.main import JournalFormatter
    f = JournalFormatter("%(message)s")

    def line(level, msg):
        return f.format(logging.LogRecord("ioaz", level, "x", 1, msg, None, None))

    assert line(logging.WARNING, '{"event": "manual"}') == '<4>{"event": "manual"}'
    assert line(logging.ERROR, "a\nb") == "<3>a\n<3>b"    # every line of a traceback
    assert line(logging.INFO, "x") == "<6>x"


def test_systemd_notifications(tmp_path):
    """READY, WATCHDOG and STOPPING reach $NOTIFY_SOCKET as datagrams; the watchdog only when
    systemd asked for it; nothing at all outside systemd."""
    import socket as so

    from ioaz.daemon.notify import Notifier
    path = str(tmp_path / "notify")
    sink = so.socket(so.AF_UNIX, so.SOCK_DGRAM)
    sink.bind(path)
    sink.settimeout(2)
    try:
        n = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "30000000"})
        n.ready()
        n.alive()
        n.stopping()
        assert [sink.recv(100) for _ in range(3)] == [b"READY=1", b"WATCHDOG=1", b"STOPPING=1"]
        quiet = Notifier({"NOTIFY_SOCKET": path})
        quiet.alive()               # before READY=1: more time for the start, however long
        quiet.ready()               # the first window
        quiet.alive()               # no WatchdogSec: no WATCHDOG=1
        quiet.stopping()
        assert [sink.recv(100) for _ in range(3)] == [b"EXTEND_TIMEOUT_USEC=30000000",
                                                      b"READY=1", b"STOPPING=1"]
    finally:
        sink.close()
    assert Notifier({}).send("READY=1") is False
    gone = Notifier({"NOTIFY_SOCKET": path})       # the socket vanished: no exception
    assert gone.send("READY=1") is False and gone.failed


def test_a_matrix_rule_can_name_the_disk_model_udev_reports(tmp_path, fake_sys):
    """One matrix per disk model, whatever the disk is called: sda's udev data says a WD500,
    sdb's another model, and only sda gets the rule's matrix."""
    from ioaz.udevdb import UdevDb
    udev = tmp_path / "udev"
    udev.mkdir()
    (udev / "b8:0").write_text("S:disk/by-id/ata-WDC\nE:ID_MODEL=WDC_WD5000AAKS-00V1A0\n"
                               "E:ID_BUS=ata\nG:systemd\n")
    (udev / "b8:16").write_text("E:ID_MODEL=ST2000DM008-2FR102\nE:ID_BUS=ata\n")
    p = tmp_path / "ioaz.yaml"
    p.write_text("devices: {include: ['sd*'], exclude: []}\n"
                 "decide:\n  hysteresis_windows: 2\n  min_dwell_s: 0\n  cooldown_s: 0\n"
                 "  matrix_rules:\n"
                 "    - match: {udev: {ID_MODEL: 'WDC_WD5000*', ID_BUS: ata}}\n"
                 "      matrices: {mean: kernel/testbed-wd500-qd32-mean.yaml}\n"
                 "    - match: {rotational: true}\n"
                 "      matrices: {mean: ioaz-table3-mean.yaml}\n")
    cfg = load_config(p)
    clock = iter(range(1000))
    source = Stoppable(["sda", "sdb"])
    d = build(cfg, source, FakeActuator(), fake_sys,
              clock=lambda: float(next(clock)), udev=UdevDb(str(udev)))
    d.start()
    for _ in range(3):
        d.window()
    used = {n: Path(d.devices[n].decision.verdict.matrix).name for n in ("sda", "sdb")}
    assert used == {"sda": "testbed-wd500-qd32-mean.yaml", "sdb": "ioaz-table3-mean.yaml"}
    assert d.devices["sda"].state.info.udev_property("ID_MODEL") == "WDC_WD5000AAKS-00V1A0"
    # ioazctl explain says which rule chose the matrix
    import io

    from ioaz.cli.control import _format_explain
    r = d.explain("sda")
    assert r["decision"]["verdict"]["rule"] == "rule 1 (ID_BUS=ata, ID_MODEL=WDC_WD5000*)"
    text = io.StringIO()
    _format_explain(r, text)
    assert ("kernel/testbed-wd500-qd32-mean.yaml, chosen by rule 1 (ID_BUS=ata, "
            "ID_MODEL=WDC_WD5000*) of decide.matrix_rules") in text.getvalue()
    # and so it does when the last window was idle and judged nothing (no verdict)
    source.stop()
    d.window()
    r = d.explain("sda")
    assert r["decision"]["reason"] == "idle" and r["decision"]["verdict"] is None
    assert r["decided_by"]["rule"] == "rule 1 (ID_BUS=ata, ID_MODEL=WDC_WD5000*)"
    text = io.StringIO()
    _format_explain(r, text)
    assert "chosen by rule 1 (ID_BUS=ata, ID_MODEL=WDC_WD5000*)" in text.getvalue()
    text = io.StringIO()
    _format_explain(d.explain("sdb"), text)
    assert "ioaz-table3-mean.yaml, chosen by rule 2 (rotational=true)" in text.getvalue()


def test_a_matrix_s_tunables_go_with_its_scheduler_onto_the_disks_it_serves(tmp_path, fake_sys):
    """A matrix calibrated on a disk carries what was measured there for a scheduler (the stream
    curve); ioazd writes it when it sets that scheduler on a disk the matrix serves, and on
    no other disk."""
    from ioaz.decide.config import DEFAULT_MATRIX_DIR
    table3 = (DEFAULT_MATRIX_DIR / "ioaz-table3-mean.yaml").read_text()
    tuned = tmp_path / "tuned-mean.yaml"
    tuned.write_text(table3.replace("\ngoals:", "\ntunables:\n  mq-deadline: {fifo_batch: 4}\n"
                                    "  stream: {svc_min_us: 1088}\ngoals:", 1))
    p = tmp_path / "ioaz.yaml"
    p.write_text("devices: {include: ['sd*'], exclude: []}\n"
                 "decide:\n  hysteresis_windows: 2\n  min_dwell_s: 0\n  cooldown_s: 0\n"
                 "  matrix_rules:\n"
                 f"    - match: {{name: sda}}\n      matrices: {{mean: {tuned}}}\n"
                 "    - match: {rotational: true}\n"
                 "      matrices: {mean: ioaz-table3-mean.yaml}\n")
    cfg = load_config(p)
    act = FakeActuator()
    clock = iter(range(1000))
    d = build(cfg, FakeSource(["sda", "sdb"]), act, fake_sys, clock=lambda: float(next(clock)))
    d.start()
    for _ in range(3):
        d.window()
    # one random writer: deadline, realised as mq-deadline on both
    assert ("sda", "mq-deadline") in act.applied and ("sdb", "mq-deadline") in act.applied
    assert dict(act.knobs)["sda"] == {"fifo_batch": 4}
    assert dict(act.knobs)["sdb"] == {}
    # what `ioazctl advise` reports as ioazd's knobs comes from the same place
    assert d.knobs_for("sda", "mean", "stream", {}) == {"svc_min_us": 1088}
    assert d.knobs_for("sda", "mean", "stream", {"svc_min_us": 5}) == {"svc_min_us": 5}
    assert d.knobs_for("sdb", "mean", "stream", {}) == {}


def test_verbose_logs_each_window_so_a_late_switch_can_be_read_back(tmp_path, fake_sys, caplog):
    """`ioazd --verbose`: one debug line per device per window with the class, the cell, the
    verdict and why the daemon held, so the windows between a class change and its switch
    can be counted afterwards. Without it, only the switches."""
    import json
    import logging

    from ioaz.daemon.main import parse_args
    assert parse_args(["--verbose"]).verbose and not parse_args([]).verbose

    def run(level):
        caplog.clear()
        d, _ = make(tmp_path, fake_sys)
        d.start()
        with caplog.at_level(level, logger="ioaz.daemon"):
            for _ in range(3):
                d.window()
        return [json.loads(r.getMessage()) for r in caplog.records]
    quiet = run(logging.INFO)
    assert [x["event"] for x in quiet] == ["switch", "switch"]
    lines = [x for x in run(logging.DEBUG) if x["event"] == "window"]
    sdb = [x for x in lines if x["device"] == "sdb"]
    assert len(sdb) == 3 and len(lines) == 6
    assert all(x["verdict"] == "deadline" and x["cell"] == "1/random/write" for x in sdb)
    assert sdb[0]["class"]["pattern"] == "random" and sdb[0]["class"]["mode"] == "write"
    assert [x["action"] for x in sdb] == ["switch", "hold", "hold"]
    assert [x["policy"] for x in sdb] == ["deadline"] * 3
    assert "already in force" in sdb[2]["why"]
    # the window's own process count, beside the class's over its horizon
    assert all(isinstance(x["processes"], int) for x in sdb)
    # and the numbers the class and a model read, four significant digits
    f = sdb[0]["features"]
    assert set(f) == set(views.WINDOW_FEATURES) and f["read_ratio"] == 0.0 and f["iops"] > 0
    assert all(v == float(f"{v:.4g}") for v in f.values() if isinstance(v, float))


def one_disk(tmp_path, kernel, active: str, decide: str):
    """A started daemon serving one disk, sdc, found running `active`."""
    kernel.add_device("sdc", active=active, dev="8:32", rotational=True)
    p = tmp_path / "ioaz.yaml"
    p.write_text("devices: {include: ['sdc'], exclude: []}\n"
                 f"decide: {{hysteresis_windows: 2, {decide}}}\n")
    clock = iter(range(1000))
    d = build(load_config(p), FakeSource(["sdc"]), FakeActuator(), kernel,
              clock=lambda: float(next(clock)))
    d.start()
    return d


def test_a_verdict_the_running_scheduler_already_realises_starts_no_dwell(tmp_path, fake_sys):
    """On the testbed's kernel (2026-11-26) the first window after ioazd started read udev's
    probe of the disk (one process, random reads: `deadline`), which ioazd took at once for
    the mq-deadline it found; nothing on the disk changed, but the dwell clock started, and
    the real workload's stream waited 5 s for it. Now such a policy change keeps the clocks:
    the device is still under no dwell limit and no cooldown, and its switches budget is
    untouched."""
    d = one_disk(tmp_path, fake_sys, "mq-deadline", "min_dwell_s: 30, cooldown_s: 5")
    (first,) = d.window()
    assert first.action == "switch" and first.policy == "deadline"   # 1/random/write
    st = d.devices["sdc"].state
    assert st.policy == "deadline"
    assert st.since is None and st.last_switch is None and st.switches == ()
    (nxt,) = d.window()
    assert nxt.reason != "cooldown" and "already in force" in nxt.text


def test_the_scheduler_found_running_is_known_to_decide_until_ioaz_chooses(tmp_path, fake_sys):
    """decide's within-noise rule keeps the scheduler found running (damping._found_realises):
    the daemon tells it which one that is, and stops once a policy of ioaz's is in force."""
    d = one_disk(tmp_path, fake_sys, "bfq", "min_dwell_s: 0, cooldown_s: 0")
    assert d.devices["sdc"].state.found == "bfq"
    (first,) = d.window()
    assert first.action == "switch" and first.policy == "deadline", first.text  # 1/random/write
    d.window()
    st = d.devices["sdc"].state
    assert st.policy == "deadline" and st.found is None


def test_a_rotating_disk_gets_writeback_throttling_off_when_ioazd_takes_it(tmp_path, fake_sys):
    """At start, under the scheduler found (no switch), and again with every switch; never in
    a dry run, nor with writeback_throttling: kernel, nor for the latency goal."""
    d, act = make(tmp_path, fake_sys)
    d.start()
    off = QueueSettings(wbt_lat_usec=0)
    assert act.queues == [("sda", "none", off), ("sdb", "none", off)]
    for _ in range(4):
        d.window()
    assert ("sdb", "mq-deadline", off) in act.queues
    latency = BASE.replace("cooldown_s: 0}", "cooldown_s: 0, goal: latency}")
    for dry, text in ((True, BASE), (False, BASE + "writeback_throttling: kernel\n"),
                      (False, latency)):
        p = tmp_path / "ioaz.yaml"
        p.write_text(text)
        other = FakeActuator()
        build(load_config(p, dry_run=dry), FakeSource(["sda", "sdb"]), other, fake_sys).start()
        assert other.queues == [], (dry, text)


def test_a_wait_longer_than_the_watchdog_sends_signs_of_life():
    """A rest window (or a window_s) longer than WatchdogSec: the wait between two windows
    sends WATCHDOG=1 every half of it, or systemd would restart a daemon that is only
    resting; without a watchdog nothing is sent."""
    import threading
    import time

    from ioaz.daemon.notify import Notifier
    from ioaz.daemon.rest import Rest
    n = Notifier({"NOTIFY_SOCKET": "/nonexistent", "WATCHDOG_USEC": "200000"})
    assert n.every_s == pytest.approx(0.1)
    # without a watchdog, every 15 s until READY=1 (EXTEND_TIMEOUT_USEC); outside systemd never
    assert Notifier({"NOTIFY_SOCKET": "/nonexistent"}).every_s == pytest.approx(15)
    assert Notifier({"WATCHDOG_USEC": "200000"}).every_s is None
    beats: list[float] = []
    rest = Rest(window_s=0.55, rest_window_s=0)
    t0 = time.monotonic()
    ended = rest.wait(threading.Event(), t0, None, (lambda: beats.append(time.monotonic()), 0.1))
    assert ended == pytest.approx(t0 + 0.55)
    gaps = [b - a for a, b in zip([t0, *beats], beats, strict=False)]
    assert len(beats) >= 5 and max(gaps) < 0.2, gaps
