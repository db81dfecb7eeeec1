"""The noise floor: one run's per-workload best scored on a second run of the same workloads
(another simulator seed), and `calibrate --first-rep` that measures those second runs."""
from __future__ import annotations

import pytest
from ioaz.lab.main import main as lab
from ioaz.learn.dataset import read_rows
from ioaz.learn.noise import noise_floor, rep_spread, workload_floors
from test_learn_dataset import row


def test_the_floor_is_what_one_runs_best_loses_on_the_other():
    rows = [row("w", "a", 10.0, rep=0), row("w", "b", 9.0, rep=0),
            row("w", "a", 8.0, rep=1), row("w", "b", 10.0, rep=1),
            # the same winner in both runs: no loss to noise
            row("v", "a", 5.0, rep=0), row("v", "b", 4.0, rep=0),
            row("v", "a", 6.0, rep=1), row("v", "b", 4.5, rep=1)]
    # w: run 0 picks a, which gets 8 of 10 in run 1; run 1 picks b, 9 of 10 in run 0
    assert workload_floors(rows, "mean") == pytest.approx({"w": (0.2 + 0.1) / 2, "v": 0.0})
    assert noise_floor(rows, "mean") == pytest.approx(0.075)
    # median of |a - b| / mean(a, b) over the four (workload, candidate) pairs:
    # 2/9, 1/9.5, 1/5.5, 0.5/4.25 -> the middle two
    assert rep_spread(rows, "mean") == pytest.approx((1 / 5.5 + 0.5 / 4.25) / 2)


def test_no_second_run_no_floor_and_incomplete_runs_are_left_out():
    one = [row("w", "a", 10.0), row("w", "b", 9.0)]
    assert noise_floor(one, "mean") is None and rep_spread(one, "mean") is None
    # run 1 lacks candidate b: it cannot say which candidate it would have picked
    half = one + [row("w", "a", 3.0, rep=1)]
    assert noise_floor(half, "mean") is None


def test_calibrate_first_rep_runs_the_same_workloads_with_another_seed(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    common = ["calibrate", "--model", "carroll-hp72", "--quick", "--workloads", "2",
              "--seconds", "1", "--candidates", "none,cfq"]
    assert lab(common + ["--out", str(a)]) == 0
    assert lab(common + ["--out", str(b), "--first-rep", "1"]) == 0
    ra, rb = read_rows(a), read_rows(b)
    assert {r.rep for r in ra} == {0} and {r.rep for r in rb} == {1}
    assert [(r.workload, r.candidate) for r in ra] == [(r.workload, r.candidate) for r in rb]
    assert [r.requests for r in ra] != [r.requests for r in rb]     # other randomness
    assert noise_floor(ra + rb, "mean") is not None
