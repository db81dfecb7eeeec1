"""The bench's primed switch (`primedN@STATIC`) on a real loop device: a helper process sets
the scheduler, reads one block right after it and exits, so that under bfq its queue is the
first the new scheduler creates (docs/testbed.md, forty-eighth run)."""
from __future__ import annotations

from collections.abc import Callable

from ioaz.lab.testbench import guest_bench
from ioaz.sysblock import BlockSysfs

SYSFS = BlockSysfs()


def reads(dev: str) -> int:
    return int(SYSFS.read(dev, "stat").split()[0])


def test_the_helper_switches_then_reads_one_block(make_loop: Callable[..., str]) -> None:
    dev = make_loop(16)
    before = reads(dev)
    guest_bench.prime_switch(SYSFS, dev, "bfq")
    assert SYSFS.scheduler(dev).active == "bfq"
    assert reads(dev) - before == 1   # its one O_DIRECT block, nothing else
    guest_bench.prime_switch(SYSFS, dev, "mq-deadline")
    assert SYSFS.scheduler(dev).active == "mq-deadline"


def test_primed_is_a_late_contender() -> None:
    assert guest_bench.late_of("primed10@bfq") == (10, "bfq")
    assert guest_bench.late_of("primed10@bfq+slice_idle=100") == (10, "bfq+slice_idle=100")
    assert guest_bench.late_of("prime10@bfq") is None
