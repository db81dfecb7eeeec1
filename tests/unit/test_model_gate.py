"""When a model is sure enough to act on (ioaz.model.gate)."""
from __future__ import annotations

import pytest
from ioaz.model.gate import Gate


def test_a_classifier_is_sure_by_its_top_probability():
    g = Gate(min_confidence=0.6, min_margin=0.05)
    assert g.confidence([0.62, 0.30, 0.08], "proba") == 0.62
    assert g.passes(0.62, "proba") and not g.passes(0.55, "proba")
    assert g.describe("proba") == "top below 0.6"


def test_a_share_model_is_sure_by_its_margin_over_the_runner_up():
    g = Gate(min_confidence=0.6, min_margin=0.05)
    # the 83rd run's first window: every share passes 0.6, the margin is 0.01
    c = g.confidence([0.92, 0.91, 0.88], "share")
    assert c == pytest.approx(0.01) and not g.passes(c, "share")
    c = g.confidence([1.0, 0.6, 0.5], "share")
    assert c == pytest.approx(0.4) and g.passes(c, "share")
    assert g.confidence([0.7], "share") == 0.7 and g.confidence([], "share") == 0.0
    assert g.describe("share") == "margin over the runner-up below 0.05"
