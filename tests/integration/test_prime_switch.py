"""The bench's primed switch (`primedN@STATIC`) on a real loop device: a helper process sets
the scheduler, reads blocks during the switch and one right after it, and exits, so that under
bfq its queue is the first the new scheduler creates (docs/testbed.md, forty-eighth to
fifty-fifth runs)."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import need_schedulers
from ioaz.lab.testbench import guest_bench
from ioaz.sysblock import BlockSysfs

SYSFS = BlockSysfs()


def reads(dev: str) -> int:
    return int(SYSFS.read(dev, "stat").split()[0])


def test_the_helper_switches_and_reads_until_the_switch_is_made(
        make_loop: Callable[..., str]) -> None:
    dev = make_loop(16)
    need_schedulers(dev, "bfq")
    for sched in ("bfq", "mq-deadline"):
        before = reads(dev)
        got = guest_bench.prime_switch(SYSFS, dev, sched)
        assert SYSFS.scheduler(dev).active == sched
        # its O_DIRECT blocks and nothing else, as many as it says; at least the one it is
        # reading when the switch is made
        assert got["reads"] >= 1
        assert reads(dev) - before == got["reads"]
        assert 0 < got["write_s"] < 60
        assert got["cpus"] == len(os.sched_getaffinity(0))   # the reader's and a spinner each


def test_primed_is_a_late_contender() -> None:
    assert guest_bench.late_of("primed10@bfq") == (10, "bfq")
    assert guest_bench.late_of("primed10@bfq+slice_idle=100") == (10, "bfq+slice_idle=100")
    assert guest_bench.late_of("prime10@bfq") is None


def test_a_refused_switch_is_an_error_and_leaves_no_helper_behind(
        make_loop: Callable[..., str]) -> None:
    dev = make_loop(16)
    before = SYSFS.scheduler(dev).active
    with pytest.raises(RuntimeError, match=f"switching {dev} to nosuch"):
        guest_bench.prime_switch(SYSFS, dev, "nosuch")
    assert SYSFS.scheduler(dev).active == before
    # the kernel refused the write; the helper's reader and spinners stopped with it
    left = subprocess.run(["pgrep", "-f", f"/dev/{dev} "], capture_output=True, text=True)
    assert left.stdout == ""


def test_the_helpers_die_with_the_writer(make_loop: Callable[..., str], tmp_path: Path) -> None:
    """A timeout kills only the writer; its reader and real-time spinners must not outlive it.
    A FIFO stands for the scheduler file, so the writer blocks in opening it, as it would in
    a switch that never ends, with every helper running."""
    dev = make_loop(16)
    fifo = tmp_path / "scheduler"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", guest_bench.PRIME, f"/dev/{dev}",
                               str(fifo), "bfq"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    children = Path(f"/proc/{writer.pid}/task/{writer.pid}/children")
    helpers: list[int] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        helpers = [int(p) for p in children.read_text().split()]
        if len(helpers) == len(os.sched_getaffinity(0)) and reads(dev) > 0:
            break
        time.sleep(0.05)
    else:
        writer.kill()
        pytest.fail(f"the helpers did not start: {helpers}, {writer.stderr}")
    try:
        before = reads(dev)
        time.sleep(0.2)
        assert reads(dev) > before   # the reader is reading
        writer.kill()
        writer.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(p) for p in helpers):
            time.sleep(0.05)
        assert not [p for p in helpers if alive(p)]
        stopped = reads(dev)
        time.sleep(0.2)
        assert reads(dev) == stopped
    finally:   # a failure here must not leave real-time spinners on the test machine
        writer.kill()
        for pid in helpers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """A process that has not exited (a zombie has, and init reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
