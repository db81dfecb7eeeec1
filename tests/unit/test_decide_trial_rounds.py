"""Trials in rounds (decide trial_rounds): the candidate and the cell's policy in turns, each
round's gain against the policy's windows just before it, kept when the mean gain reaches
trial_min_gain / sqrt(rounds), given back early when clearly behind.

The device here moves a fixed rate per scheduler in force, so which policy a window ran under
decides what it measures, as on a real disk. The matrix is test_decide_trial's: cell 8 is cfq
with stream the runner-up 2.7 points behind.
"""
from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from ioaz.cli.control import _format_trials
from ioaz.decide import (
    DecideConfig,
    Decision,
    DeviceState,
    MatrixVerdicts,
    ValidationError,
    config_from_doc,
    initial_state,
    load_file,
    step,
)
from ioaz.decide.trial import after_round, round_threshold
from test_decide_trial import CFG, HDD, feats, provider


def run_rates(rates: dict[str, float], n: int, prov: MatrixVerdicts, config: DecideConfig,
              state: DeviceState | None = None, t0: float = 1000.0,
              jitter: list[float] | None = None) -> list[Decision]:
    """n windows a second in cell 8; each moves rates[policy in force] MB/s (times
    jitter[i], the workload's own swing, when given)."""
    state = state or initial_state(HDD)
    out = []
    for i in range(n):
        mb = rates.get(state.policy or "", 1.0) * (jitter[i % len(jitter)] if jitter else 1.0)
        d = step(feats("8", mb), state, config, prov, t0 + i)
        out.append(d)
        state = d.state
    return out


def moves(ds: list[Decision]) -> list[tuple[int, str | None, str | None]]:
    return [(i, d.previous, d.policy) for i, d in enumerate(ds) if d.switch]


def test_rounds_alternate_and_keep_a_gain_one_round_would_give_back(tmp_path: Path) -> None:
    prov = provider(tmp_path)
    # stream moves 7% more than cfq: under one round's bar (10%), over four rounds' (5%)
    rates = {"cfq": 2.0, "stream": 2.14}
    one = run_rates(rates, 12, prov, CFG)
    assert moves(one) == [(0, None, "cfq"), (4, "cfq", "stream"), (7, "stream", "cfq")]
    assert "+7%; kept at +10% or more" in one[7].text

    four = run_rates(rates, 40, prov, replace(CFG, trial_rounds=4))
    # cfq at 0, settled 1-4, then per round 3 windows of stream and 3 of cfq in turn
    assert moves(four) == [(0, None, "cfq"), (4, "cfq", "stream"), (7, "stream", "cfq"),
                           (10, "cfq", "stream"), (13, "stream", "cfq"),
                           (16, "cfq", "stream"), (19, "stream", "cfq"),
                           (22, "cfq", "stream")]
    assert all(d.reason == "trial" for d in four[5:26])
    assert "round 1 of 4, stream window 1 of 3" in four[5].text
    assert "round 2 of 4, cfq window 2 of 3" in four[9].text
    assert "cfq again for the next round's base" in four[7].text
    assert "stream again" in four[10].text
    end = four[25]
    assert "in 4 rounds of 3 windows" in end.text and "+7%, +7%, +7%, +7%" in end.text
    assert "kept at +5.0% or more over 4 rounds" in end.text and "stream kept" in end.text
    assert all(d.policy == "stream" and not d.switch for d in four[25:])
    [kept] = four[-1].state.trials
    assert kept.kept and kept.gain == pytest.approx(0.07)


def test_a_clear_loser_goes_back_after_its_first_round(tmp_path: Path) -> None:
    # one settled window at half the rate sets the floor at 1 MB/s, so stream's 1 MB/s
    # windows are not under it (clear_loser): the round is measured whole, and it is enough
    jitter = [1.0, 0.5] + [1.0] * 30
    ds = run_rates({"cfq": 2.0, "stream": 1.0}, 20, provider(tmp_path),
                   replace(CFG, trial_rounds=4), jitter=jitter)
    assert moves(ds) == [(0, None, "cfq"), (4, "cfq", "stream"), (7, "stream", "cfq")]
    assert "-50%" in ds[7].text and "no more rounds" in ds[7].text and "back to cfq" in ds[7].text
    [r] = ds[-1].state.trials
    assert not r.kept and r.gain == pytest.approx(-0.5)


def test_each_round_is_judged_against_the_base_just_before_it(tmp_path: Path) -> None:
    # the workload halves its rate half-way through the trial, under both schedulers alike:
    # against the first base alone stream would look 45% worse; round by round it is 10% better
    prov = provider(tmp_path)
    cfg = replace(CFG, trial_rounds=2)
    jitter = [1.0] * 8 + [0.5] * 30
    ds = run_rates({"cfq": 2.0, "stream": 2.2}, 30, prov, cfg, jitter=jitter)
    assert moves(ds)[-1] == (10, "cfq", "stream")
    assert "+10%, +10%" in ds[13].text and "stream kept" in ds[13].text


def test_a_workload_that_leaves_while_the_base_is_measured_again_costs_no_switch(
        tmp_path: Path) -> None:
    prov = provider(tmp_path)
    cfg = replace(CFG, trial_rounds=3)
    ds = run_rates({"cfq": 2.0, "stream": 2.2}, 9, prov, cfg)
    assert ds[-1].state.trial is not None and ds[-1].state.trial.measuring_base
    assert ds[-1].policy == "cfq"
    # another process count (diskstats names no process): the trial is abandoned, on cfq
    d = step(replace(feats("16+", 2.0), process_bios={}), ds[-1].state, cfg, prov, 1009.0)
    assert not d.switch and d.policy == "cfq" and "abandoned" in d.text
    assert d.state.trial is None and d.state.trials[-1].gain is None


def test_the_bar_is_the_one_round_bar_over_the_root_of_the_rounds() -> None:
    cfg = replace(CFG, trial_min_gain=0.1, trial_rounds=4)
    assert round_threshold(1, cfg) == pytest.approx(0.1)
    assert round_threshold(4, cfg) == pytest.approx(0.05)
    assert after_round((0.3,), cfg) == "again"        # ahead: measured further
    assert after_round((-0.09,), cfg) == "again"      # behind, within one round's noise
    assert after_round((-0.1,), cfg) == "back"
    assert after_round((0.02, -0.2), cfg) == "back"   # mean -9% <= -7.1%
    assert after_round((0.05, 0.05, 0.05, 0.05), cfg) == "keep"
    assert after_round((0.05, 0.05, 0.05, 0.04), cfg) == "back"
    one = replace(cfg, trial_rounds=1)
    assert after_round((0.1,), one) == "keep" and after_round((0.09,), one) == "back"


def test_trial_rounds_is_validated_with_the_config_line(tmp_path: Path) -> None:
    p = tmp_path / "ioaz.yaml"
    assert DecideConfig().trial_rounds == 1
    p.write_text("decide:\n  trial_rounds: 4\n")
    assert config_from_doc(load_file(p)).trial_rounds == 4
    for bad in ("0", "21", "2.5", "many"):
        p.write_text(f"decide:\n  goal: throughput\n  trial_rounds: {bad}\n")
        with pytest.raises(ValidationError, match=rf"{p}:3: .*trial_rounds"):
            config_from_doc(load_file(p))


def test_ioazctl_shows_the_round_under_way(tmp_path: Path) -> None:
    out = io.StringIO()
    _format_trials({"under_way": {
        "cell": "8", "base": "cfq", "candidate": "stream", "base_bytes_per_s": 2e6,
        "measured": [2.1e6], "windows": 3, "round": 2, "rounds": 4, "gains": [0.07],
        "measuring": "cfq"}, "done": []}, out)
    assert out.getvalue() == (
        "trial under way: stream in place of cfq for cell 8, round 2 of 4, 1 of 3 windows "
        "measured, cfq measured again as the next round's base, gains so far +7%\n")
