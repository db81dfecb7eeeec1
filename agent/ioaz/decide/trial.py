"""Trials: measuring a near-tie cell's runner-up on the device itself.

A matrix cell holds the policy that won across the calibration workloads of its class; when
it won by a few points, which of the two serves *this* workload better is not settled by the
matrix. Worse, some classes are shaped by the scheduler serving them: the simulator's
database mix (8 random readers, a synchronous log writer) reads as 8/random/read under cfq,
whose slices starve the log writer, and as 8/sequential/write under stream, which serves it
4 times faster. Each scheduler's view calls for itself, so a matrix alone never leaves the
worse one (agent/ioaz/sim/README.md).

So, once a device has stayed in one cell under that cell's policy for `trial_after_windows`
judged windows, and the cell's runner-up trailed by under `trial_margin_points`, ioaz
switches to the runner-up for `trial_windows` judged windows and compares the goal's
measure with the same number of windows just before. It keeps the runner-up for that cell
when it did at least `trial_min_gain` better, and goes back otherwise. Either way that
policy is not tried again in that cell on that device for `trial_retry_s`.

One round of a few windows cannot tell a small gain from a workload's own swings (an
application through a file system moves 20% more or less from one 3-window stretch to the
next; docs/testbed.md, fifteenth run). With `trial_rounds` R > 1 the trial alternates: the
candidate, the cell's policy again, the candidate, ..., each round's gain taken against the
policy's windows just before it, so a workload's drift falls on both sides. After R rounds
the candidate is kept when the mean gain reaches trial_min_gain / sqrt(R), the same bar
against chance for a mean of R rounds; it goes back at once, before R, when it is behind by
the bar for the rounds so far.

A cell whose policy no measurement chose (no calibration workload fell in its class, or
none won clearly: source kind judgement) is a guess, and the workloads of the class may
want anything. With `trial_unclear`, such a cell also gets the policies that won the
matrix's measured cells, one trial each, after its runner-up, until one is kept: an
application through a file system can fall in a class the raw-disk calibration never ran,
and want a scheduler the calibration gave to other classes (docs/testbed.md, twelfth run:
bfq on dbench and sysbench at drive depth 1). With `trial_measured`, a cell a measurement
chose gets them too: the calibration measured its own workloads of the class, and another
workload of it can want another scheduler (fourteenth run: dbench's cell, once measured on
raw-disk writers, names stream; bfq serves dbench better). A trial is abandoned (going back) when
the workload changes under it, the comparison would not be fair. That is judged by who the
processes are, or by their count when the source does not say who (diskstats).

A candidate that is clearly worse is not measured to the end: when the mean of its windows so
far is below the lowest of the settled windows just before the trial (the cell's policy's,
trial_after_windows of them) by trial_min_gain, it goes back at once. Were the two the same,
a window would fall under all N settled windows by chance once in N + 1 (1 in 21 at the
default), and by a further 10% far less often; a steady workload's loser (S's ten readers at
half speed under stream) is told in its first window instead of three, and a workload whose
windows swing (dbench's bursts) sets its own floor low enough never to cut a trial short. In
a trial of rounds this holds for the first round: later ones are judged against their own base.

A window of the trial that moves over BURST times the highest of those settled windows
abandons it: that is the workload bursting (dbench's write-back), and would decide the trial
whichever policy is on trial.

A gain is kept only when it clears the workload's own swings too: the settled windows before
the trial say how much one window moves from the next under the same policy (their
coefficient of variation), hence how far apart two means of trial_windows windows fall by
chance (that times sqrt(2 / trial_windows)); the bar is NOISE_Z times that when it is over
trial_min_gain. On a steady workload trial_min_gain stays the bar. On dbench three windows
of mq-deadline 10% ahead of three of stream were kept and read 0.86-0.94 of bfq
(docs/testbed.md, twenty-first run); the 20 windows before its trials vary with a
coefficient of variation of 0.2 to 1.6, a bar of +36% to +267% (twenty-second run).

Trials are bounded by their own cap, `max_trials_per_hour`, not by the switch budget: a
trial that finds nothing gives its two switches back as soon as it has measured, and the
budget is for the verdicts' switches, which a trial must not starve later in the hour.

Only throughput and mean have a measure every window can give: the bytes the device moved
(IOAZ's mean is the mean per-process rate, the same ordering while the processes are the
same). min and max need each process's bytes, which the probe does not count, and latency
percentiles from log2 histograms are too coarse to tell 10% apart: no trials for those goals.

Pure, as damping.py: no clock, no sysfs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..classify.features import pids_over_share
from ..classify.types import WindowFeatures
from .config import DecideConfig
from .verdict import Verdict

TRIAL_GOALS = ("throughput", "mean")
SETTLED_MAX = 60   # settled windows' measures kept for a trial's floor (settled_kept)
# A trial window that moves this many times the highest settled window before the trial is a
# burst of the workload's (dbench's write-back), not a scheduler's gain: the largest gain of
# one scheduler over another known for these workloads is 3.2x (Xu & Jiang's par-read,
# seeds/002), about 2x on the testbed's kernel (bfq on S's ten readers).
BURST = 4.0
# A gain is kept when over NOISE_Z standard errors of the difference of two stretches' means,
# as the settled windows before the trial estimate it (one-sided, about 1 in 40 by chance);
# from at least NOISE_WINDOWS of them, else trial_min_gain alone.
NOISE_Z = 2.0
NOISE_WINDOWS = 5


@dataclass(frozen=True)
class Trial:
    """A trial under way: the candidate (the cell's runner-up, or an alternative) is in
    force and being measured."""

    cell: str              # "matrix name:cell key" the trial is for
    base: str              # the cell's policy, in force before
    candidate: str         # the policy on trial
    base_value: float      # mean measure over the judged windows just before, bytes/s
    processes: str         # the class's process bucket when it started
    started: float
    values: tuple[float, ...] = ()   # the measure in each judged window of this stretch
    pids: tuple[int, ...] = ()       # the processes of the windows before; () unknown
    # trial_rounds > 1: each round's gain so far, and whether this stretch measures the
    # cell's policy again (the base of the next round) rather than the candidate
    gains: tuple[float, ...] = ()
    measuring_base: bool = False
    # the lowest measure of the settled windows before the trial (0: none): under it by
    # trial_min_gain, a candidate's stretch is a clear loser's before it ends (clear_loser)
    floor: float = 0.0
    # the highest of them (0: none): a window over BURST times it is a burst (burst)
    ceiling: float = 0.0
    # their noise: the relative standard error of one stretch's gain (stretch_noise)
    noise: float = 0.0


@dataclass(frozen=True)
class TrialResult:
    cell: str
    base: str
    candidate: str
    at: float
    kept: bool
    gain: float | None     # candidate / base - 1; None when the trial was abandoned
    why: str


def trial_outcome(result: TrialResult) -> str:
    """kept | given_back | abandoned (the label of ioaz_trials_total)."""
    return "kept" if result.kept else "abandoned" if result.gain is None else "given_back"


def measure(features: WindowFeatures, goal: str) -> float | None:
    """The goal's measure in one window, or None for goals trials do not serve."""
    if goal not in TRIAL_GOALS:
        return None
    return features.read_bytes_per_s + features.write_bytes_per_s


def active_pids(features: WindowFeatures) -> tuple[int, ...]:
    """The processes that submitted at least the window's share cut of its bios (the cut its
    process count used); () when the source does not say (diskstats).

    Processes (TGIDs), not threads, though the class counts threads: this says which workload
    drives the device, and a threaded server's pool (per-request or recycled workers) changes
    its thread ids while it stays the same workload; its process ids stay."""
    return pids_over_share(features.process_bios, features.process_share)


def other_processes(trial: Trial, pids: tuple[int, ...]) -> str | None:
    """Why a trial window is another workload's, judged by who drives it: fewer than half
    of this window's processes drove the device in the settled windows before. A workload
    keeps its processes under any scheduler (the windows before cover those a scheduler
    serves in turns); a phase that follows in the same class, a new program, brings new
    ones."""
    if not mostly_new(pids, trial.pids):
        return None
    seen = set(trial.pids) & set(pids)
    return (f"{len(seen)} of this window's {len(pids)} processes drove the device before: "
            "another workload")


def mostly_new(pids: tuple[int, ...], before: tuple[int, ...]) -> bool:
    """Fewer than half of a window's processes were among those before: another workload.
    False when either is unknown (diskstats names no process)."""
    return bool(pids and before) and 2 * len(set(pids) & set(before)) < len(pids)


def cell_id(verdict: Verdict) -> str | None:
    if verdict.cell is None:
        return None
    return f"{verdict.matrix or ''}:{verdict.cell}"


def live_results(results: tuple[TrialResult, ...], now: float,
                 config: DecideConfig) -> tuple[TrialResult, ...]:
    return tuple(r for r in results if now - r.at < config.trial_retry_s)


def kept_for(verdict: Verdict, results: tuple[TrialResult, ...]) -> TrialResult | None:
    """A trial on this device that found a candidate better than the cell's policy."""
    cid = cell_id(verdict)
    return next((r for r in results if r.kept and r.cell == cid and r.base == verdict.policy),
                None)


def candidates(verdict: Verdict, goal: str, settled: int, recent: tuple[float, ...],
               results: tuple[TrialResult, ...], config: DecideConfig) -> tuple[str, ...]:
    """The policies to try now in this window's cell, in order; () when no trial is due.
    `settled`: consecutive judged windows in this cell with its policy in force; `recent`:
    the measure in the last of them. First, for a model's verdict, the matrix's policy for
    the cell when the model chose another; then the cell's runner-up, when it trailed by under
    trial_margin_points; then the verdict's alternatives, with trial_unclear in a cell whose
    policy is a judgement and with trial_measured in a measured one. Each is tried once per
    trial_retry_s, and none once one was kept for the cell."""
    if settled < config.trial_after_windows or len(recent) < config.trial_windows:
        return ()
    return wanted_trials(verdict, goal, results, config)


def wanted_trials(verdict: Verdict, goal: str, results: tuple[TrialResult, ...],
                  config: DecideConfig) -> tuple[str, ...]:
    """The policies this window's cell still wants tried, however long it has settled: what
    candidates() returns once enough windows settled. () when trials are off, the cell was
    tried within trial_retry_s (`results`), or it has nothing to try."""
    if config.trial_margin_points <= 0 or goal not in TRIAL_GOALS:
        return ()
    cid = cell_id(verdict)
    if cid is None:
        return ()
    mine = [r for r in results if r.cell == cid]
    if any(r.kept for r in mine):
        return ()
    wanted: list[str] = []
    if verdict.second_opinion is not None:
        wanted.append(verdict.second_opinion)
    if verdict.runner_up is not None and near_runner_up(verdict.runner_up, verdict, config) \
            and verdict.runner_up not in wanted:
        wanted.append(verdict.runner_up)
    if alternatives_wanted(verdict, config):
        wanted += [a for a in verdict.alternatives if a not in wanted]
    tried = {r.candidate for r in mine}
    return tuple(c for c in wanted if c not in tried and c != verdict.policy)


def near_runner_up(policy: str, verdict: Verdict, config: DecideConfig) -> bool:
    """Whether this policy is tried as the cell's runner-up, within trial_margin_points of
    its policy (a runner-up further behind can still be tried as one of the alternatives)."""
    return policy == verdict.runner_up and verdict.margin_points is not None \
        and verdict.margin_points < config.trial_margin_points


def alternatives_wanted(verdict: Verdict, config: DecideConfig) -> bool:
    """Whether this cell tries the matrix's other measured winners: a judgement with
    trial_unclear, a measurement with trial_measured (a paper's table has no measured cells,
    so no alternatives either)."""
    return (config.trial_unclear and verdict.source_kind == "judgement") or \
        (config.trial_measured and verdict.source_kind == "measured")


def stretch_noise(settled: tuple[float, ...], windows: int) -> float:
    """The relative standard error of a gain measured as the mean of `windows` windows
    against the mean of as many before, were the policy the same: the settled windows'
    coefficient of variation times sqrt(2 / windows). 0 from fewer than NOISE_WINDOWS."""
    n = len(settled)
    mean = sum(settled) / n if n else 0.0
    if n < NOISE_WINDOWS or mean <= 0 or windows < 1:
        return 0.0
    sd = math.sqrt(sum((x - mean) ** 2 for x in settled) / (n - 1))
    return sd / mean * math.sqrt(2 / windows)


def round_threshold(rounds: int, config: DecideConfig, noise: float = 0.0) -> float:
    """The gain a mean over this many rounds must reach: one round's bar is trial_min_gain,
    or NOISE_Z times the workload's own noise (stretch_noise) when that is higher; the mean
    of k rounds, each against its own base just before, has 1/sqrt(k) of the noise, so the
    same bar for chance is that over sqrt(k)."""
    return max(config.trial_min_gain, NOISE_Z * noise) / math.sqrt(rounds)


def settled_kept(config: DecideConfig) -> int:
    """How many settled windows' measures a device keeps: those a trial's base is the mean of
    (trial_windows), and all those it waits for (trial_after_windows) for the floor, up to
    SETTLED_MAX."""
    return max(config.trial_windows, min(config.trial_after_windows, SETTLED_MAX))


def clear_loser(trial: Trial, values: tuple[float, ...], config: DecideConfig) -> bool:
    """Whether the candidate's windows so far show a loser already: their mean is under the
    lowest settled window before the trial by trial_min_gain (see the module's docstring).
    In the first round only: the floor is what the device did just before it, and later
    rounds have their own base, which a drifting workload may have moved (the rounds are
    there to cancel that)."""
    if trial.measuring_base or trial.gains or not values or trial.floor <= 0:
        return False
    return sum(values) / len(values) < trial.floor * (1 - config.trial_min_gain)


def burst(trial: Trial, value: float) -> str | None:
    """Why a trial window is a burst of the workload's rather than its scheduler's doing
    (over BURST times the highest settled window before the trial), or None. Such a window
    would decide the trial whatever the candidate is worth, so the trial is abandoned: a
    burst in dbench's bfq trial read as +1481% (docs/testbed.md, nineteenth run)."""
    if trial.ceiling <= 0 or value <= BURST * trial.ceiling:
        return None
    return (f"a window moved {value / 1e6:.2f} MB/s, over {BURST:g} times the highest of the "
            f"settled windows before the trial ({trial.ceiling / 1e6:.2f} MB/s): a burst of "
            "the workload's, not the scheduler's gain")


def overdue(trial: Trial, now: float, config: DecideConfig) -> str | None:
    """Why a trial has gone on too long to finish (past trial_max_s for each of its
    stretches: 2 * trial_rounds - 1), or None. Only judged windows measure it, so on a device
    mostly idle or too quiet to judge a trial could keep its candidate in force for minutes;
    what it measured by then is too far from the windows it is compared with."""
    stretches = 2 * max(1, config.trial_rounds) - 1
    limit = config.trial_max_s * stretches
    if config.trial_max_s <= 0 or now - trial.started <= limit:
        return None
    return (f"{len(trial.values)} of {config.trial_windows} windows judged in "
            f"{now - trial.started:.0f} s (trial_max_s {config.trial_max_s:g} a stretch): "
            "the device is too quiet to measure it")


def after_round(gains: tuple[float, ...], config: DecideConfig, noise: float = 0.0) -> str:
    """keep | back | again, once a round of the candidate has been measured. After the last
    round (trial_rounds) it is kept when the mean gain reaches round_threshold; before it,
    it goes back at once when it is behind by as much (a clear loser is not measured
    further), and measures another round otherwise. With one round: kept at trial_min_gain."""
    k = len(gains)
    mean = sum(gains) / k
    bar = round_threshold(k, config, noise)
    if k >= config.trial_rounds:
        return "keep" if mean >= bar else "back"
    return "back" if mean <= -bar else "again"


def conclude(trial: Trial, gains: tuple[float, ...], now: float,
             config: DecideConfig) -> TrialResult:
    """The trial's result once after_round says keep or back."""
    gain = sum(gains) / len(gains)
    bar = round_threshold(len(gains), config, trial.noise)
    kept = after_round(gains, config, trial.noise) == "keep"
    # say where the bar comes from when the workload's swings set it
    swings = (f", twice the swing of {100 * trial.noise:.0f}% the settled windows show"
              if NOISE_Z * trial.noise > config.trial_min_gain else "")
    if config.trial_rounds == 1:
        value = sum(trial.values) / len(trial.values)
        why = (f"{trial.candidate} moved {value / 1e6:.2f} MB/s over {len(trial.values)} "
               f"windows against {trial.base_value / 1e6:.2f} MB/s under {trial.base} just "
               f"before ({100 * gain:+.0f}%; kept at {100 * bar:+.0f}% or more{swings})")
    else:
        rounds = ", ".join(f"{100 * g:+.0f}%" for g in gains)
        n = f"{len(gains)} rounds" if len(gains) > 1 else "1 round"
        why = (f"{trial.candidate} against {trial.base} in {n} of "
               f"{len(trial.values)} windows, each against the windows under {trial.base} "
               f"just before: {rounds}; mean {100 * gain:+.1f}% (kept at "
               f"{100 * round_threshold(config.trial_rounds, config, trial.noise):+.1f}% "
               f"or more over {config.trial_rounds} rounds{swings}"
               + ("" if kept or len(gains) >= config.trial_rounds else
                  f"; behind by {100 * bar:.1f}% or more: no more rounds") + ")")
    return TrialResult(trial.cell, trial.base, trial.candidate, now, kept, gain, why)


def lost_early(t: Trial, values: tuple[float, ...], now: float,
               config: DecideConfig) -> TrialResult:
    """The result of a trial whose candidate fell under the settled windows' floor
    (clear_loser, first round only: its gain is this stretch's), before its stretch ended."""
    mean = sum(values) / len(values)
    gain = (mean / t.base_value - 1) if t.base_value > 0 else 0.0
    n = f"{len(values)} window" + ("s" if len(values) > 1 else "")
    why = (f"{t.candidate} moved {mean / 1e6:.2f} MB/s over {n}, under the lowest of the "
           f"windows settled under {t.base} before the trial ({t.floor / 1e6:.2f} MB/s) by "
           f"more than {100 * config.trial_min_gain:.0f}%: a clear loser, not measured "
           f"further ({100 * gain:+.0f}% against {t.base_value / 1e6:.2f} MB/s)")
    return TrialResult(t.cell, t.base, t.candidate, now, False, gain, why)
