"""The bench's primed switch (`primedN@STATIC`) on a real loop device: a helper process sets
the scheduler, reads blocks during the switch and one right after it, and exits, so that under
bfq its queue is the first the new scheduler creates (docs/testbed.md, forty-eighth to
fifty-fifth runs)."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest
from ioaz.lab.testbench import guest_bench
from ioaz.sysblock import BlockSysfs

SYSFS = BlockSysfs()


def reads(dev: str) -> int:
    return int(SYSFS.read(dev, "stat").split()[0])


def test_the_helper_switches_and_reads_until_the_switch_is_made(
        make_loop: Callable[..., str]) -> None:
    dev = make_loop(16)
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
