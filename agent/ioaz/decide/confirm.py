"""How many windows in a row a new verdict must win before ioazd switches to it.

hysteresis_windows by default. first_choice_windows when nobody chose the scheduler in force for
this workload: the one found at start or the idle policy's (and the model and matrix agree), or
one chosen for the workload before, when a sure share model, or without one the matrix cell's
calibration, rates it under decisive_share of the best in the first window of a new cell.
decisive_windows for such a lead inside one cell.
"""
from __future__ import annotations

from .config import DecideConfig
from .verdict import Verdict


def new_workload(verdict: Verdict, last_cell: str | None) -> str | None:
    """The last window's cell when this window's verdict is for another one (a workload
    other than the one the scheduler in force was chosen for); None otherwise."""
    if verdict.cell is None or last_cell is None or verdict.cell == last_cell:
        return None
    return last_cell


def decisive(verdict: Verdict, in_force: str | None, config: DecideConfig) -> float | None:
    """The share of the best the verdict gives the scheduler in force, when it is under
    decisive_share: a sure share model's, when the matrix names the model's policy too (a
    second opinion is a near tie, as for first choices), or the matrix cell's measured one
    when the matrix decided and no model leaned elsewhere; None otherwise."""
    if in_force is None or verdict.second_opinion is not None or verdict.leaning is not None:
        return None
    share = dict(verdict.shares).get(in_force)
    return share if share is not None and share < config.decisive_share else None


def windows_needed(quick: bool, lag: float | None, before: str | None,
                   config: DecideConfig) -> int:
    """quick: a first choice the model and matrix agree on; lag: decisive(); before:
    new_workload(). A decisive lead in a new workload's window needs no more than a first
    choice: the scheduler in force was chosen for the workload before, so, like the one found
    at start, nobody chose it for this one. Inside one cell the same lead is a verdict that
    moved under a running workload, and waits decisive_windows."""
    if quick or (lag is not None and before is not None):
        return min(config.first_choice_windows, config.hysteresis_windows)
    if lag is not None:
        return min(config.decisive_windows, config.hysteresis_windows)
    return config.hysteresis_windows


def rated_by(verdict: Verdict) -> str:
    """Whose share decisive() read: the model's, or the matrix cell's calibration."""
    return "this cell's calibration" if verdict.provider == "matrix" else "the model"
