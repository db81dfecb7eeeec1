"""The simulator on the testbed bench's workloads that it can run: the same layout on the same
disk model, each static scheduler by its stand-in, to set beside what the real kernel measured.

Only the raw-disk fio workloads have a simulator twin (the simulator has no file system or page
cache to run S, sysbench or dd through); the others are left out of the comparison, not guessed.
"""
from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

from ioaz.lab.testbench.workloads import BY_NAME, PAR_FIRST_GB, placement

# the kernel's scheduler -> the simulator's stand-in (sim/schedulers/__init__.py)
# (stream-tuned: the same stand-in, given the knobs the guest gave stream: plan.json's `tuned`)
STAND_IN = {"none": "none", "mq-deadline": "deadline", "bfq": "bfq", "kyber": "kyber",
            "fifo": "fifo", "vr": "vr", "stream": "stream-vr", "stream-tuned": "stream-vr"}


def twins(phase_s: float, runtime_s: float, par_apart_gb: int = 50) -> dict[str, Any]:
    """workload name -> its simulator twin; a mix's phases each under "MIX:PHASE". The bench's
    raw-disk workloads are O_DIRECT (workloads.RAW_FIO), so the kernel's elevators see even
    the mixes' 8-deep libaio writers as synchronous (REQ_SYNC): every twin process is `direct`,
    as the calibration's twins are (learn/simcal.py). The simulator's own mixes keep IOAZ's
    write-back writers. par-read's readers are `par_apart_gb` apart, as the guest placed them
    on the model disk (workloads.placement)."""
    from ioaz.lab.simsuites.adaptive import phases_contrast
    from ioaz.sim.workloads import Phase, Workload, par_read, phases_mix

    def direct(p: Phase) -> Phase:
        return replace(p, procs=[replace(_placed(q, par_apart_gb), direct=True)
                                 for q in p.procs])

    out: dict[str, Any] = {"par-read": Workload("par-read", [direct(par_read(runtime_s)
                                                                   .phases[0])])}
    for mix, sim_mix in (("phases", phases_mix), ("phases-contrast", phases_contrast)):
        for name, p in zip(BY_NAME[mix].phases, sim_mix(phase_s).phases, strict=True):
            out[f"{mix}:{name}"] = Workload(name, [direct(p)])
    return out


def _placed(proc: Any, par_apart_gb: int) -> Any:
    """A par-read reader (sim/workloads.py names them par-read-I) moved where the guest's is;
    every other process as it was."""
    if not proc.name.startswith("par-read-"):
        return proc
    i = int(proc.name.rsplit("-", 1)[1])
    return replace(proc, region_gb=PAR_FIRST_GB + par_apart_gb * i)


def simulate(model: str, queue_depth: int | None, phase_s: float, runtime_s: float,
             schedulers: list[str], tags: int,
             tuned: dict[str, Any] | None = None, ran: set[str] | None = None
             ) -> dict[str, dict[str, float]]:
    """workload (or MIX:PHASE) -> kernel scheduler -> simulated MB/s, with the guest kernel's
    request limits for `tags` command slots (bench.guest_tags; sim/schedulers
    blk_mq_nr_requests). The drive's queue depth is not the tags: at depth 1 the guest's
    elevators still hold 64 requests, and so must their stand-ins. `tuned`: contender ->
    [scheduler, knobs], as the plan gave them (bench.tuned_statics); the stand-in gets the
    same knobs. `ran`: only the twins of these workloads (default: every twin)."""
    from ioaz.sim.devices import load_device
    from ioaz.sim.engine import simulate as run_sim
    from ioaz.sim.schedulers import blk_mq_nr_requests

    dev_kw = {"queue_depth": queue_depth} if queue_depth else {}
    apart = int(placement(load_device(model).capacity_sectors * 512)["PAR_APART_GB"])
    out: dict[str, dict[str, float]] = {}
    for name, wl in twins(phase_s, runtime_s, apart).items():
        if ran is not None and name.split(":")[0] not in ran:
            continue
        out[name] = {}
        for s in schedulers:
            if s in STAND_IN:
                dev = load_device(model, **dev_kw)
                knobs = (tuned or {}).get(s, (None, None))[1]
                out[name][s] = run_sim(dev, STAND_IN[s], wl, nr_requests=blk_mq_nr_requests(tags),
                                       tunables=knobs).throughput_mb_s
    return out


def real_means(table: dict[str, dict[str, list[dict[str, Any]]]]
               ) -> dict[str, dict[str, float]]:
    """The kernel's side in the same shape: MB/s per static scheduler, a mix's per phase."""
    out: dict[str, dict[str, float]] = {}
    for w, runs in table.items():
        for c, rows in runs.items():
            if c not in STAND_IN:
                continue
            ok = [r for r in rows if r.get("mb_s") is not None]
            if not ok:
                continue
            if BY_NAME[w].phases:
                for p in BY_NAME[w].phases:
                    out.setdefault(f"{w}:{p}", {})[c] = statistics.fmean(
                        r["phases"][p] for r in ok)
            else:
                out.setdefault(w, {})[c] = statistics.fmean(r["mb_s"] for r in ok)
    return out


def compare(real: dict[str, dict[str, float]], sim: dict[str, dict[str, float]]
            ) -> dict[str, Any]:
    """Per workload: the winner in each, and each scheduler's ratio to the winner in each
    (kernel, simulator); a ratio agrees when the two are within 20% of the kernel's. A
    workload run under one static scheduler has no ranking to compare, and is left out.
    The winners agree (`same_winner`) when the kernel's is within 2% of the simulator's best,
    and count toward the target only when the simulator saw a difference (not `sim_blind`)."""
    rows: dict[str, Any] = {}
    for w, s in sim.items():
        r = {k: v for k, v in real.get(w, {}).items() if k in s}
        if len(r) < 2:
            continue
        rw, sw = max(r, key=lambda k: r[k]), max(s, key=lambda k: s[k])
        ratios = {k: (r[k] / r[rw], s[k] / s[sw]) for k in r}
        within = sum(1 for a, b in ratios.values() if abs(a - b) <= 0.2 * max(a, 1e-9))
        # a tie in the simulator (within 2%) that includes the kernel's winner counts as same;
        # but a simulator that sees every candidate alike where the kernel parted them by more
        # than 10% agrees on nothing, and is counted apart (`sim_blind`)
        sim_blind = (min(b for _, b in ratios.values()) >= 0.98
                     and min(a for a, _ in ratios.values()) < 0.9)
        rows[w] = {"real_winner": rw, "sim_winner": sw, "same_winner": s[rw] >= 0.98 * s[sw],
                   "sim_blind": sim_blind, "ratios": ratios, "ratios_within_20pct": within,
                   "n": len(ratios)}
    return rows
