"""ModelVerdicts: a VerdictProvider (ioaz.decide.verdict) backed by a trained model.

The model reads the window's features (ioaz.model.features) and gives a score per policy: the
probability that it is the best (a classifier), or its predicted share of the best performance
(a share model: how much of the per-workload best it expects the policy to deliver). When the
model is sure (model/gate.py: a classifier's top probability at least `min_confidence`, a
share model's margin over its runner-up at least `min_margin`), that policy is the verdict;
below, or when the model was trained for another goal, the matrix decides as it would
without a model.
Either way the verdict carries the model's top candidates and probabilities, which
`ioazctl explain` shows.

A confident verdict also carries the matrix's cell for the same window, so that trials
(ioaz.decide.trial) measure it on the device: a classifier trained on the calibration's
labels is confident about a near tie (its labels name one winner where four schedulers read
within 8%), and on the testbed's sysbench rndrw the kernel model held vr at probability 1.00
and read 0.91 of bfq where the matrices' trials found deadline at 1.01 (docs/testbed.md,
twenty-third run). Where the two disagree, the matrix's policy is the first trial; then the
cell's runner-up and alternatives, as for the matrix's own verdicts. The cell's policies that
its calibration could not tell apart stay in force only when the model's choice is one of them.
A model's choice that the cell's calibration measured as no better on the goal and with a
worse p99 (the cell's `p99_over`) gives way to the cell's policy: the model, trained on
throughput labels, cannot see the tail (on sysbench rndrw it chose sstf, whose p99 in that
cell was 1.6x mq-deadline's at the same throughput).
An unsure share model's verdict is the matrix's, but the policies the model ranks within its
margin of its top stay in force beside the cell's ties (`model_ties`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..classify.types import WindowFeatures
from ..decide.verdict import MatrixVerdicts, Verdict
from ..device import DeviceInfo
from .file import Model
from .gate import DEFAULT_MIN_MARGIN, Gate

TOP = 3


@dataclass(frozen=True)
class ModelVerdict(Verdict):
    model: str | None = None
    confidence: float | None = None
    candidates: tuple[tuple[str, float], ...] = ()   # (policy, score), best first


def _top(cands: list[tuple[str, float]], output: str = "proba") -> str:
    kind = "share of best " if output == "share" else ""
    return kind + ", ".join(f"{p} {v:.2f}" for p, v in cands[:TOP])


class ModelVerdicts:
    def __init__(self, model: Model, fallback: MatrixVerdicts, min_confidence: float,
                 min_margin: float = DEFAULT_MIN_MARGIN) -> None:
        self.model = model
        self.fallback = fallback
        self.gate = Gate(min_confidence, min_margin)

    def tunables(self, device: DeviceInfo, goal: str) -> dict[str, dict[str, int | str]]:
        """The matrices' (a model is trained on policies, not knobs)."""
        return self.fallback.tunables(device, goal)

    def source(self, device: DeviceInfo, goal: str) -> dict[str, Any]:
        """The model for its own goal, the matrix below its confidence and for other goals."""
        return {**self.fallback.source(device, goal),
                "model": self.model.path if goal == self.model.goal else None}

    def verdict(self, features: WindowFeatures, device: DeviceInfo, goal: str) -> Verdict:
        m = self.model
        if goal != m.goal:
            v = self.fallback.verdict(features, device, goal)
            return ModelVerdict(**{**v.as_dict(),
                                   "text": f"{v.text} (model {m.name} is for goal {m.goal})"},
                                model=m.path)
        cands = [(p, round(x, 4)) for p, x in m.predict_proba(m.vector(features))]
        policy = cands[0][0]
        conf = round(self.gate.confidence([x for _, x in cands], m.output), 4)
        sure = self.gate.passes(conf, m.output)
        v = self.fallback.verdict(features, device, goal)
        if sure and policy in v.p99_over and v.policy is not None:
            mv = ModelVerdict(**v.as_dict(), model=m.path, confidence=conf,
                              candidates=tuple(cands[:TOP]))
            return replace(mv, text=f"model {m.name}: {_top(cands, m.output)} -> {policy}, "
                                    f"which this cell's calibration measured within the noise "
                                    f"of {v.policy} and with a worse p99; matrix: {v.text}")
        if sure:
            return ModelVerdict(
                policy, f"model:{m.name}", goal,
                f"model {m.name}: {_top(cands, m.output)} -> {policy}", model=m.path,
                confidence=conf, candidates=tuple(cands[:TOP]),
                shares=tuple(cands) if m.output == "share" else (), **matrix_cell(policy, v))
        dissent = policy if v.policy is not None and policy != v.policy else None
        ties = model_ties(cands, m.output, self.gate.min_margin, v)
        mv = ModelVerdict(**{**v.as_dict(), "leaning": dissent, "within_noise": ties},
                          model=m.path, confidence=conf, candidates=tuple(cands[:TOP]))
        return replace(mv, text=f"model {m.name} unsure ({_top(cands, m.output)}; "
                                f"{self.gate.describe(m.output)}), matrix: {v.text}")


def model_ties(cands: list[tuple[str, float]], output: str, min_margin: float,
               v: Verdict) -> tuple[str, ...]:
    """The policies an unsure verdict leaves in force: the cell's ties, and for a share model
    the policies within its margin of its top, unless the cell measured them with a worse p99
    (`p99_over`, which the model cannot see). A share model unsure between two policies has
    not said the disk should change from one to the other; without this the coarser matrix
    would decide for it, and on the testbed it moved S's buffered readers from bfq, in force
    and ranked 0.92 against stream's 0.93, to the stream its cell names (0.60 of bfq;
    docs/testbed.md, ninety-eighth run). A classifier's probabilities say how likely a policy
    is the best, not how near it comes, so its ties are the cell's alone."""
    own: tuple[str, ...] = ()
    if output == "share" and cands:
        top = cands[0][1]
        own = tuple(p for p, x in cands if top - x < min_margin and p not in v.p99_over)
    return tuple(p for p in dict.fromkeys((*v.within_noise, *own)) if p != v.policy)


def matrix_cell(policy: str, v: Verdict) -> dict[str, Any]:
    """What a model's verdict for `policy` takes from the matrix's verdict `v` of the same
    window, for trials: the cell, its runner-up and alternatives, the matrix's policy as the
    second opinion when it differs, and the cell's ties when the model's choice is among them
    (with the cell's policy, less the model's choice). Nothing without a cell."""
    if v.cell is None or v.policy is None:
        return {}
    tied = (v.policy, *v.within_noise)
    return {"matrix": v.matrix, "cell": v.cell, "cell_line": v.cell_line, "source": v.source,
            "source_kind": v.source_kind, "rule": v.rule, "runner_up": v.runner_up,
            "margin_points": v.margin_points, "alternatives": v.alternatives,
            "second_opinion": v.policy if v.policy != policy else None,
            "within_noise": tuple(p for p in tied if p != policy) if policy in tied else ()}
