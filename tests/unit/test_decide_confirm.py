"""How many windows confirm a switch when only the matrix decides (decide/confirm.py): a derived
matrix's cell carries every measured policy's share of the best, so a scheduler in force that
its calibration measured far behind is left as quickly as a sure share model would leave it.

The matrix: 8 processes -> stream, its calibration measuring deadline at 0.2 of it and cfq at
0.8; 4 -> deadline with no shares (a matrix from the papers, or derived before shares).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ioaz.decide import Decision, MatrixVerdicts, initial_state, load_matrix, step
from ioaz.decide.rules import Rule
from test_decide_trial import CFG, HDD, feats

MATRIX = """\
kind: matrix
name: confirm-test
description: for tests of how many windows confirm a switch
axes: [processes]
sources:
  test: {cite: written for this test, kind: measured}
default_source: test
goals:
  throughput:
    "1": fcfs
    "4": deadline
    "8": {policy: stream, shares: {stream: 1.0, cfq: 0.8, deadline: 0.2}}
    16+: deadline
"""
CONFIG = replace(CFG, hysteresis_windows=3, trial_margin_points=0)


def provider(tmp_path: Path) -> MatrixVerdicts:
    p = tmp_path / "confirm-test.yaml"
    p.write_text(MATRIX)
    return MatrixVerdicts((Rule(0, {"throughput": p.name}),), {p.name: load_matrix(p)})


def windows(prov: MatrixVerdicts, policy: str, last_cell: str | None, n: int = 4,
            procs: str = "8") -> list[Decision]:
    """n windows of `procs` with `policy` in force, chosen by ioaz long before (neither the
    first choice's rule nor the dwell applies), the window before them of `last_cell`."""
    state = replace(initial_state(HDD), policy=policy, since=0.0, last_switch=0.0,
                    last_cell=last_cell)
    out = []
    for i in range(n):
        d = step(feats(procs, 2.0), state, CONFIG, prov, 1000.0 + i)
        out.append(d)
        state = d.state
    return out


def switched_at(ds: list[Decision]) -> list[int]:
    return [i for i, d in enumerate(ds) if d.switch]


def test_the_matrix_verdict_carries_its_cells_measured_shares(tmp_path: Path) -> None:
    prov = provider(tmp_path)
    v = prov.verdict(feats("8", 2.0), HDD, "throughput")
    assert v.policy == "stream" and dict(v.shares) == {"stream": 1.0, "cfq": 0.8, "deadline": 0.2}
    assert prov.verdict(feats("4", 2.0), HDD, "throughput").shares == ()


def test_a_policy_its_cell_measured_far_behind_is_left_in_the_new_workloads_first_window(
        tmp_path: Path) -> None:
    prov = provider(tmp_path)
    ds = windows(prov, "deadline", last_cell="4")
    assert switched_at(ds) == [0] and ds[0].policy == "stream" and ds[0].reason == "matrix"
    assert ("deadline in force at 0.20 of the best by this cell's calibration, the workload "
            "new (the window before was 4): its first window decides") in ds[0].text
    # inside the cell (the window before was of cell 8 too): decisive_windows, 2
    ds = windows(prov, "deadline", last_cell="8")
    assert switched_at(ds) == [1]
    assert "seen 1 of 2 windows (deadline in force: 0.20 of the best by this cell's " \
        "calibration)" in ds[0].text


def test_a_policy_near_the_best_or_not_measured_waits_the_full_hysteresis(
        tmp_path: Path) -> None:
    prov = provider(tmp_path)
    # cfq at 0.8 of the best is no decisive lead, in a new workload or not
    assert switched_at(windows(prov, "cfq", last_cell="4")) == [2]
    # a scheduler the cell never measured (sstf) has no share to judge by
    assert switched_at(windows(prov, "sstf", last_cell="4")) == [2]
    # a cell without shares (4 processes: deadline) leaves stream in force after 3 windows
    ds = windows(prov, "stream", last_cell="8", procs="4")
    assert switched_at(ds) == [2] and ds[2].policy == "deadline"
    # decisive_share 0 turns the rule off for the matrix too
    state = replace(initial_state(HDD), policy="deadline", since=0.0, last_switch=0.0,
                    last_cell="4")
    config = replace(CONFIG, decisive_share=0.0)
    d = step(feats("8", 2.0), state, config, prov, 1000.0)
    assert d.action == "hold" and "seen 1 of 3" in d.text
