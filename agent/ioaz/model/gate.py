"""When a model's choice is sure enough to act on, or yields to the matrix.

A classifier's scores are probabilities that each policy is the best: its top probability is
its confidence, held to `min_confidence`. A share model's scores are each policy's predicted
share of the best performance, and its top share says how good it expects its pick to be, not
how sure it is that the pick is better than the others: a near tie scores every tied policy
high (S "5 5 seq": stream 0.92, deadline 0.91, sstf 0.88, which passed 0.60 and was acted on;
docs/testbed.md, "Eighty-third run"). Its confidence is the margin of its pick over the
runner-up, held to `min_margin`: below it the model cannot tell its pick from the next, and
the matrix decides. 0.05 by default, above the 4% within which train's labels count
calibration runs as tied.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_MIN_CONFIDENCE = 0.6
DEFAULT_MIN_MARGIN = 0.05


@dataclass(frozen=True)
class Gate:
    min_confidence: float = DEFAULT_MIN_CONFIDENCE   # a classifier's top probability
    min_margin: float = DEFAULT_MIN_MARGIN           # a share model's top over its runner-up

    def confidence(self, scores: Sequence[float], output: str) -> float:
        """`scores`: one per policy, best first."""
        if not scores:
            return 0.0
        if output == "share":
            return scores[0] - (scores[1] if len(scores) > 1 else 0.0)
        return scores[0]

    def threshold(self, output: str) -> float:
        return self.min_margin if output == "share" else self.min_confidence

    def passes(self, confidence: float, output: str) -> bool:
        return confidence >= self.threshold(output)

    def describe(self, output: str) -> str:
        """What the threshold is, for messages."""
        if output == "share":
            return f"margin over the runner-up below {self.min_margin:g}"
        return f"top below {self.min_confidence:g}"
