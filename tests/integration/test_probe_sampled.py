"""The sampled probe (ioazd's default) on real loop devices under fio (root).

A busy machine is sampled: only about the sampled share of bios and latencies is seen, while the
counts stay exact (from /proc/diskstats). A quiet one is seen whole. The IOAZ classes under
sampling: tests/integration/test_probe_fio.py runs all of its tests sampled too.
"""
from __future__ import annotations

import subprocess
import time

import pytest
from conftest import fio_args, fio_totals, need_root, need_tool
from ioaz.probe.bpf_source import BpfSource
from ioaz.probe.sampler import SamplePlan, completed_requests

pytestmark = pytest.mark.root
SIZE_MB = 512
BUSY = SamplePlan(0.2, period_s=0.5, warmup_s=0.05, full_below_iops=20000)
# The threshold is the whole machine's rate: high enough that other I/O on a shared machine
# does not make the quiet disk's machine look busy.
QUIET = SamplePlan(0.2, period_s=0.5, warmup_s=0.05, full_below_iops=50000)


def run(dev: str, cmd: list[str], plan: SamplePlan) -> tuple[dict, dict, dict]:
    """fio's report and the probe's snapshots of `dev` before and after it."""
    need_root("loading BPF")
    need_tool("fio")
    with BpfSource(sample=plan) as src:
        before = src.read()[dev]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        time.sleep(0.1)
        after = src.read()[dev]
        assert src.sampler is not None and src.sampler.error is None
    return fio_totals(out), before.__dict__, after.__dict__


def d(after: dict, before: dict, key: str) -> int:
    return after[key] - before[key]


def test_busy_disk_is_sampled_with_exact_counts(make_loop):
    dev = make_loop(SIZE_MB)
    cmd = fio_args(dev, rw="randread", jobs=2, seconds=3, size_mb=SIZE_MB,
                   extra=("--ioengine=io_uring", "--iodepth=16"))
    fio, before, after = run(dev, cmd, BUSY)
    reads = d(after, before, "bios")
    done = after["completed"][0] - before["completed"][0]
    assert done == pytest.approx(fio["read_ios"], rel=0.02), "counts must stay exact"
    assert fio["iops"] > 4 * BUSY.full_below_iops, f"fio too slow to test sampling: {fio}"
    # 0.2 of each period counted: the share of bios seen, with room for the first period.
    assert 0.1 < reads / done < 0.35, f"sampled {reads} of {done} bios"
    timed = sum(after["lat_hist"]) - sum(before["lat_hist"])
    assert 0.1 < timed / done < 0.35, f"latency of {timed} of {done} requests"


def test_quiet_disk_is_seen_whole(make_loop):
    dev = make_loop(SIZE_MB)
    cmd = fio_args(dev, rw="read", jobs=1, seconds=3, size_mb=SIZE_MB,
                   extra=("--rate_iops=800",))
    n0, t0 = completed_requests(), time.monotonic()
    fio, before, after = run(dev, cmd, QUIET)
    machine = (completed_requests() - n0) / (time.monotonic() - t0)
    done = after["completed"][0] - before["completed"][0]
    assert done == pytest.approx(fio["read_ios"], rel=0.02)
    # All but (at most) the first, sampled, period are full: nearly every bio is seen.
    seen = d(after, before, "bios")
    assert seen >= 0.75 * done, \
        f"saw {seen} of {done} bios of a quiet disk (the machine did {machine:.0f} requests/s)"
    assert d(after, before, "bios_seq") >= 0.9 * seen
