"""Verdicts: the policy wanted in one window, and where that wish came from.

The damping in damping.py only sees a Verdict, never how it was made: a matrix lookup
(MatrixVerdicts) or a trained model (ioaz.model.verdicts.ModelVerdicts) implements the same
Protocol (features -> policy), and the hysteresis, dwell, budget and pins stay as they are.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..classify.types import WindowFeatures
from ..device import DeviceInfo
from .matrix import Matrix
from .rules import Rule, select_matrix


@dataclass(frozen=True)
class Verdict:
    policy: str | None            # None: no opinion this window (reason in text)
    provider: str                    # "matrix", or e.g. "model:forest-v1"
    goal: str
    text: str                        # human explanation
    matrix: str | None = None     # matrix file path
    cell: str | None = None       # cell key, e.g. "4/random/read"
    cell_line: int | None = None  # where that cell is written
    source: str | None = None     # citation of the cell
    source_kind: str | None = None  # measured | published | judgement
    rule: str | None = None       # which matrix rule chose the matrix
    runner_up: str | None = None  # the cell's second policy, and the winner's lead over it
    margin_points: float | None = None  # (points of share of the per-workload best)
    within_noise: tuple[str, ...] = ()  # not told apart from policy: by the cell's calibration,
    #                                     or by an unsure share model (model/verdicts.py)
    # policies as good on the goal in this cell but with a worse p99 (matrix.Cell.p99_over)
    p99_over: tuple[str, ...] = ()
    # the policies that won the matrix's measured cells, other than this cell's, for trials
    # (trial.py: trial_unclear in a cell no measurement chose, trial_measured in one it did)
    alternatives: tuple[str, ...] = ()
    # the matrix's policy for this cell when a model chose another (ioaz.model.verdicts): two
    # deciders that disagree are a near tie, so it is the first trial (trial.candidates)
    second_opinion: str | None = None
    # a model's top candidate when it was unsure and the matrix decided, where the two differ:
    # a dissent too weak to decide and still against the matrix, so no quick first choice
    leaning: str | None = None
    # each policy's share of the best: a sure share model's prediction (model/verdicts.py),
    # or else the matrix cell's measurement (matrix.Cell.shares): how much the scheduler in
    # force is expected to lose, which decides how many windows confirm a switch (confirm.py,
    # decisive_share)
    shares: tuple[tuple[str, float], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class VerdictProvider(Protocol):
    def verdict(self, features: WindowFeatures, device: DeviceInfo, goal: str) -> Verdict:
        """The policy this window's features call for on this device under this goal."""
        ...

    def tunables(self, device: DeviceInfo, goal: str) -> dict[str, dict[str, int | str]]:
        """Scheduler -> knobs measured on this device's kind of disk (none: {})."""
        ...

    def source(self, device: DeviceInfo, goal: str) -> dict[str, Any]:
        """Where this device's verdicts come from under this goal, whatever the last window
        was (ioazctl explain): the matrix and the rule that chose it, and the model if any."""
        ...


class MatrixVerdicts:
    """IOAZ's way: workload class -> cell of the matrix the rules pick for device and goal."""

    def __init__(self, rules: tuple[Rule, ...], matrices: dict[str, Matrix]) -> None:
        self.rules = rules
        self.matrices = matrices
        self._winners: dict[tuple[str, str], tuple[str, ...]] = {}

    def tunables(self, device: DeviceInfo, goal: str) -> dict[str, dict[str, int | str]]:
        """The tunables of the matrix the rules pick for this device and goal."""
        choice = select_matrix(self.rules, device, goal)
        return self.matrices[choice.file].tunables if choice is not None else {}

    def source(self, device: DeviceInfo, goal: str) -> dict[str, Any]:
        choice = select_matrix(self.rules, device, goal)
        if choice is None:
            return {"matrix": None, "rule": None, "model": None}
        return {"matrix": self.matrices[choice.file].path, "rule": choice.rule.describe(),
                "model": None}

    def verdict(self, features: WindowFeatures, device: DeviceInfo, goal: str) -> Verdict:
        choice = select_matrix(self.rules, device, goal)
        if choice is None:
            return Verdict(None, "matrix", goal,
                           f"no matrix rule matches {device.name} for goal {goal}")
        m = self.matrices[choice.file]
        wclass = features.workload_class
        if wclass is None:
            seen = "" if features.bios is None else \
                f" ({features.requests} requests, {features.bios} bios seen by the probe)"
            return Verdict(None, "matrix", goal, f"no workload class this window{seen}",
                           matrix=m.path, rule=choice.rule.describe())
        cell = m.lookup(goal, wclass)
        if cell is None:  # config validation maps goals only to matrices that have them
            return Verdict(None, "matrix", goal, f"{m.path} has no {goal} table",
                           matrix=m.path, rule=choice.rule.describe())
        kind = "" if cell.source.kind == "measured" else f", {cell.source.kind}"
        # only the axes this matrix reads: a held size says nothing to one without it
        axes = [a for a in wclass.held if a in m.axes]
        held = f" ({' and '.join(axes)} kept from the previous window: within the boundary " \
            "band)" if axes else ""
        if wclass.kept:
            held = f" (kept from the previous window: {wclass.kept})"
        return Verdict(
            cell.policy, "matrix", goal,
            f"class {wclass.key()}{held} -> {cell.policy} ({m.name} goal {goal} cell {cell.key}; "
            f"source {cell.source.key}{kind})",
            matrix=m.path, cell=cell.key, cell_line=cell.line, source=cell.source.cite,
            source_kind=cell.source.kind, rule=choice.rule.describe(),
            runner_up=cell.runner_up, margin_points=cell.margin_points,
            within_noise=cell.within_noise,
            p99_over=tuple(p for p, _ in cell.p99_over), shares=cell.shares,
            alternatives=tuple(p for p in self._measured_winners(choice.file, goal)
                               if p != cell.policy),
        )

    def _measured_winners(self, file: str, goal: str) -> tuple[str, ...]:
        key = (file, goal)
        if key not in self._winners:
            self._winners[key] = self.matrices[file].measured_winners(goal)
        return self._winners[key]
