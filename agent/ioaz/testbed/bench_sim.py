"""The simulator on the testbed bench's workloads that it can run: the same layout on the same
disk model, each static scheduler by its stand-in, to set beside what the real kernel measured.

Only the raw-disk fio workloads have a simulator twin (the simulator has no file system or page
cache to run S, sysbench or dd through); the others are left out of the comparison, not guessed.
"""
from __future__ import annotations

import statistics
from typing import Any

# the kernel's scheduler -> the simulator's stand-in (sim/schedulers/__init__.py)
STAND_IN = {"none": "none", "mq-deadline": "deadline", "bfq": "bfq", "kyber": "kyber",
            "fifo": "fifo", "vr": "vr", "stream": "stream-vr"}


def twins(phase_s: float, runtime_s: float) -> dict[str, list[Any]]:
    """workload name -> its phases as simulator workloads, one per phase."""
    from ioaz.sim.workloads import Workload, par_read, phases_mix

    mix = phases_mix(phase_s)
    return {"phases": [Workload(p.name or str(i), [p]) for i, p in enumerate(mix.phases)],
            "par-read": [par_read(runtime_s)]}


def simulate(model: str, queue_depth: int | None, phase_s: float, runtime_s: float,
             schedulers: list[str]) -> dict[str, dict[str, float]]:
    """workload -> kernel scheduler -> simulated MB/s (a mix: the mean of its phases)."""
    from ioaz.sim.devices import load_device
    from ioaz.sim.engine import simulate as run_sim

    out: dict[str, dict[str, float]] = {}
    for name, parts in twins(phase_s, runtime_s).items():
        out[name] = {}
        for s in schedulers:
            if s not in STAND_IN:
                continue
            dev_kw = {"queue_depth": queue_depth} if queue_depth else {}
            mbs = [run_sim(load_device(model, **dev_kw), STAND_IN[s], wl).throughput_mb_s
                   for wl in parts]
            out[name][s] = statistics.fmean(mbs)
    return out


def compare(real: dict[str, dict[str, float]], sim: dict[str, dict[str, float]]
            ) -> dict[str, Any]:
    """Per workload: the winner in each, and each scheduler's ratio to the winner in each."""
    rows: dict[str, Any] = {}
    for w, s in sim.items():
        r = {k: v for k, v in real.get(w, {}).items() if k in s}
        if not r:
            continue
        rw, sw = max(r, key=lambda k: r[k]), max(s, key=lambda k: s[k])
        ratios = {k: (r[k] / r[rw], s[k] / s[sw]) for k in r}
        within = sum(1 for a, b in ratios.values() if abs(a - b) <= 0.2 * max(a, 1e-9))
        rows[w] = {"real_winner": rw, "sim_winner": sw, "same_winner": rw == sw,
                   "ratios": ratios, "ratios_within_20pct": within, "n": len(ratios)}
    return rows
