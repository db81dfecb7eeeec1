"""ModelVerdicts: a VerdictProvider (ioaz.decide.verdict) backed by a trained model.

The model reads the window's features (ioaz.model.features) and gives a score per policy: the
probability that it is the best (a classifier), or its predicted share of the best performance
(a share model: how much of the per-workload best it expects the policy to deliver). When the
top score is at least `min_confidence`, that policy is the verdict; below, or
when the model was trained for another goal, the matrix decides as it would without a model.
Either way the verdict carries the model's top candidates and probabilities, which
`ioazctl explain` shows.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..classify.types import WindowFeatures
from ..decide.verdict import MatrixVerdicts, Verdict
from ..device import DeviceInfo
from .features import vector
from .file import Model

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
    def __init__(self, model: Model, fallback: MatrixVerdicts, min_confidence: float) -> None:
        self.model = model
        self.fallback = fallback
        self.min_confidence = min_confidence

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
        cands = [(p, round(x, 4)) for p, x in m.predict_proba(vector(features))]
        policy, conf = cands[0]
        if conf >= self.min_confidence:
            return ModelVerdict(
                policy, f"model:{m.name}", goal,
                f"model {m.name}: {_top(cands, m.output)} -> {policy}", model=m.path,
                confidence=conf, candidates=tuple(cands[:TOP]))
        v = self.fallback.verdict(features, device, goal)
        mv = ModelVerdict(**v.as_dict(), model=m.path, confidence=conf,
                          candidates=tuple(cands[:TOP]))
        return replace(mv, text=f"model {m.name} unsure ({_top(cands, m.output)}; top below "
                                f"{self.min_confidence:g}), matrix: {v.text}")
