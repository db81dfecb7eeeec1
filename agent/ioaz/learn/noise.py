"""How much of a loss is measurement noise: the per-workload best is the highest of single
simulated (or measured) runs, each with its own randomness, so a pick can lose against it by
chance alone.

With two or more repetitions of a calibration (`ioaz-lab calibrate --reps 2`: repetition r
runs the simulator with seed 1 + r) the noise floor is measured directly: on every workload,
take the best candidate of repetition a and score it on repetition b's runs against b's best.
That is what a perfect classifier of single-run labels would lose; averaged over every ordered
pair (a, b) and every workload with at least two complete repetitions.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable

from .dataset import Row

# workload -> repetition -> candidate -> score
Scores = dict[str, dict[int, dict[str, float]]]


def rep_scores(rows: Iterable[Row], goal: str) -> Scores:
    out: Scores = {}
    for r in rows:
        out.setdefault(r.workload, {}).setdefault(r.rep, {})[r.candidate] = r.score(goal)
    return out


def _complete(per_rep: dict[int, dict[str, float]]) -> list[dict[str, float]]:
    """The repetitions that ran every candidate any repetition of the workload ran."""
    cands = {c for sc in per_rep.values() for c in sc}
    return [sc for _, sc in sorted(per_rep.items()) if set(sc) == cands]


def _pick(sc: dict[str, float]) -> str:
    return max(sorted(sc), key=lambda c: sc[c])


def _cross_loss(a: dict[str, float], b: dict[str, float]) -> float:
    best = max(b.values())
    return max(0.0, 1.0 - b[_pick(a)] / best) if best > 0 else 0.0


def workload_floors(rows: Iterable[Row], goal: str) -> dict[str, float]:
    """workload -> the mean loss of one repetition's best scored on another repetition."""
    out = {}
    for w, per_rep in rep_scores(rows, goal).items():
        reps = _complete(per_rep)
        pairs = [(a, b) for i, a in enumerate(reps) for j, b in enumerate(reps) if i != j]
        if pairs:
            out[w] = statistics.fmean(_cross_loss(a, b) for a, b in pairs)
    return out


def noise_floor(rows: Iterable[Row], goal: str) -> float | None:
    """The mean over workloads of `workload_floors`; None without a second repetition."""
    floors = workload_floors(rows, goal)
    return statistics.fmean(floors.values()) if floors else None


def rep_spread(rows: Iterable[Row], goal: str) -> float | None:
    """The median relative difference between two repetitions of the same run
    (|a - b| / mean of the two), over every (workload, candidate) with two or more."""
    diffs = []
    for per_rep in rep_scores(rows, goal).values():
        reps = _complete(per_rep)
        if len(reps) < 2:
            continue
        for c in reps[0]:
            a, b = reps[0][c], reps[1][c]
            if a + b > 0:
                diffs.append(abs(a - b) / ((a + b) / 2))
    return statistics.median(diffs) if diffs else None
