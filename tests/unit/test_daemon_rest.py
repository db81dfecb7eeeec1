"""ioazd's rest (daemon/rest.py): a longer window while every device is calm.

What an operator relies on: the daemon lengthens its window only when nothing is under way on
any device (no switch being confirmed, no trial running or still wanted), goes back to its
ordinary window at the first window that is not calm and at any ioazctl command, and a rest
window changes neither the class's process horizon in seconds nor what a trial measures.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
from ioaz.classify.horizon import ProcessHorizon
from ioaz.daemon.config import ConfigError, load_config
from ioaz.daemon.rest import AFTER_PULSE, CALM_WINDOWS, Pulse, Rest, read_diskstats
from ioaz.decide import after_rest_window, initial_state, pin, step
from ioaz.decide.reasons import Reason
from metrics_standin import fake_daemon, record
from test_daemon_core import BASE, fake_sys, make  # noqa: F401  (fake_sys: a fixture)
from test_decide_trial import CFG, HDD, feats, provider, run
from test_metrics_collector import scrape, val

# -- the rest itself ------------------------------------------------------------------------


def test_rest_comes_after_calm_windows_and_ends_at_the_first_that_is_not():
    r = Rest(1.0, 4.0)
    for _ in range(CALM_WINDOWS - 1):
        r.observe([True, True])
    assert not r.resting and r.next_window_s() == 1.0
    r.observe([True, True])
    assert r.resting and r.next_window_s() == 4.0
    r.observe([True, False])             # one device is not calm: every device's window
    assert not r.resting and r.next_window_s() == 1.0
    for _ in range(CALM_WINDOWS):
        r.observe([True])
    r.observe([True], complete=False)    # a device failed, or the probe could not be read
    assert not r.resting


def test_a_command_ends_the_rest_and_wakes_the_waiting_loop():
    r = Rest(1.0, 30.0)
    for _ in range(CALM_WINDOWS):
        r.observe([])                     # no devices at all: nothing to hurry for
    assert r.resting
    stop = threading.Event()
    began = time.monotonic()
    threading.Timer(0.2, r.disturb).start()
    ended = r.wait(stop, began)
    # the 30 s rest was cut to an ordinary window from its start
    assert ended == pytest.approx(began + 1.0)
    assert time.monotonic() - began < 5
    assert not r.resting


def test_stop_ends_the_wait():
    r = Rest(1.0, 30.0)
    for _ in range(CALM_WINDOWS):
        r.observe([])
    stop = threading.Event()

    def stopping():
        stop.set()
        r.woken.set()
    threading.Timer(0.1, stopping).start()
    t0 = time.monotonic()
    assert r.wait(stop, t0) is None
    assert time.monotonic() - t0 < 5


def diskstats(path, **disks):
    """A /proc/diskstats of these disks: name=(reads, writes, sectors read, sectors written),
    with a partition and another disk around them as the kernel lists them."""
    lines = ["   7       0 loop0 5 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0"]
    for i, (name, (r, w, rs, ws)) in enumerate(disks.items()):
        lines.append(f"   8      {16 * i} {name} {r} 3 {rs} 40 {w} 2 {ws} 50 0 90 90 "
                     "0 0 0 0 0 0")
        lines.append(f"   8      {16 * i + 1} {name}1 1 0 2 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
    path.write_text("\n".join(lines) + "\n")


class Seconds:
    """sda's /proc/diskstats one second at a time, read by a Pulse on the same clock."""

    def __init__(self, path):
        self.path, self.t, self.st = path, [0.0], [0, 0, 0, 0]
        self.pulse = Pulse(str(path), clock=lambda: self.t[0])

    def __call__(self, reads, writes, kib_each):
        """One second of `reads` and `writes` of kib_each KiB: what the pulse says then."""
        st = self.st
        st[0] += reads
        st[1] += writes
        st[2] += reads * kib_each * 2
        st[3] += writes * kib_each * 2
        self.t[0] += 1.0
        diskstats(self.path, sda=tuple(st))
        return self.pulse.moved(["sda"])


def test_the_pulse_reads_only_the_managed_disks(tmp_path):
    f = tmp_path / "diskstats"
    diskstats(f, sda=(100, 50, 800, 400), sdb=(1, 2, 3, 4))
    assert read_diskstats(str(f), {"sda"}) == {"sda": (150, 100, 1200 * 512)}
    assert read_diskstats(str(f), {"sdz"}) == {}


def test_the_pulse_wakes_on_a_new_pace_and_not_on_a_steady_one(tmp_path):
    """Against the calm windows' rates: one second off them is a swing, two in a row the same
    way a new workload."""
    second = Seconds(tmp_path / "diskstats")
    pulse = second.pulse
    pulse.calm_window({"sda": (100.0, 1.0, 100 * 128 * 1024.0)})  # 100 reads of 128 KiB a s

    assert second(0, 0, 4) is None            # the first reading: nothing to compare
    assert second(100, 0, 128) is None
    assert second(250, 0, 128) is None        # 2.5 times the window's, once: a swing
    assert second(45, 0, 128) is None         # under half, once: the other way
    assert second(110, 0, 128) is None
    assert second(95, 0, 4) is None           # as many requests, a 32nd of the bytes ...
    assert second(95, 0, 4) == ("sda: bytes a second 3.891e+05 against 1.311e+07 in the "
                                "calm windows in two readings")             # ... twice
    assert second(50, 50, 128) is None
    assert second(50, 50, 128) == ("sda: a share of reads 0.50 against 1.00 in the calm "
                                   "windows in two readings")
    pulse.unsettled()                         # a window that was not calm, then an idle one
    pulse.calm_window({"sda": (0.0, 0.0, 0.0)})
    assert second(0, 0, 4) is None            # idle and idle
    assert second(3, 2, 4) is None            # a trickle under PULSE_MIN_OPS
    assert second(400, 0, 4) is None
    assert second(400, 0, 4).startswith("sda: requests a second 400 against 0 ")
    pulse.forget()
    assert second(400, 0, 4) is None          # a new rest takes its own first reading


def test_a_swing_the_calm_windows_saw_does_not_wake_the_rest_again(tmp_path):
    """S's readers under bfq: 247 requests a second, a dip to about 100 for two seconds that
    woke the rest, and the readers back. The dip's windows were calm, so neither the dip nor the
    way back wakes the next rest; four times the busiest calm window still does."""
    f = tmp_path / "diskstats"
    t = [0.0]
    pulse = Pulse(str(f), clock=lambda: t[0])
    n = [0]
    mib = 1024 * 1024.0

    def second(reqs):
        n[0] += reqs
        t[0] += 1.0
        diskstats(f, sda=(n[0], 0, n[0] * 256, 0))   # 128 KiB reads
        return pulse.moved(["sda"])

    for ops in (247.0, 251.0, 239.0):
        pulse.calm_window({"sda": (ops, 1.0, ops * 0.125 * mib)})
    assert second(250) is None
    assert second(102) is None
    assert second(100) == ("sda: requests a second 100 against 239 in the calm windows "
                           "in two readings")
    pulse.forget()                            # the wake's windows, calm: the same workload
    for ops in (101.0, 180.0, 244.0):
        pulse.calm_window({"sda": (ops, 1.0, ops * 0.125 * mib)})
    assert [second(x) for x in (102, 98, 259, 262, 101, 97, 250)] == [None] * 7
    assert second(1000) is None
    assert second(1000) == ("sda: requests a second 1000 against 251 in the calm windows "
                            "in two readings")


def test_the_calm_windows_of_another_workload_are_no_reference(tmp_path):
    """The phases mix (ninety-ninth run): sixteen random 4 KiB readers, then one writer of
    128 KiB, both calm under their policies. Their windows together span every pace the next
    phase's four sequential readers show, so against both the readers never woke the rest;
    once the writer's class has held two windows, the writer's windows alone are the
    reference, and the readers' pace wakes the rest in two readings. One window of
    another class is a flicker: the envelope stays."""
    second = Seconds(tmp_path / "diskstats")
    pulse = second.pulse
    mib = 1024 * 1024.0

    rand, write = "16+/random/read/shallow", "1/sequential/write/deep"
    for _ in range(3):
        pulse.calm_window({"sda": (118.0, 1.0, 0.5 * mib)}, {"sda": rand})
    pulse.calm_window({"sda": (116.0, 0.37, 38.6 * mib)}, {"sda": "1/sequential/write/shallow"})
    pulse.calm_window({"sda": (151.0, 0.0, 79.1 * mib)}, {"sda": write})
    # one window of the writer's class: a flicker so far, the random readers' pace still
    # known, and the sequential readers' within what every calm window spans
    assert second(0, 0, 128) is None
    assert [second(118, 0, 4) for _ in range(3)] == [None] * 3
    assert [second(190, 0, 128) for _ in range(3)] == [None] * 3
    pulse.forget()
    pulse.calm_window({"sda": (154.0, 0.0, 81.5 * mib)}, {"sda": write})   # two: the writer's
    pulse.calm_window({"sda": (152.0, 0.0, 80.5 * mib)}, {"sda": write})
    assert second(0, 152, 512) is None
    assert second(0, 155, 512) is None
    assert second(190, 0, 128) is None          # four sequential readers under mq-deadline
    assert second(190, 0, 128) == ("sda: bytes a second 2.49e+07 against 8.294e+07 in the "
                                   "calm windows in two readings")


def test_a_workload_that_starts_in_a_rest_is_seen_against_the_calm_windows(tmp_path):
    f = tmp_path / "diskstats"
    t = [0.0]
    pulse = Pulse(str(f), clock=lambda: t[0])
    pulse.calm_window({"sda": (0.0, 0.0, 0.0)})
    counts = [(0, 0, 0, 0), (400, 0, 3200, 0), (800, 0, 6400, 0)]
    seen = []
    for i, c in enumerate(counts):
        t[0] = float(i)
        diskstats(f, sda=c)
        seen.append(pulse.moved(["sda"]))
    assert seen[:2] == [None, None]
    assert seen[2] == "sda: requests a second 400 against 0 in the calm windows in two readings"
    # the same seconds against windows that saw this workload already: nothing moved
    pulse.forget()
    pulse.unsettled()
    pulse.calm_window({"sda": (380.0, 1.0, 1.6e6)})
    for i, c in enumerate(counts):
        t[0] = 10.0 + i
        diskstats(f, sda=c)
        assert pulse.moved(["sda"]) is None


def test_an_unreadable_diskstats_never_ends_a_rest(tmp_path):
    pulse = Pulse(str(tmp_path / "none"))
    pulse.calm_window({"sda": (0.0, 0.0, 0.0)})
    assert pulse.moved(["sda"]) is None


def test_at_rest_the_pulse_ends_the_window_early():
    r = Rest(0.05, 30.0)
    for _ in range(CALM_WINDOWS):
        r.observe([True])
    asked = []

    def pulse():
        asked.append(time.monotonic())
        return "sda: requests a second went from 0 to 500" if len(asked) == 3 else None
    t0 = time.monotonic()
    ended = r.wait(threading.Event(), t0, pulse)
    assert len(asked) == 3 and ended is not None and ended - t0 < 5
    assert r.woke == "sda: requests a second went from 0 to 500" and not r.resting
    # out of the rest the pulse is not asked: an ordinary window is waited out
    assert r.wait(threading.Event(), time.monotonic(), pulse) is not None and len(asked) == 3
    # a few calm ordinary windows, and the rest again; one that is not calm: all of them
    for _ in range(AFTER_PULSE - 1):
        r.observe([True])
    assert not r.resting
    r.observe([True])
    assert r.resting


def test_no_rest_when_it_is_off():
    for rest in (0.0, 1.0):
        r = Rest(1.0, rest)
        for _ in range(3 * CALM_WINDOWS):
            r.observe([True])
        assert not r.resting and r.next_window_s() == 1.0


def test_the_config_names_a_rest_shorter_than_the_window(tmp_path):
    p = tmp_path / "ioaz.yaml"
    p.write_text("window_s: 2\nrest_window_s: 1.5\n")
    with pytest.raises(ConfigError, match=r"ioaz.yaml:2: rest_window_s: 1.5 is not longer than "
                                          r"window_s 2"):
        load_config(p)
    p.write_text("rest_window_s: -1\n")
    with pytest.raises(ConfigError, match=r"ioaz.yaml:1: rest_window_s: expected a number"):
        load_config(p)
    p.write_text("rest_window_s: 0\n")
    assert load_config(p).rest_window_s == 0.0
    p.write_text("window_s: 1\n")
    assert load_config(p).rest_window_s == 4.0


# -- which decisions are calm (decide/damping.py) ------------------------------------------


def test_a_cell_with_a_trial_to_come_is_not_calm_until_it_was_tried(tmp_path):
    """8 processes: cfq, stream 2.7 points behind, so a trial is wanted after 4 settled
    windows (CFG). The windows before it are not calm (they must be ordinary windows for the
    trial's base); after the trial gave stream back, the cell wants nothing: calm."""
    prov = provider(tmp_path)
    ds = run([("8", 10.0)] * 5 + [("8", 5.0)] * 3 + [("8", 10.0)] * 3, prov)
    assert ds[0].switch and not ds[0].calm
    assert not any(d.calm for d in ds[1:5])
    assert ds[5].reason is Reason.TRIAL and ds[5].switch
    back = next(i for i, d in enumerate(ds) if d.reason is Reason.TRIAL and "back to" in d.text)
    assert not any(d.calm for d in ds[:back + 1])
    assert all(d.calm for d in ds[back + 1:]) and ds[-1].state.trial is None


def test_a_cell_without_a_runner_up_is_calm_once_in_force(tmp_path):
    prov = provider(tmp_path)
    ds = run([("16+", 10.0)] * 3, prov)
    assert ds[0].switch and not ds[0].calm
    assert ds[1].calm and ds[2].calm


def test_a_switch_being_confirmed_is_not_calm(tmp_path):
    prov = provider(tmp_path)
    config = replace(CFG, hysteresis_windows=3)
    ds = run([("16+", 10.0)] * 3 + [("1", 10.0)] * 2, prov, config=config)
    assert ds[2].calm
    assert [d.reason for d in ds[3:]] == [Reason.HYSTERESIS, Reason.HYSTERESIS]
    assert not ds[3].calm and not ds[4].calm


def test_idle_and_pinned_devices_are_calm(tmp_path):
    prov = provider(tmp_path)
    idle = replace(feats("1", 0.0), iops=0.0, requests=0, read_bytes_per_s=0.0)
    assert step(idle, initial_state(HDD), CFG, prov, 1.0).calm
    pinned = pin(initial_state(HDD), "deadline", 0.0)
    d = step(feats("8", 10.0), pinned, CFG, prov, 1.0)
    assert d.switch and not d.calm        # the pin carried out: a switch is never calm
    assert step(feats("8", 10.0), d.state, CFG, prov, 2.0).calm


def test_a_rest_window_starts_the_count_of_settled_windows_again(tmp_path):
    """A trial's base and noise bar come from ordinary windows only: after a rest window the
    cell needs trial_after_windows ordinary ones before a trial starts."""
    prov = provider(tmp_path)
    ds = run([("8", 10.0)] * 4, prov)
    rested = after_rest_window(ds[-1].state)
    assert rested.settled == ds[-1].state.settled and rested.settled_n == 0
    assert rested.recent == ()
    went_on = run([("8", 10.0)], prov, state=ds[-1].state, t0=2000.0)
    assert went_on[0].reason is Reason.TRIAL     # without the rest: at once
    later = run([("8", 10.0)] * 5, prov, state=rested, t0=2000.0)
    assert [d.reason for d in later].index(Reason.TRIAL) == CFG.trial_after_windows - 1


# -- the horizon in seconds (classify/horizon.py) -------------------------------------------


def test_the_process_horizon_is_kept_in_seconds_when_windows_lengthen():
    h = ProcessHorizon(4, 0.02, horizon_s=4.0)
    for pid in (1, 2, 3, 4):
        n = h.add({pid: 100}, alive=(1, 2, 3, 4), window_s=1.0)
    assert n == 4                          # four 1 s windows: four processes
    # one 4 s window is the whole horizon: the processes of the 1 s windows before drop out
    assert h.add({5: 400}, alive=(1, 2, 3, 4, 5), window_s=4.0) == 1
    # back to 1 s windows: the 4 s window stays while more than half of it is in the horizon
    assert h.add({6: 100}, alive=(5, 6), window_s=1.0) == 2
    assert h.add({6: 100}, alive=(5, 6), window_s=1.0) == 1
    # without lengths the count of windows holds, as for the simulator's windows
    h2 = ProcessHorizon(2, 0.02, horizon_s=4.0)
    for pid in (1, 2, 3):
        n = h2.add({pid: 100}, alive=(1, 2, 3))
    assert n == 2


# -- the daemon --------------------------------------------------------------------------------


def test_the_daemon_rests_when_settled_and_a_pin_ends_the_rest(tmp_path, fake_sys):  # noqa: F811
    d, act = make(tmp_path, fake_sys, extra="rest_window_s: 5\n")
    d.start()
    for _ in range(CALM_WINDOWS + 4):
        d.window()
    assert ("sda", "mq-deadline") in act.applied and ("sdb", "mq-deadline") in act.applied
    assert d.rest.resting and d.status()["next_window_s"] == 5.0
    assert d.status()["resting"] is True
    d.control_pin("sda", "cfq", None)
    assert not d.rest.resting and d.rest.woken.is_set()
    d.window()                             # the pin carried out: a switch, not calm
    assert ("sda", "bfq") in act.applied and not d.rest.resting


def test_the_daemon_never_rests_with_rest_off(tmp_path, fake_sys):  # noqa: F811
    d, _ = make(tmp_path, fake_sys, extra="rest_window_s: 0\n")
    d.start()
    for _ in range(3 * CALM_WINDOWS):
        d.window()
    assert not d.rest.resting and d.status()["next_window_s"] == 1.0


def test_the_metric_shows_the_window_the_daemon_waits():
    daemon = fake_daemon(record())
    assert val(scrape(daemon), "ioaz_window_length_seconds") == 1.0
    for _ in range(CALM_WINDOWS):
        daemon.rest.observe([True])
    assert val(scrape(daemon), "ioaz_window_length_seconds") == 4.0


def test_status_says_when_the_daemon_is_at_rest(tmp_path, fake_sys):  # noqa: F811
    import io

    from ioaz.cli.control import _format_status
    d, _ = make(tmp_path, fake_sys, extra="rest_window_s: 5\n")
    d.start()
    out = io.StringIO()
    _format_status(d.status(), out)
    assert "window 1s  windows 0" in out.getvalue()
    for _ in range(CALM_WINDOWS + 4):
        d.window()
    out = io.StringIO()
    _format_status(d.status(), out)
    assert f"window 1s (at rest: 5s)  windows {CALM_WINDOWS + 4}" in out.getvalue()
