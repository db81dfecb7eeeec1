"""Trials on a model's verdicts (ioaz.model.verdicts.matrix_cell, decide/trial.py): a confident
model's verdict carries the matrix's cell of the same window, so a near tie the model is sure
about is measured on the device. The model is a real one in its portable form with constant
scores (what `ioaz-lab train` writes for a DummyClassifier): its answer does not depend on the
window, which is what these tests need.

The matrix is test_decide_trial.py's, with a measured source and ties in cell 1: 8 processes
-> cfq, runner-up stream by 2.7 points; 4 -> deadline by 9 points over sstf; 1 -> fcfs, with
cfq and sstf within its noise, and stream as good but with 1.8x its p99.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from ioaz.decide import (
    DecideConfig,
    Decision,
    MatrixVerdicts,
    initial_state,
    load_matrix,
    step,
)
from ioaz.decide.rules import Rule
from ioaz.model.features import vector
from ioaz.model.file import Model
from ioaz.model.portable import FORMAT, KIND, Portable
from ioaz.model.verdicts import ModelVerdicts
from test_decide_trial import CFG, HDD, feats

MATRIX = """\
kind: matrix
name: model-trial-test
description: for tests of trials on a model's verdicts
axes: [processes]
sources:
  test: {cite: written for this test, kind: measured}
default_source: test
goals:
  throughput:
    "1": {policy: fcfs, within_noise: [cfq, sstf], p99_over: {stream: 1.8}}
    "4": {policy: deadline, runner_up: {policy: sstf, margin_points: 9.0}}
    "8": {policy: cfq, runner_up: {policy: stream, margin_points: 2.7}}
    16+: deadline
"""

def provider(tmp_path: Path, scores: dict[str, float], goal: str = "throughput",
             min_confidence: float = 0.6, output: str = "proba") -> ModelVerdicts:
    p = tmp_path / "model-trial-test.yaml"
    p.write_text(MATRIX)
    matrix = MatrixVerdicts((Rule(0, {"throughput": p.name}),), {p.name: load_matrix(p)})
    est = Portable.from_doc({"kind": KIND, "format": FORMAT, "combine": "constant",
                             "n_features": len(vector(feats("8", 1.0))),
                             "scores": list(scores.values())})
    model = Model(path=str(tmp_path / "m.model.json"), goal=goal, family="dummy",
                  classes=list(scores), policy_of={}, estimator=est, manifest={}, notes=[],
                  output=output)
    return ModelVerdicts(model, matrix, min_confidence)


def run(windows: list[tuple[str, float]], prov: ModelVerdicts,
        config: DecideConfig = CFG) -> list[Decision]:
    state = initial_state(HDD)
    out = []
    for i, (procs, mb) in enumerate(windows):
        d = step(feats(procs, mb), state, config, prov, 1000.0 + i)
        out.append(d)
        state = d.state
    return out


def switches(ds: list[Decision]) -> list[tuple[str | None, str | None, str]]:
    return [(d.previous, d.policy, d.reason) for d in ds if d.switch]


def test_a_model_that_overrules_the_matrix_tries_the_matrixs_choice_first(
        tmp_path: Path) -> None:
    # the model says sstf at 0.9 where the cell says cfq: after 4 settled windows under sstf
    # at 2 MB/s, cfq moves 3 MB/s (+50%) and is kept for the cell
    prov = provider(tmp_path, {"sstf": 0.9, "cfq": 0.1})
    v = prov.verdict(feats("8", 2.0), HDD, "throughput")
    assert (v.policy, v.provider, v.cell, v.second_opinion) == ("sstf", "model:m.model.json "
                                                               "(dummy)", "8", "cfq")
    assert (v.runner_up, v.margin_points) == ("stream", 2.7)
    ds = run([("8", 2.0)] * 5 + [("8", 3.0)] * 3 + [("8", 3.0)] * 10, prov)
    assert switches(ds) == [(None, "sstf", "model"), ("sstf", "cfq", "trial")]
    assert "trying the matrix's choice cfq (the matrix chose it for this cell, the model " \
        "sstf)" in ds[4].text
    assert "cfq kept for this cell" in ds[7].text
    assert all(d.action == "hold" and d.policy == "cfq" for d in ds[8:])
    assert "but a trial" in ds[-1].text


def test_after_the_matrixs_choice_comes_the_cells_near_runner_up(tmp_path: Path) -> None:
    # cfq no better (given back), then, settled again, stream (2.7 points behind cfq) is tried
    prov = provider(tmp_path, {"sstf": 0.9, "cfq": 0.1})
    ds = run([("8", 2.0)] * 30, prov)
    tried = [d.policy for d in ds if d.switch and d.previous == "sstf"]
    assert tried == ["cfq", "stream"]
    assert "trying the runner-up stream (the cell's lead over it is 2.7 points)" in \
        next(d.text for d in ds if d.switch and d.policy == "stream")


def test_a_model_that_agrees_with_the_matrix_tries_what_the_matrix_would(
        tmp_path: Path) -> None:
    prov = provider(tmp_path, {"cfq": 0.9, "sstf": 0.1})
    v = prov.verdict(feats("8", 2.0), HDD, "throughput")
    assert v.second_opinion is None and v.runner_up == "stream"
    ds = run([("8", 2.0)] * 5 + [("8", 2.0)] * 3, prov)
    assert switches(ds) == [(None, "cfq", "model"), ("cfq", "stream", "trial"),
                            ("stream", "cfq", "trial")]
    # with trials off (trial_margin_points 0) a model's verdict is never tried against anything
    off = run([("8", 2.0)] * 30, provider(tmp_path, {"sstf": 0.9, "cfq": 0.1}),
              replace(CFG, trial_margin_points=0))
    assert switches(off) == [(None, "sstf", "model")]


def test_the_cells_ties_hold_only_when_the_models_choice_is_one_of_them(tmp_path: Path) -> None:
    # cell 1: fcfs, with cfq and sstf within its calibration's noise
    tied = provider(tmp_path, {"cfq": 0.9, "deadline": 0.1}).verdict(feats("1", 2.0), HDD,
                                                                     "throughput")
    assert set(tied.within_noise) == {"fcfs", "sstf"}
    apart = provider(tmp_path, {"deadline": 0.9, "cfq": 0.1}).verdict(feats("1", 2.0), HDD,
                                                                      "throughput")
    assert apart.within_noise == () and apart.second_opinion == "fcfs"
    # the device on sstf (tied with cfq in this cell) stays there when the model says cfq
    state = replace(initial_state(HDD), policy="sstf", since=None)
    d = step(feats("1", 2.0), state, CFG, provider(tmp_path, {"cfq": 0.9, "deadline": 0.1}),
             1000.0)
    assert d.action == "hold" and d.reason == "within_noise"


def test_a_models_choice_with_a_worse_p99_in_the_cell_gives_way_to_the_cells_policy(
        tmp_path: Path) -> None:
    prov = provider(tmp_path, {"stream": 0.9, "cfq": 0.1})
    v = prov.verdict(feats("1", 2.0), HDD, "throughput")
    assert (v.policy, v.confidence, v.cell) == ("fcfs", 0.9, "1")
    assert "stream" in v.text and "worse p99" in v.text
    # a disk under stream is moved to fcfs: stream is not within the cell's noise
    state = replace(initial_state(HDD), policy="stream", since=None)
    out = []
    for i in range(6):
        d = step(feats("1", 2.0), state, CFG, prov, 1000.0 + i)
        out.append(d)
        state = d.state
    assert [(d.previous, d.policy) for d in out if d.switch] == [("stream", "fcfs")]
    # a choice the cell measured with no worse a p99 stays the model's
    assert provider(tmp_path, {"sstf": 0.9, "cfq": 0.1}).verdict(
        feats("1", 2.0), HDD, "throughput").policy == "sstf"


@pytest.mark.parametrize("scores,goal", [({"sstf": 0.55, "cfq": 0.45}, "throughput"),
                                         ({"sstf": 0.9, "cfq": 0.1}, "mean")])
def test_below_its_confidence_or_for_another_goal_the_matrix_decides_as_before(
        tmp_path: Path, scores: dict[str, float], goal: str) -> None:
    v = provider(tmp_path, scores, goal=goal).verdict(feats("8", 2.0), HDD, "throughput")
    assert v.policy == "cfq" and v.provider == "matrix" and v.second_opinion is None
    # unsure, the model's top is still a dissent from the matrix's (damping: no quick first
    # choice); for another goal it has none
    assert v.leaning == ("sstf" if goal == "throughput" else None)


def test_an_unsure_model_that_agrees_with_the_matrix_does_not_dissent(tmp_path: Path) -> None:
    v = provider(tmp_path, {"cfq": 0.5, "sstf": 0.5}).verdict(feats("8", 2.0), HDD,
                                                               "throughput")
    assert v.policy == "cfq" and v.leaning is None


def test_an_unsure_share_model_keeps_in_force_what_it_ranks_within_its_margin(
        tmp_path: Path) -> None:
    # shares of the best: stream 0.93, sstf 0.92 (within the 0.05 margin), deadline 0.80; the
    # model is unsure, so the matrix names cell 8's cfq, but sstf in force is one of the
    # model's tie and stays, where deadline in force is left for cfq
    shares = {"stream": 0.93, "sstf": 0.92, "deadline": 0.80}
    prov = provider(tmp_path, shares, output="share")
    v = prov.verdict(feats("8", 2.0), HDD, "throughput")
    assert v.policy == "cfq" and v.provider == "matrix" and v.leaning == "stream"
    assert set(v.within_noise) == {"stream", "sstf"}
    on_sstf = replace(initial_state(HDD), policy="sstf", since=None)
    d = step(feats("8", 2.0), on_sstf, CFG, prov, 1000.0)
    assert d.action == "hold" and d.reason == "within_noise"
    assert "sstf in force is within the noise of cfq" in d.text
    state = replace(initial_state(HDD), policy="deadline", since=None)
    ds = []
    for i in range(6):
        d = step(feats("8", 2.0), state, CFG, prov, 1000.0 + i)
        ds.append(d)
        state = d.state
    # (a trial of the cell's runner-up stream may follow: not what this test is about)
    assert [(d.previous, d.policy) for d in ds if d.switch][0] == ("deadline", "cfq")
    # in cell 1 stream is as good as fcfs with 1.8x its p99: not kept in force by the model
    v1 = prov.verdict(feats("1", 2.0), HDD, "throughput")
    assert v1.policy == "fcfs" and "sstf" in v1.within_noise and "stream" not in v1.within_noise
    # a classifier's probabilities are not shares: its near ties leave the cell's alone
    p = provider(tmp_path, {"stream": 0.35, "sstf": 0.34, "deadline": 0.31})
    assert p.verdict(feats("8", 2.0), HDD, "throughput").within_noise == ()


def test_a_model_verdict_without_a_matrix_cell_carries_nothing_to_try(tmp_path: Path) -> None:
    prov = provider(tmp_path, {"sstf": 0.9, "cfq": 0.1})
    f = replace(feats("8", 2.0), workload_class=None)
    v = prov.verdict(f, HDD, "throughput")
    assert v.policy == "sstf" and v.cell is None and v.second_opinion is None


def from_policy(prov: ModelVerdicts, policy: str, n: int = 4,
                config: DecideConfig = CFG) -> list[Decision]:
    """n windows of cell 8 with `policy` in force, put there by ioaz long before (so neither
    the first choice's quick rule nor the dwell applies), the full hysteresis of 3."""
    config = replace(config, hysteresis_windows=3, trial_margin_points=0)
    state = replace(initial_state(HDD), policy=policy, since=0.0, last_switch=0.0)
    out = []
    for i in range(n):
        d = step(feats("8", 2.0), state, config, prov, 1000.0 + i)
        out.append(d)
        state = d.state
    return out


def test_a_sure_model_that_puts_the_policy_in_force_far_behind_switches_in_two_windows(
        tmp_path: Path) -> None:
    """The phases mix's four sequential readers under deadline (docs/testbed.md,
    hundred-and-second run): the model sure of stream, deadline at 0.29 of the best, the
    matrix naming stream too. Each window hysteresis waits then loses most of a window."""
    prov = provider(tmp_path, {"cfq": 1.0, "stream": 0.6, "deadline": 0.3}, output="share")
    v = prov.verdict(feats("8", 2.0), HDD, "throughput")
    assert v.policy == "cfq" and v.second_opinion is None
    assert dict(v.shares) == {"cfq": 1.0, "stream": 0.6, "deadline": 0.3}
    ds = from_policy(prov, "deadline")
    assert [ds.index(d) for d in ds if d.switch] == [1] and ds[1].policy == "cfq"
    assert "seen 1 of 2 windows (deadline in force: 0.30 of the best by the model)" in ds[0].text
    assert "deadline in force at 0.30 of the best by the model: 2 windows decide" in ds[1].text
    # stream in force, at 0.6 of the best, is not that far behind: the full hysteresis
    ds = from_policy(prov, "stream")
    assert [ds.index(d) for d in ds if d.switch] == [2] and "seen 2 of 3" in ds[1].text
    # decisive_share 0 turns the rule off
    ds = from_policy(prov, "deadline", config=replace(CFG, decisive_share=0.0))
    assert [ds.index(d) for d in ds if d.switch] == [2]


def test_a_decisive_lead_in_a_new_workloads_first_window_switches_at_once(
        tmp_path: Path) -> None:
    """The phases mix's four readers after its writer (docs/testbed.md, hundred-and-fifth
    run): bfq, chosen for the writer, at 0.47 of stream by a sure model in the readers' first
    window. The scheduler in force was chosen for the cell before, not for this workload, so
    the window decides as the first choice's does; in the workload's own cell the same lead
    waits decisive_windows."""
    prov = provider(tmp_path, {"cfq": 1.0, "stream": 0.6, "deadline": 0.3}, output="share")
    cell4, cell8 = (prov.verdict(feats(p, 2.0), HDD, "throughput").cell for p in ("4", "8"))
    assert cell4 == "4" and cell8 == "8"
    config = replace(CFG, hysteresis_windows=3, trial_margin_points=0)
    after4 = replace(initial_state(HDD), policy="deadline", since=0.0, last_switch=0.0,
                     last_cell=cell4)
    d = step(feats("8", 2.0), after4, config, prov, 1000.0)
    assert d.switch and d.policy == "cfq" and d.reason == "model"
    assert ("deadline in force at 0.30 of the best by the model, the workload new (the "
            "window before was 4): its first window decides") in d.text
    assert d.state.last_cell == "8"
    # the same lead after a window of cell 8 itself: the second window decides
    ds = [step(feats("8", 2.0), replace(after4, last_cell=cell8), config, prov, 1000.0)]
    ds.append(step(feats("8", 2.0), ds[0].state, config, prov, 1001.0))
    assert [d.switch for d in ds] == [False, True] and "seen 1 of 2" in ds[0].text
    # a lead that is not decisive (stream at 0.6) waits the full hysteresis in a new cell too
    d = step(feats("8", 2.0), replace(after4, policy="stream"), config, prov, 1000.0)
    assert d.action == "hold" and d.reason == "hysteresis" and "seen 1 of 3" in d.text
    # the dwell, flip-flop guard and budget still apply: only the count of windows is shorter
    d = step(feats("8", 2.0), replace(after4, since=999.5), replace(config, min_dwell_s=5),
             prov, 1000.0)
    assert d.action == "hold" and d.reason == "dwell"


def test_no_quick_switch_when_the_matrix_disagrees_or_the_model_is_not_a_share_model(
        tmp_path: Path) -> None:
    # the model sure of sstf where cell 8 names cfq: a near tie by the two deciders
    prov = provider(tmp_path, {"sstf": 1.0, "cfq": 0.7, "deadline": 0.3}, output="share")
    v = prov.verdict(feats("8", 2.0), HDD, "throughput")
    assert v.policy == "sstf" and v.second_opinion == "cfq"
    ds = from_policy(prov, "deadline")
    assert [ds.index(d) for d in ds if d.switch] == [2]
    # a classifier's probabilities say nothing of how far behind the policy in force is
    clf = provider(tmp_path, {"cfq": 0.9, "deadline": 0.05, "stream": 0.05})
    assert clf.verdict(feats("8", 2.0), HDD, "throughput").shares == ()
    ds = from_policy(clf, "deadline")
    assert [ds.index(d) for d in ds if d.switch] == [2]
    # nor does an unsure share model, whose verdict is the matrix's
    unsure = provider(tmp_path, {"stream": 0.5, "sstf": 0.48, "deadline": 0.1}, output="share")
    assert unsure.verdict(feats("8", 2.0), HDD, "throughput").shares == ()
