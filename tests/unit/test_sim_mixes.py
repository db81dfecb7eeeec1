"""The report's phase-changing mixes: phases-contrast exists to test adaptive selection, so its
phases, each run alone, must be won by different schedulers on the HDD model."""
from __future__ import annotations

from ioaz.lab.simsuites.adaptive import phases_contrast
from ioaz.sim.devices import load_device
from ioaz.sim.engine import simulate
from ioaz.sim.workloads import Workload


def _alone(phase_idx: int, sched: str, seconds: float = 4.0):
    ph = phases_contrast(seconds).phases[phase_idx]
    return simulate(load_device("wd500"), sched, Workload(f"contrast/{phase_idx}", [ph]))


def test_phases_contrast_phases_favour_different_schedulers() -> None:
    scheds = ("deadline", "noop", "cfq", "stream")
    par = {s: _alone(0, s) for s in scheds}
    writers = {s: _alone(1, s) for s in scheds}
    readers = {s: _alone(2, s) for s in scheds}
    # par-read: stream about 3x deadline (Xu & Jiang)
    assert par["stream"].throughput_mb_s > 2.5 * par["deadline"].throughput_mb_s
    # 16 sequential readers: cfq's time slices beat stream on MB/s and on the slowest reader
    assert readers["cfq"].throughput_mb_s > 1.1 * readers["stream"].throughput_mb_s
    assert readers["cfq"].proc_min_mb_s > 1.1 * readers["stream"].proc_min_mb_s
    # 16 sequential writers: stream leaves some writer far behind; noop and cfq do not
    assert writers["noop"].proc_min_mb_s > 2 * writers["stream"].proc_min_mb_s
    assert writers["cfq"].proc_min_mb_s > 2 * writers["stream"].proc_min_mb_s
