"""The actuator on real loop devices and the real kernel's sysfs (root).

Each test makes its own loop device over a file in /dev/shm and detaches it afterwards, so tests
running beside other users of loop devices never touch theirs. The state dir is a temporary
directory, never /run/ioaz.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import need_schedulers
from ioaz import sysblock as sf
from ioaz.actuate.actuator import Actuator
from ioaz.actuate.bench import loop_device
from ioaz.actuate.recover import recover
from ioaz.actuate.state import STATE_FILE, StateStore
from ioaz.actuate.types import QueueSettings
from ioaz.realisation import Realisation
from ioaz.sysblock import BlockSysfs

pytestmark = pytest.mark.root

NEEDED = {"none", "mq-deadline", "kyber", "bfq"}


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create loop devices and write sysfs"
    if not shutil.which("losetup"):
        return "losetup is not installed"
    if not Path("/dev/shm").is_dir():
        return "no /dev/shm for the loop device's backing file"
    return None


@pytest.fixture
def loop() -> Iterator[str]:
    why = _why_not()
    if why:
        pytest.skip(why)
    with loop_device(size_mb=64) as dev:
        need_schedulers(dev, *sorted(NEEDED))
        yield dev


@pytest.fixture
def act(tmp_path: Path) -> Actuator:
    return Actuator(BlockSysfs(), StateStore(tmp_path / "run"))


def sysread(dev: str, key: str) -> str:
    """Read straight from /sys, not through the code under test."""
    return Path(f"/sys/block/{dev}/{key}").read_text().strip()


def active(dev: str) -> str:
    line = sysread(dev, "queue/scheduler")
    return line[line.index("[") + 1:line.index("]")]


SETTINGS = [
    ("mq-deadline", {"read_expire": 800, "write_expire": 8000, "fifo_batch": 8}),
    ("kyber", {"read_lat_nsec": 1_000_000}),
    ("bfq", {"slice_idle": 0, "low_latency": 0}),
    ("none", {}),
    ("bfq", {"slice_idle": 4}),
    ("mq-deadline", {"writes_starved": 3}),
]


def test_switch_among_all_four_with_knobs_and_read_back(loop: str, act: Actuator) -> None:
    for i, (sched, knobs) in enumerate(SETTINGS):
        q = QueueSettings(nr_requests=32 + i, read_ahead_kb=64 * (i + 1))
        r = act.apply(loop, Realisation(sched, knobs), q)
        assert r.ok, r.errors
        assert active(loop) == sched == r.scheduler_after
        for k, v in knobs.items():
            assert sysread(loop, f"queue/iosched/{k}") == str(v)
            assert r.took()[sf.knob_key(k)] == str(v)
        assert sysread(loop, "queue/nr_requests") == str(32 + i)
        assert sysread(loop, "queue/read_ahead_kb") == str(64 * (i + 1))
        assert r.switched and r.stall_s is not None and 0 < r.stall_s < 5
    assert act.check_drift(loop) == []


def test_queue_depth_is_skipped_on_a_loop_device(loop: str, act: Actuator) -> None:
    r = act.apply(loop, Realisation("kyber"), QueueSettings(queue_depth=32))
    assert r.ok and any("no device/queue_depth" in n for n in r.notes)


def test_kernel_clamping_is_reported(loop: str, act: Actuator) -> None:
    r = act.apply(loop, Realisation("mq-deadline"), QueueSettings(nr_requests=2, read_ahead_kb=6))
    got = {s.key: s for s in r.steps}
    assert got[sf.NR_REQUESTS].clamped and got[sf.NR_REQUESTS].got == "4"
    assert got[sf.READ_AHEAD_KB].clamped and got[sf.READ_AHEAD_KB].got == "4"  # whole pages


def set_odd_originals(dev: str) -> dict[str, str]:
    """An administrator's tuning that is not the kernel's default, so restore is visible."""
    Path(f"/sys/block/{dev}/queue/scheduler").write_text("mq-deadline")
    Path(f"/sys/block/{dev}/queue/iosched/read_expire").write_text("321")
    Path(f"/sys/block/{dev}/queue/iosched/fifo_batch").write_text("7")
    Path(f"/sys/block/{dev}/queue/nr_requests").write_text("77")
    Path(f"/sys/block/{dev}/queue/read_ahead_kb").write_text("1024")
    # What the kernel kept (read_expire is stored in jiffies: 321 ms may read back as 324).
    keys = ["queue/iosched/read_expire", "queue/iosched/fifo_batch", "queue/nr_requests",
            "queue/read_ahead_kb"]
    return {"scheduler": "mq-deadline"} | {k: sysread(dev, k) for k in keys}


def assert_originals(dev: str, orig: dict[str, str]) -> None:
    assert active(dev) == orig["scheduler"]
    for k, v in orig.items():
        if k != "scheduler":
            assert sysread(dev, k) == v, k


def test_save_and_restore_round_trip(loop: str, act: Actuator) -> None:
    orig = set_odd_originals(loop)
    assert act.apply(loop, Realisation("bfq", {"slice_idle": 0}),
                     QueueSettings(nr_requests=64, read_ahead_kb=128)).ok
    assert act.apply(loop, Realisation("kyber"), QueueSettings(nr_requests=16)).ok
    assert active(loop) == "kyber"
    r = act.restore(loop)
    assert r.ok and r.restored, r.errors
    assert_originals(loop, orig)
    assert not act.state.path.exists()


CHILD = textwrap.dedent("""
    import sys, time
    from ioaz.actuate import Actuator, BlockSysfs, QueueSettings, Realisation, StateStore
    dev, state = sys.argv[1], sys.argv[2]
    act = Actuator(BlockSysfs(), StateStore(state))
    r = act.apply(dev, Realisation("bfq", {"slice_idle": 0}), QueueSettings(nr_requests=50,
                  read_ahead_kb=16))
    print("applied" if r.ok else "failed: " + "; ".join(r.errors), flush=True)
    time.sleep(60)
""")


def test_crash_then_restore_from_the_state_file_in_a_new_process(loop: str,
                                                                tmp_path: Path) -> None:
    orig = set_odd_originals(loop)
    state = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-c", CHILD, loop, str(state)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "applied"
    finally:
        child.send_signal(signal.SIGKILL)  # no handler runs: only the state file survives
        child.wait()
    assert active(loop) == "bfq" and sysread(loop, "queue/read_ahead_kb") == "16"
    assert (state / STATE_FILE).exists()

    rec = subprocess.run([sys.executable, "-m", "ioaz.actuate.recover", "--state-dir",
                          str(state)], capture_output=True, text=True, timeout=60, check=False)
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert f'"device": "{loop}"' in rec.stdout and '"restored": true' in rec.stdout
    assert_originals(loop, orig)
    assert not (state / STATE_FILE).exists()


def test_a_scheduler_changed_by_hand_is_drift(loop: str, act: Actuator) -> None:
    assert act.apply(loop, Realisation("mq-deadline", {"read_expire": 900})).ok
    assert act.check_drift(loop) == []
    Path(f"/sys/block/{loop}/queue/iosched/read_expire").write_text("100")
    (d,) = act.check_drift(loop)
    assert (d.key, d.expected, d.actual) == ("queue/iosched/read_expire", "900", "100")
    Path(f"/sys/block/{loop}/queue/scheduler").write_text("kyber")
    drifts = {d.key: d for d in act.check_drift(loop)}
    assert drifts[sf.SCHEDULER].expected == "mq-deadline"
    assert drifts[sf.SCHEDULER].actual == "kyber"
    assert not any(sf.is_knob_key(k) for k in drifts)


def test_a_bad_knob_value_is_a_clear_error_and_leaves_a_scheduler(loop: str,
                                                                   act: Actuator) -> None:
    t0 = time.monotonic()
    r = act.apply(loop, Realisation("mq-deadline", {"read_expire": "soon"}))
    assert time.monotonic() - t0 < 2  # retries are bounded
    assert not r.ok
    (msg,) = r.errors
    assert loop in msg and f"/sys/block/{loop}/queue/iosched/read_expire" in msg
    assert "'soon'" in msg and "Invalid argument" in msg
    assert active(loop) in NEEDED


def test_an_unknown_scheduler_is_refused_and_changes_nothing(loop: str, act: Actuator) -> None:
    before = active(loop)
    r = act.apply(loop, Realisation("cfq"))
    assert not r.ok and "'cfq' is not available" in r.errors[0]
    assert active(loop) == before and not act.state.path.exists()


def test_recovery_writes_nothing_onto_another_file_in_the_same_loop_device(
        loop: str, tmp_path: Path) -> None:
    """loopN is 7:N whatever file it holds: after ioaz's process dies, the loop device is given
    another file, and recovery must not take that for the disk whose originals it saved. The
    kernel's diskseq moves on at the new attach; what the new disk has is left as it is."""
    state = tmp_path / "run"
    res = Actuator(BlockSysfs(), StateStore(state)).apply(
        loop, Realisation("kyber", {}, QueueSettings(read_ahead_kb=16)))
    assert res.ok, res.errors
    seq_before = sysread(loop, "diskseq")
    other = tmp_path / "other.img"
    other.write_bytes(b"\0" * (8 << 20))
    subprocess.run(["losetup", "-d", f"/dev/{loop}"], check=True)
    for _ in range(50):   # the detach is asynchronous while the device is still open
        if subprocess.run(["losetup", f"/dev/{loop}", str(other)],
                          capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    assert sysread(loop, "diskseq") != seq_before
    sysfs_now = {k: sysread(loop, k) for k in ("queue/scheduler", "queue/read_ahead_kb")}
    (r,) = recover(state, actuator=Actuator(BlockSysfs(), StateStore(state)))
    assert r.replaced and not r.restored, r
    assert {k: sysread(loop, k) for k in sysfs_now} == sysfs_now
    assert not (state / STATE_FILE).exists()


def test_held_reads_follow_a_switch_and_a_new_backing_file(loop: str) -> None:
    """ioazd reads the scheduler line and diskseq through descriptors it keeps open
    (sysblock.HELD_KEYS): on this kernel's sysfs each read runs the attribute afresh, so a
    switch and a new file attached under the same name (a new diskseq) are both seen."""
    real = BlockSysfs()
    held = BlockSysfs(hold_open=2)
    try:
        assert held.scheduler(loop) == real.scheduler(loop)
        real.write(loop, sf.SCHEDULER, "bfq")
        assert held.scheduler(loop).active == "bfq"
        seq = held.read(loop, "diskseq")
        assert seq == real.read(loop, "diskseq") and len(held._held) == 2
        fd, other = tempfile.mkstemp(prefix="ioaz-held-", suffix=".img", dir="/dev/shm")
        os.close(fd)
        os.truncate(other, 16 << 20)
        try:
            subprocess.run(["losetup", "-d", f"/dev/{loop}"], check=True)
            again = subprocess.run(["losetup", f"/dev/{loop}", other], capture_output=True,
                                   text=True)
            if again.returncode != 0:
                pytest.skip(f"/dev/{loop} was taken between detach and attach: "
                            f"{again.stderr.strip()}")
            assert held.read(loop, "diskseq") == real.read(loop, "diskseq") != seq
        finally:
            os.unlink(other)   # the fixture detaches whatever is attached
    finally:
        held.close()
    assert not held._held


def test_writeback_throttling_off_outlasts_switches_and_is_restored(loop: str,
                                                                     act: Actuator) -> None:
    """The kernel behaviour ioazd's writeback_throttling rests on: a 0 written to
    queue/wbt_lat_usec stays off under every scheduler, and restore puts the original target
    back. (That bfq turns the kernel's own default off, and a switch away turns it on again,
    shows only on a queue whose target nobody ever wrote: a loop device keeps its queue from
    one attachment to the next, so a test here cannot count on that; the guest showed it,
    docs/reports/wbt-sysbench-2026-11-29.)"""
    if not Path(f"/sys/block/{loop}/queue/wbt_lat_usec").exists():
        pytest.skip(f"{loop} has no queue/wbt_lat_usec (kernel without CONFIG_BLK_WBT)")
    Path(f"/sys/block/{loop}/queue/scheduler").write_text("mq-deadline")
    original = sysread(loop, sf.WBT_LAT_USEC)
    if original == "0":   # a target of 0 left by hand: give it one to put back
        Path(f"/sys/block/{loop}/queue/wbt_lat_usec").write_text("-1")
        original = sysread(loop, sf.WBT_LAT_USEC)
    assert int(original) > 0, f"{loop}: writing -1 left throttling off ({original})"
    r = act.apply(loop, Realisation("mq-deadline"), QueueSettings(wbt_lat_usec=0))
    assert r.ok and r.took() == {sf.WBT_LAT_USEC: "0"}, r.errors
    for sched in ("bfq", "kyber", "mq-deadline", "none"):
        assert act.apply(loop, Realisation(sched), QueueSettings(wbt_lat_usec=0)).ok
        assert (active(loop), sysread(loop, sf.WBT_LAT_USEC)) == (sched, "0")
    r = act.restore(loop)
    assert r.ok and r.restored, r.errors
    assert (active(loop), sysread(loop, sf.WBT_LAT_USEC)) == ("mq-deadline", original)


def test_the_elevators_expiry_is_read_from_the_real_kernel(act: Actuator) -> None:
    # what the class's membership lasts at least (classify/horizon.py): the elevator's longest
    # request deadline, read from the knobs the kernel shows for it
    why = _why_not()
    if why:
        pytest.skip(why)
    with loop_device(size_mb=64) as dev:
        need_schedulers(dev, "none", "mq-deadline", "kyber")
        sysfs = BlockSysfs()
        for sched, knobs, want in (("mq-deadline", {}, 5.0),   # the kernel's write_expire
                                   ("mq-deadline", {"write_expire": 30000}, 30.0),
                                   ("kyber", {}, 0.0), ("none", {}, 0.0)):
            res = act.apply(dev, Realisation(sched, knobs))
            assert res.ok, res.errors
            assert sysfs.expiry_s(dev) == want, (sched, knobs)
        assert act.restore(dev).ok
