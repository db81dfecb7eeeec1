"""From a calibration dataset to decision matrices: per goal, per IOAZ class, the policy that
served that class's workloads best, by how much it won, and on how many runs.

A workload's class is the one ioaz's own classifier gives its measured features (what the
daemon will see), by majority over the runs of the workload (each candidate's run measures it
anew); a workload the classifier cannot judge keeps the class it was built as.

Within a cell each workload counts once: every candidate's score on it is divided by the best
score any candidate got on it, and those shares are averaged over the cell's workloads. The
winner has the highest average share; its margin is how many points of "share of the
per-workload best" it is ahead of the runner-up. A margin under `min_margin` is no clear
winner: the cell still names the better policy (every cell of a matrix must name one) but its
source says judgement and its note says why, and it lists the policies within the margin of
its best (`within_noise`), one of which ioazd keeps in force rather than switch for noise.
A policy within the margin on the goal whose p99 latency was more than `p99_slack` worse
than the cell's policy's (geometric mean over the cell's workloads of the ratio of their
mean p99s) is left out of that list and named in the note: the calibration did tell it
apart, on the tail a user sees, so ioazd switches from it to the cell's policy rather than
keep it (bfq's p99 on random readers is 1.5-6x mq-deadline's at the same throughput).
A class no workload fell into gets the policy best over the workloads of the class without
its depth (when the axes include depth), else over all workloads of the goal, also marked
judgement; one with no workload of its size, the cell of the class without the size.

The axes are IOAZ's three plus `depth` (shallow|deep requests in flight per process) unless
the caller asks for IOAZ's alone: on the simulator's HDD the depth parts the winners more
than any other axis (idling schedulers for shallow, seek-sorting ones for deep). `size`
(small|large mean request) may be added: on the kernel's depth-1 calibration it parts 16
writers 8 deep (bfq with 4 KiB writes, mq-deadline with 128 KiB ones).
"""
from __future__ import annotations

import collections
import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from ..classify.classes import Thresholds, classify
from ..decide.matrix import all_cell_keys
from .dataset import Outcome, Row, best_candidate, outcomes

IOAZ_AXES = ("processes", "pattern", "mode")
AXES = IOAZ_AXES + ("depth",)
SIZE_AXES = AXES + ("size",)
# an unclassifiable run's axes beyond IOAZ's, as its built class is taken
_BUILT = {"depth": "shallow", "size": "small"}


@dataclass
class CellResult:
    key: str
    policy: str
    clear: bool
    margin: float | None          # share points over the runner-up (0.05 = 5 points)
    share: float | None           # winner's mean share of the per-workload best
    runner_up: str | None
    workloads: int
    runs: int
    empty: bool = False
    fallback_from: str | None = None   # an empty cell's policy came from this coarser cell
    stood_in_for: str | None = None    # the policy the data leaned to, replaced by a stand-in
    # the policies whose share came within the margin of the cell's best (its own excluded)
    within_noise: tuple[str, ...] = ()
    # within the margin, but their p99 this many times the cell's policy's: not kept
    p99_over: tuple[tuple[str, float], ...] = ()
    # a tie the stand-in was not part of: (the stand-in, its mean share), so it did not stand in
    stand_in_behind: tuple[str, float] | None = None
    # it stood in all the same: (the lead's gain over it, the lead's p99 as a multiple of its)
    stand_in_p99: tuple[float, float] | None = None
    # every policy's highest share of the per-workload best over the cell's workloads, best
    # first: the least the scheduler in force lost on any of them (decide/confirm.py,
    # decisive_share); a mean would call a policy far behind on the strength of the cell's
    # other workloads
    shares: tuple[tuple[str, float], ...] = ()
    # no workload of this size in the class: the cell of both sizes, this key
    sizes_of: str | None = None

    def note(self) -> str:
        note = self._note() + self._behind_note() + self._p99_note()
        if self.sizes_of is not None:
            return (f"no calibration workload of this size: as {self.sizes_of}, both sizes, "
                    f"{note}")
        return note

    def _behind_note(self) -> str:
        if self.stand_in_behind is None:
            return ""
        name, share = self.stand_in_behind
        return (f"; {name}, which stands in for a tie it is part of, had {100 * share:.1f}% of "
                f"the per-workload best here, outside the margin, so it does not")

    def _p99_note(self) -> str:
        if not self.p99_over:
            return ""
        each = ", ".join(f"{p} {r:.2f}x" for p, r in self.p99_over)
        return (f"; within the margin but not kept for noise, their p99 this many times "
                f"{self.policy}'s: {each}")

    def _note(self) -> str:
        if self.stood_in_for is not None:
            if self.empty:
                return (f"no calibration workload fell in this class: {self.policy} stands in, "
                        f"as asked for such cells (the nearest data leaned to "
                        f"{self.stood_in_for})")
            if self.stand_in_p99 is not None:
                gain, p99 = self.stand_in_p99
                return (f"no clear winner: {self.policy} stands in, as asked for such cells "
                        f"({self.stood_in_for} was ahead {self._lead()}; it moved "
                        f"{100 * gain:.1f}% more than {self.policy} at {p99:.2f}x its p99, "
                        f"a gain under the p99 slack at a p99 over it)")
            return (f"no clear winner: {self.policy} stands in, as asked for such cells "
                    f"({self.stood_in_for} was ahead {self._lead()})")
        if self.empty and self.fallback_from:
            return (f"no calibration workload fell in this class: the policy best over the "
                    f"{self.workloads} workloads of {self.fallback_from}")
        if self.empty:
            return ("no calibration workload fell in this class: the policy best over all "
                    "workloads of this goal")
        return ("won " if self.clear else "no clear winner: ahead ") + self._lead()

    def _lead(self) -> str:
        assert self.margin is not None and self.share is not None
        runner = f" over {self.runner_up}" if self.runner_up else ""
        return (f"by {100 * self.margin:.1f} points{runner}; {100 * self.share:.1f}% "
                f"of the per-workload best on average; {self.workloads} workloads, "
                f"{self.runs} runs")


def row_class(r: Row, t: Thresholds, axes: tuple[str, ...] = AXES) -> str:
    """The cell key of one run's features on these axes. A run too small to classify keeps
    the class its workload was built as (taken as shallow and small: the built classes are
    IOAZ's)."""
    c = classify(r.window(), t)
    if c is None:
        built = dict(zip(IOAZ_AXES, r.workload_class.split("/"), strict=True))
        return "/".join(built.get(a, _BUILT.get(a, "")) for a in axes)
    values = c.axes()
    return "/".join(values[a] for a in axes)


def workload_classes(rows: Iterable[Row], t: Thresholds,
                     axes: tuple[str, ...] = AXES) -> dict[str, str]:
    votes: dict[str, collections.Counter] = {}
    built: dict[str, str] = {}
    for r in rows:
        votes.setdefault(r.workload, collections.Counter())[row_class(r, t, axes)] += 1
        built[r.workload] = r.workload_class
    out = {}
    for w, c in votes.items():
        top = c.most_common()
        best_n = top[0][1]
        tied = sorted(k for k, n in top if n == best_n)
        # a tie goes to the class the workload was built as, when it is among the tied
        out[w] = next((k for k in tied if k == built[w] or k.startswith(built[w] + "/")),
                      tied[0])
    return out


def shares(per: dict[str, Outcome], goal: str) -> dict[str, float]:
    _, best = best_candidate(per, goal)
    return {c: (o.score(goal) / best if best > 0 else 1.0) for c, o in per.items()}


def derive_table(rows: list[Row], goal: str, t: Thresholds, min_margin: float = 0.02,
                 axes: tuple[str, ...] = AXES, stand_in: str | None = None,
                 p99_slack: float | None = 0.10) -> dict[str, CellResult]:
    """The matrix's cells. With the size axis, a class is split by size only where the
    calibration has workloads of that size in it; a size it has none of takes the class's
    cell derived without the size (a cell of the other size, measured, says more of this
    class on this disk than the fallbacks of a class never measured)."""
    if "size" not in axes:
        return _derive(rows, goal, t, min_margin, axes, stand_in, p99_slack)
    assert axes[-1] == "size", "size is the last axis (matrix.AXIS_ORDER)"
    both = _derive(rows, goal, t, min_margin, axes[:-1], stand_in, p99_slack)
    fine = _derive(rows, goal, t, min_margin, axes, stand_in, p99_slack)
    out = {}
    for key, c in fine.items():
        coarse = key.rsplit("/", 1)[0]
        out[key] = replace(both[coarse], key=key, sizes_of=coarse) if c.empty else c
    return out


def _derive(rows: list[Row], goal: str, t: Thresholds, min_margin: float,
            axes: tuple[str, ...], stand_in: str | None,
            p99_slack: float | None) -> dict[str, CellResult]:
    """The matrix's cells on these axes. With `stand_in`, a cell without a clear winner (or
    without any workload) names that policy instead of the one its data leaned to, when the
    stand-in was within the margin of the best: ioazd then leaves a disk alone where the
    calibration could not tell the candidates apart (with the kernel's default as the
    stand-in), rather than pay a switch for noise; a tie between others keeps the policy the
    data leaned to, unless its lead over the stand-in is under `p99_slack` at a p99 worse by
    more than it.
    `p99_slack` (None: off) takes out of a cell's ties the policies whose p99 was that much
    worse than its policy's; the latency goal needs none, its margin being p99 already."""
    outs = outcomes(rows)
    classes = workload_classes(rows, t, axes)
    by_cell: dict[str, list[str]] = collections.defaultdict(list)
    for w in outs:
        by_cell[classes[w]].append(w)
    policy_of = {r.candidate: r.policy for r in rows}
    overall = _rank(outs, list(outs), goal)
    fallback = policy_of[overall[0][0]] if overall else "deadline"
    table = {}
    # cell -> its candidates best first, and those within the margin
    near_of: dict[str, tuple[list[str], list[str]]] = {}
    share_of: dict[str, dict[str, float]] = {}     # cell -> policy -> its best mean share
    for key in all_cell_keys(axes):
        ws = by_cell.get(key, [])
        if not ws:
            table[key] = _empty_cell(key, axes, by_cell, outs, goal, policy_of, fallback)
            continue
        ranked = _rank(outs, ws, goal)
        win, share = ranked[0]
        runner, rshare = ranked[1] if len(ranked) > 1 else (None, share)
        margin = share - rshare if runner else 0.0
        runs = sum(len(o.rows) for w in ws for o in outs[w].values())
        near = [c for c, s in ranked if s > share - min_margin]
        near_of[key] = ([c for c, _ in ranked], near)
        share_of[key] = {policy_of[c]: s for c, s in reversed(ranked)}
        table[key] = CellResult(key, policy_of[win], margin >= min_margin, margin, share,
                                policy_of.get(runner) if runner else None, len(ws), runs,
                                within_noise=tuple(dict.fromkeys(policy_of[c] for c in near)),
                                shares=_highest_shares(outs, ws, goal, policy_of))
    if stand_in is not None:
        for key, c in table.items():
            if c.clear or c.policy == stand_in:
                continue
            # a tie between others, the stand-in far behind both, is no reason to name it
            # (8 sequential readers at depth 1: bfq and stream within 2 points, mq-deadline
            # at 0.28 of them); but a lead over it smaller than the p99 slack, bought with a
            # p99 worse by more than the slack, is no reason to leave it either (8 random
            # readers: bfq 1.027x mq-deadline's rate at 10.6x its p99)
            if c.empty or stand_in in c.within_noise or stand_in not in share_of[key]:
                table[key] = replace(c, policy=stand_in, stood_in_for=c.policy)
                continue
            behind = share_of[key][stand_in]
            lead, ref = (_first_of(near_of[key][0], policy_of, p) for p in (c.policy, stand_in))
            p99 = (p99_ratio(outs, by_cell[key], lead, ref)
                   if lead is not None and ref is not None else None)
            if (p99_slack is not None and goal != "latency" and p99 is not None
                    and c.share is not None and behind > 0
                    and c.share / behind - 1 < p99_slack and p99 > 1 + p99_slack):
                table[key] = replace(c, policy=stand_in, stood_in_for=c.policy,
                                     stand_in_p99=(c.share / behind - 1, p99))
            else:
                table[key] = replace(c, stand_in_behind=(stand_in, behind))
    for key, c in table.items():
        ties = tuple(p for p in c.within_noise if p != c.policy)
        over: dict[str, float] = {}
        if ties and p99_slack is not None and goal != "latency":
            ranked_cands, near = near_of[key]
            ref = _first_of(ranked_cands, policy_of, c.policy)
            # each tied policy by its best candidate within the margin
            firsts = {policy_of[x]: x for x in reversed(near) if policy_of[x] in ties}
            for policy, cand in firsts.items():
                r = p99_ratio(outs, by_cell[key], cand, ref) if ref is not None else None
                if r is not None and r > 1 + p99_slack:
                    over[policy] = r
        table[key] = replace(c, within_noise=tuple(p for p in ties if p not in over),
                             p99_over=tuple((p, over[p]) for p in ties if p in over))
    return table


def _first_of(ranked: list[str], policy_of: dict[str, str], policy: str) -> str | None:
    """The best-ranked candidate that realises `policy`."""
    return next((x for x in ranked if policy_of[x] == policy), None)


def p99_ratio(outs: dict[str, dict[str, Outcome]], ws: list[str], cand: str,
              ref: str) -> float | None:
    """cand's p99 latency as a multiple of ref's over workloads ws: the geometric mean of
    the per-workload ratios of their mean p99s (a ratio and its inverse weigh the same), over
    the workloads where both have one; None where none has."""
    logs = []
    for w in ws:
        a, b = _mean_p99(outs[w].get(cand)), _mean_p99(outs[w].get(ref))
        if a and b:
            logs.append(math.log(a / b))
    return math.exp(sum(logs) / len(logs)) if logs else None


def _mean_p99(o: Outcome | None) -> float | None:
    xs = [r.p99_latency_s for r in o.rows if r.p99_latency_s] if o else []
    return sum(xs) / len(xs) if xs else None


def _empty_cell(key: str, axes: tuple[str, ...], by_cell: dict[str, list[str]],
                outs: dict[str, dict[str, Outcome]], goal: str, policy_of: dict[str, str],
                fallback: str) -> CellResult:
    """A cell no workload fell in: the winner of the same class at the other depth(s), when
    there is one, else the best over all workloads."""
    if "depth" in axes:
        i = axes.index("depth")

        def without_depth(k: str) -> str:
            parts = k.split("/")
            return "/".join(parts[:i] + parts[i + 1:])

        coarse = without_depth(key)
        ws = [w for k, wl in by_cell.items() if without_depth(k) == coarse for w in wl]
        if ws:
            win = _rank(outs, ws, goal)[0][0]
            return CellResult(key, policy_of[win], False, None, None, None, len(ws), 0,
                              empty=True, fallback_from=coarse)
    return CellResult(key, fallback, False, None, None, None, 0, 0, empty=True)


def _rank(outs: dict[str, dict[str, Outcome]], ws: list[str],
          goal: str) -> list[tuple[str, float]]:
    """Candidates by mean share of the per-workload best over workloads ws (a candidate that
    did not run on a workload scores 0 there)."""
    cands = sorted({c for w in ws for c in outs[w]})
    total = dict.fromkeys(cands, 0.0)
    for w in ws:
        s = shares(outs[w], goal)
        for c in cands:
            total[c] += s.get(c, 0.0)
    return sorted(((c, total[c] / len(ws)) for c in cands), key=lambda x: (-x[1], x[0]))


def _highest_shares(outs: dict[str, dict[str, Outcome]], ws: list[str], goal: str,
                    policy_of: dict[str, str]) -> tuple[tuple[str, float], ...]:
    """Each policy's highest share of the per-workload best over workloads ws (its best
    realisation on each), best first."""
    top: dict[str, float] = {}
    for w in ws:
        for c, x in shares(outs[w], goal).items():
            p = policy_of[c]
            top[p] = max(top.get(p, 0.0), x)
    return tuple(sorted(top.items(), key=lambda x: (-x[1], x[0])))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def matrix_doc(name: str, goal: str, table: dict[str, CellResult],
               dataset: Path | Sequence[Path], n_rows: int, min_margin: float,
               axes: tuple[str, ...] = AXES, excluded: tuple[str, ...] = (),
               tunables: dict[str, dict[str, int]] | None = None) -> dict:
    """The matrix file of one goal; several datasets (measured on one disk, a later one's
    workloads replacing an earlier one's) are each cited with their checksum."""
    sets = [dataset] if isinstance(dataset, Path) else list(dataset)
    if len(sets) == 1:
        measured = f"dataset {sets[0].name} (sha256 {_sha(sets[0])}, {n_rows} runs)"
    else:
        measured = ("datasets " + ", ".join(f"{d.name} (sha256 {_sha(d)})" for d in sets)
                    + f" ({n_rows} runs)")
    cite = (f"ioaz-lab calibrate {measured}, derived by ioaz-lab derive"
            + (f" without the runs of {', '.join(excluded)}" if excluded else ""))
    cells = {}
    for key, c in table.items():
        cell: dict = {"policy": c.policy, "note": c.note()}
        if not c.clear:
            cell["source"] = "unclear"
        # a runner-up that is another realisation of the same policy is no alternative
        if (c.runner_up and c.runner_up != c.policy and not c.empty and c.margin is not None
                and c.stood_in_for is None):
            cell["runner_up"] = {"policy": c.runner_up,
                                 "margin_points": round(100 * c.margin, 1)}
        if c.within_noise:
            cell["within_noise"] = list(c.within_noise)
        if c.p99_over:
            cell["p99_over"] = {p: round(r, 2) for p, r in c.p99_over}
        if c.shares and not c.empty:
            cell["shares"] = _Flow((p, round(x, 3)) for p, x in c.shares)
        cells[key] = cell
    doc = {
        "kind": "matrix", "name": name,
        "description": f"Derived from a calibration of {table_device(sets[0])}: goal {goal}, "
                       f"winners with a margin of at least {100 * min_margin:g} points"
                       + (f"; never {', '.join(excluded)}" if excluded else "") + ".",
        "axes": list(axes),
        "sources": {
            "calibration": {"cite": cite, "kind": "measured"},
            "unclear": {"cite": cite, "kind": "judgement",
                        "note": "no clear winner, or no runs in this class: see the cell note"},
        },
        "default_source": "calibration",
    }
    if tunables:   # measured on the same disk: ioazd writes them with their scheduler
        doc["tunables"] = tunables
    doc["goals"] = {goal: cells}
    return doc


def table_device(dataset: Path) -> str:
    return dataset.stem.removeprefix("calibration-")


class _Flow(dict):
    """A mapping written on one line (a cell's shares: eight policies in one row)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda d, data: d.represent_mapping(
    "tag:yaml.org,2002:map", data.items(), flow_style=True))


def write_matrix(path: Path, doc: dict) -> None:
    head = ("# Derived by `ioaz-lab derive` from a calibration dataset; each cell's note says "
            "by how much\n# its policy won and on how many runs. Regenerate, do not edit.\n")
    path.write_text(head + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100))
