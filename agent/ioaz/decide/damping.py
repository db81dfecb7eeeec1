"""Damping: from this window's verdict and the device's state to a Decision (switch or hold).

Pure: no clock, no sysfs. `now` is passed in (seconds, any epoch), so ioazd and the
simulator drive the same code. The verdict comes from any VerdictProvider; this module only
decides whether acting on it now is wise. Every decision carries one of reasons.Reason (the
table there says what each means): the administrator's modes first, then windows that are
no evidence, then the damping (cooldown, hysteresis, dwell, flip-flop guard, switch budget),
then trials of a near-tie cell's runner-up or an unclear cell's alternatives (trial.py).
"""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..classify.types import WindowFeatures
from ..device import DeviceInfo
from .config import DecideConfig
from .confirm import decisive, new_workload, rated_by, windows_needed
from .flipflop import cycle as flip_flop_cycle
from .idle import due as idle_due
from .idle import idle_switched, leaving_held
from .idle import kept_by as idle_kept_by
from .idle import quiet as idle_quiet
from .idle import rearmed as idle_rearmed
from .policies import PolicyTable, Resolution, resolve
from .reasons import Reason
from .rules import goal_for
from .trial import (
    Trial,
    TrialResult,
    active_pids,
    after_round,
    burst,
    candidates,
    cell_id,
    clear_loser,
    conclude,
    kept_for,
    live_results,
    lost_early,
    measure,
    near_runner_up,
    other_processes,
    overdue,
    settled_kept,
    stretch_noise,
    wanted_trials,
)
from .verdict import Verdict, VerdictProvider

HOUR_S = 3600.0
HISTORY = 4   # automatic switches the flip-flop guard remembers: a cycle of up to 3 policies
# judged windows whose processes name the workload (the flip-flop guard, a trial's baseline):
# a scheduler that serves a few processes at a time shows only those in one window
PID_WINDOWS = 10


class Mode(str, enum.Enum):
    AUTO = "auto"
    PINNED = "pinned"
    MANUAL = "manual"   # changed behind our back; left alone until resumed
    PAUSED = "paused"   # the administrator said stop


@dataclass(frozen=True)
class Pin:
    policy: str
    until: float | None = None  # None: until unpinned


@dataclass(frozen=True)
class DeviceState:
    """What decide remembers about one device between windows."""

    info: DeviceInfo
    mode: Mode = Mode.AUTO
    policy: str | None = None          # policy ioaz put in force; None: not touched yet
    since: float | None = None         # when the current scheduler took effect (dwell);
                                          # None: no dwell limit (untouched since start)
    goal: str | None = None            # `ioazctl goal` override of the configured goal
    pin: Pin | None = None
    candidate: str | None = None       # the verdict being confirmed ...
    streak: int = 0                       # ... in this many consecutive judged windows
    last_switch: float | None = None   # for the cooldown
    switches: tuple[float, ...] = ()      # switch times within the last hour (budget)
    # the last HISTORY automatic switches, (time, from, to, the processes that drove the
    # device in the PID_WINDOWS judged windows before), oldest first (flip-flop guard)
    history: tuple[tuple[float, str | None, str, tuple[int, ...]], ...] = ()
    # the policies the flip-flop guard has held a cycle between; their returns stay guarded
    # however long the hold made one of them last, until another policy is chosen
    cycle: tuple[str, ...] = ()
    available: tuple[str, ...] = ()       # queue/scheduler choices; () = unknown
    # the scheduler running while ioaz has put no policy in force (policy None): the kernel's
    # default or an operator's, which the within-noise rule keeps as it keeps ioaz's own
    found: str | None = None
    note: str = ""                        # why the mode is what it is (manual, pin)
    # trials (trial.py): the cell settled in with its policy in force, for how many
    # consecutive judged windows, and the goal's measure in the last of them (settled_kept)
    settled: str | None = None
    settled_n: int = 0
    recent: tuple[float, ...] = ()
    trial: Trial | None = None            # a trial under way
    trials: tuple[TrialResult, ...] = ()  # the trials of the last trial_retry_s
    trial_starts: tuple[float, ...] = ()  # trial start times within the last hour (their cap)
    # the processes of each of the last PID_WINDOWS judged windows: who the workload is, for
    # the flip-flop guard and a trial's baseline (trial_after_windows >= PID_WINDOWS keeps
    # those windows all settled ones when a trial starts)
    window_pids: tuple[tuple[int, ...], ...] = ()
    # the idle policy (idle.py): since when the device has been quiet (idle or too few
    # requests to judge), None while windows are judged; and whether the policy in force was
    # set for a quiet disk, not chosen for the workload now driving it
    quiet_since: float | None = None
    idle_set: bool = False
    # the policy the last workload to start under the idle policy left it for, at once: a
    # disk that goes quiet under it again is left for that workload's return
    idle_left_for: str | None = None
    # the idle policy is in force and the workload driving the device started under it and
    # kept it (idle.leaving_held); its processes, the latest first; and the verdicts of the
    # last PID_WINDOWS judged windows that had one
    started_under: bool = False
    kept_by: tuple[int, ...] = ()
    verdicts: tuple[str, ...] = ()
    # the cell of the last window with a verdict: a window in another cell is a new workload,
    # which the scheduler in force was not chosen for (confirm.new_workload)
    last_cell: str | None = None

    def workload_pids(self) -> tuple[int, ...]:
        """The processes that drove the device in the last PID_WINDOWS judged windows."""
        return tuple(sorted(set().union(*self.window_pids)))

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["mode"] = self.mode.value
        return d


@dataclass(frozen=True)
class Decision:
    """One device, one window: what to do and why."""

    device: str
    now: float
    action: str                       # "switch" | "hold"
    reason: Reason                    # why (reasons.py), a str: labels and JSON as before
    text: str                         # human explanation
    policy: str | None             # the policy in force after this decision
    previous: str | None           # the policy in force before it
    goal: str
    verdict: Verdict | None
    resolution: Resolution | None  # set when switching: scheduler, knobs, fallback
    features: dict[str, Any]
    workload_class: dict[str, str] | None
    state: DeviceState                # the state to keep for the next window
    # nothing under way or due on the device: no switch being confirmed, no trial running or
    # wanted in this cell, or the administrator's mode; a longer window would lose nothing
    # (ioazd's rest, daemon/rest.py)
    calm: bool = False

    @property
    def switch(self) -> bool:
        return self.action == "switch"

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.device, "now": self.now, "action": self.action,
            "reason": self.reason, "text": self.text, "policy": self.policy,
            "previous": self.previous, "goal": self.goal,
            "verdict": self.verdict.as_dict() if self.verdict else None,
            "resolution": self.resolution.as_dict() if self.resolution else None,
            "features": self.features, "class": self.workload_class,
            "state": self.state.as_dict(),
        }


def _by(verdict: Verdict) -> Reason:
    """The verdict's source as a reason: a model's (provider "model:NAME") or the matrix's."""
    return Reason.MODEL if verdict.provider.startswith("model") else Reason.MATRIX


def request_count(f: WindowFeatures) -> int:
    """Requests completed in the window; derived from iops when the source gives no count."""
    return f.requests if f.requests else round(f.iops * f.window_s)


def step(features: WindowFeatures, state: DeviceState, config: DecideConfig,
         provider: VerdictProvider, now: float,
         policies: PolicyTable | None = None) -> Decision:
    """Decide one window for one device. The returned Decision.state assumes a switch is
    carried out; if the actuator fails, keep on_switch_failed(...) (transitions.py)
    instead."""
    notes: list[str] = []
    if state.mode is Mode.PINNED and state.pin and state.pin.until is not None \
            and now >= state.pin.until:
        notes.append(f"pin on {state.pin.policy} expired")
        state = replace(state, mode=Mode.AUTO, pin=None, candidate=None, streak=0, note="")
    goal = goal_for(state.info.name, state.goal, config.goals, config.goal)
    state = replace(state, switches=tuple(t for t in state.switches if now - t < HOUR_S),
                    trial_starts=tuple(t for t in state.trial_starts if now - t < HOUR_S))

    def out(action: str, reason: Reason, text: str, new_state: DeviceState,
            verdict: Verdict | None = None, resolution: Resolution | None = None,
            calm: bool = False) -> Decision:
        return Decision(
            device=state.info.name, now=now, action=action, reason=reason,
            text="; ".join(notes + [text]), policy=new_state.policy, previous=state.policy,
            goal=goal, verdict=verdict, resolution=resolution,
            features=features.observe_dict(),
            workload_class=features.workload_class.axes() if features.workload_class else None,
            state=new_state, calm=calm and action == "hold",
        )

    if state.mode is Mode.MANUAL:
        return out("hold", Reason.MANUAL, f"manual: left alone until resumed ({state.note})"
                   if state.note else "manual: left alone until resumed", state, calm=True)
    if state.mode is Mode.PAUSED:
        return out("hold", Reason.PAUSED, "paused by the administrator", state, calm=True)

    if state.mode is Mode.PINNED and state.pin:
        pin = state.pin
        left = "" if pin.until is None else f", {pin.until - now:.0f} s left"
        if state.policy == pin.policy:
            return out("hold", Reason.PIN, f"pinned to {pin.policy}{left}", state, calm=True)
        res = _realise(pin.policy, policies, state)
        if res is not None and res.scheduler is None:
            return out("hold", Reason.UNAVAILABLE, f"pinned to {pin.policy}, but {res.reason}",
                       state, resolution=res)
        # The administrator asked for it: no hysteresis, dwell or budget, but it is counted.
        return out("switch", Reason.PIN, f"pinned to {pin.policy}{left}",
                   _switched(state, pin.policy, now), resolution=res)

    # -- auto ----------------------------------------------------------------------------
    if state.trial is not None:
        late = overdue(state.trial, now, config)
        if late is not None:
            return _trial_abandon(state, late, now, out, policies)
    n = request_count(features)
    # a quiet window with nothing being confirmed or tried: a longer one would lose nothing
    quiet = state.trial is None and state.candidate is None
    idle = features.iops < config.idle_iops or n == 0
    if idle or n < config.min_requests:
        state = idle_quiet(state, now)
        res = idle_due(state, config, now, policies)
        if res is not None:
            return _idle_switch(state, res, now, out)
        state = idle_rearmed(state, config, now)
        if idle:
            return out("hold", Reason.IDLE, f"idle ({features.iops:.3g} IO/s < "
                       f"{config.idle_iops:g}): nothing to judge", state, calm=quiet)
        return out("hold", Reason.TOO_FEW_REQUESTS,
                   f"{n} requests < {config.min_requests}: too few to judge", state, calm=quiet)
    # a workload starting: the first busy window after a quiet spell, driven by none of the
    # processes that drove the device before it (a lull in the same workload is judged; so is
    # every window when the source does not say who submits)
    pids = active_pids(features)
    starting = config.skip_start_window and state.quiet_since is not None and bool(pids) \
        and not set(pids) & set(state.workload_pids())
    state = replace(state, quiet_since=None, window_pids=(
        state.window_pids + (pids,))[-PID_WINDOWS:])
    if state.trial is not None:
        # who drives the device does not depend on the scheduler, so even a cooldown
        # window tells that a trial is measuring another workload: stop it at once
        moved = other_processes(state.trial, pids)
        if moved:
            return _trial_abandon(state, moved, now, out, policies)
    if state.last_switch is not None and not state.idle_set \
            and now - state.last_switch < config.cooldown_s:
        return out("hold", Reason.COOLDOWN,
                   f"{now - state.last_switch:.2f} s after a switch (< {config.cooldown_s:g} s):"
                   " this window measures the switch, not the workload", state)
    if starting and state.trial is None:
        return out("hold", Reason.STARTING,
                   "the first busy window after a quiet spell: it holds the programs "
                   "starting, not their workload", state)

    if state.trial is not None:
        return _trial_window(features, state, config, goal, now, out, policies)

    verdict = provider.verdict(features, state.info, goal)
    wanted = verdict.policy
    if wanted is None:
        return out("hold", Reason.NO_VERDICT, verdict.text, state, verdict,
                   calm=state.candidate is None)
    live = live_results(state.trials, now, config)
    kept = kept_for(verdict, live)
    if kept is not None:
        verdict = replace(verdict, policy=kept.candidate,
                          text=f"{verdict.text}; but a trial {now - kept.at:.0f} s ago kept "
                               f"{kept.candidate} for this cell on this device: {kept.why}")
        wanted = kept.candidate
    before = new_workload(verdict, state.last_cell)
    state = replace(state, verdicts=(state.verdicts + (wanted,))[-PID_WINDOWS:],
                    last_cell=verdict.cell)
    if wanted == state.policy:
        return _in_force(features, replace(state, trials=live), config, goal, now, verdict,
                         out, policies)
    if kept is None and state.policy is not None and state.policy in verdict.within_noise:
        return out("hold", Reason.WITHIN_NOISE,
                   f"{verdict.text}; {state.policy} in force is within the noise of {wanted} "
                   "(this cell's calibration, or the unsure model's margin): kept",
                   replace(state, candidate=None, streak=0, trials=live, idle_set=False),
                   verdict, calm=True)
    tied = _found_realises(state, verdict.within_noise, policies) if kept is None else ()
    if tied:
        return out("hold", Reason.WITHIN_NOISE,
                   f"{verdict.text}; {state.found}, the scheduler found running, realises "
                   f"{' and '.join(tied)}, within the noise of {wanted} in this cell's "
                   "calibration: kept",
                   replace(state, candidate=None, streak=0, trials=live), verdict, calm=True)

    streak = state.streak + 1 if wanted == state.candidate else 1
    state2 = replace(state, candidate=wanted, streak=streak, settled=None, settled_n=0,
                     recent=(), trials=live)
    # the scheduler found at start, or the idle policy (idle.py): nothing chosen for this
    # workload yet
    found = state.last_switch is None or state.idle_set
    # A model and the matrix that disagree on the window are a near tie (as for trials): one
    # window of it is no better evidence than a passing one, so the first choice waits for
    # the full hysteresis then, whichever of the two decided (an unsure model's leaning).
    quick = found and verdict.second_opinion is None and verdict.leaning is None
    lag = decisive(verdict, state.policy, config)
    fresh = lag is not None and before is not None
    needed = windows_needed(quick, lag, before, config)
    if streak < needed:
        first = "" if not found else " (first choice)" if quick else \
            f" (first choice; the matrix says {verdict.second_opinion})" \
            if verdict.second_opinion is not None else \
            f" (first choice; the model, unsure, leans to {verdict.leaning})"
        if lag is not None and not quick:
            first += f" ({state.policy} in force: {lag:.2f} of the best by {rated_by(verdict)})"
        return out("hold", Reason.HYSTERESIS,
                   f"{verdict.text}; seen {streak} of {needed} windows{first}", state2, verdict)
    held = leaving_held(state, wanted, active_pids(features), PID_WINDOWS)
    if held is not None:
        return out("hold", Reason.STARTED_UNDER, f"{verdict.text}; {held}", state2, verdict)
    if state.since is not None and now - state.since < config.min_dwell_s:
        return out("hold", Reason.DWELL,
                   f"{verdict.text}; only {now - state.since:.1f} s on the current scheduler "
                   f"(< {config.min_dwell_s:g} s)", state2, verdict)
    cyc = flip_flop_cycle(state, wanted, now, config.return_hold_s,
                          config.flip_flop_stay_s, active_pids(features))
    if cyc is not None:
        path, stay, ago = cyc
        return out("hold", Reason.FLIP_FLOP,
                   f"{verdict.text}; {' -> '.join(path)} ({wanted} left after {stay:.0f} s), "
                   f"the return {ago:.0f} s ago: {wanted} again only "
                   f"{config.return_hold_s:g} s after it",
                   replace(state2, cycle=tuple(sorted(set(path)))), verdict)
    if len(state.switches) >= config.max_switches_per_hour:
        return out("hold", Reason.BUDGET,
                   f"{verdict.text}; switch budget spent ({len(state.switches)} of "
                   f"{config.max_switches_per_hour} in the last hour)", state2, verdict)
    res = _realise(wanted, policies, state)
    if res is not None and res.scheduler is None:
        return out("hold", Reason.UNAVAILABLE, f"{verdict.text}; {res.reason}", state2,
                   verdict, res)
    text = verdict.text + (f"; {res.reason}" if res is not None and res.fell_back else "")
    if lag is not None and not quick and streak < config.hysteresis_windows:
        text += (f"; {state.policy} in force at {lag:.2f} of the best by {rated_by(verdict)}"
                 + (f", the workload new (the window before was {before}): its first "
                    "window decides" if fresh else f": {streak} windows decide"))
    return out("switch", _by(verdict), text,
               _switched(state, wanted, now, auto=True, pids=state.workload_pids()),
               verdict, res)


def _in_force(features: WindowFeatures, state: DeviceState, config: DecideConfig, goal: str,
              now: float, verdict: Verdict, out: Any,
              policies: PolicyTable | None) -> Decision:
    """The verdict is the policy in force: hold, count the window as settled in its cell,
    and start a trial of the cell's next candidate when one is due (trial.py)."""
    cid = cell_id(verdict)
    same = cid is not None and cid == state.settled
    value = measure(features, goal)
    recent = ((state.recent if same else ()) + (() if value is None else (value,)))
    # a workload that started under the idle policy and kept it (idle.leaving_held)
    started = state.started_under or state.idle_set
    state = replace(state, candidate=None, streak=0, settled=cid, idle_set=False,
                    started_under=started,
                    kept_by=idle_kept_by(state, state.workload_pids()) if started else (),
                    idle_left_for=None if state.idle_set else state.idle_left_for,
                    settled_n=state.settled_n + 1 if same else 1,
                    recent=recent[-settled_kept(config):])
    hold_text = f"{verdict.text}; already in force"
    tries = candidates(verdict, goal, state.settled_n, state.recent, state.trials, config)
    wc = features.workload_class
    if not tries or cid is None or wc is None or state.policy is None:
        # calm only when the cell wants no trial however long it settles: one that waits
        # for its settled windows needs them at the window's own length (daemon/rest.py)
        return out("hold", _by(verdict), hold_text, state, verdict,
                   calm=not wanted_trials(verdict, goal, state.trials, config))
    if state.since is not None and now - state.since < config.min_dwell_s:
        return out("hold", _by(verdict), hold_text, state, verdict)
    if len(state.trial_starts) >= config.max_trials_per_hour:
        return out("hold", _by(verdict), hold_text + f"; {_what(tries[0], verdict, config)} "
                   f"{tries[0]} is not tried: {len(state.trial_starts)} trials in the last hour "
                   f"(max_trials_per_hour {config.max_trials_per_hour})", state, verdict)
    # the first candidate this device can realise (a kmod elevator may not be loaded)
    cand, res = tries[0], None
    for c in tries:
        cand = c
        res = _realise(c, policies, state)
        if res is None or res.scheduler is not None:
            break
    if res is not None and res.scheduler is None:
        return out("hold", _by(verdict), hold_text + f"; {_what(cand, verdict, config)} "
                   f"{cand} cannot be tried: {res.reason}", state, verdict)
    base = state.recent[-config.trial_windows:]
    base_value = sum(base) / len(base)
    trial = Trial(cid, state.policy, cand, base_value, wc.processes, now,
                  pids=state.workload_pids(), floor=min(state.recent),
                  ceiling=max(state.recent),
                  noise=stretch_noise(state.recent, config.trial_windows))
    why = (f"the matrix chose it for this cell, the model {verdict.policy}"
           if cand == verdict.second_opinion else
           f"the cell's lead over it is {verdict.margin_points:g} points"
           if near_runner_up(cand, verdict, config) else
           "it won measured cells of this matrix, and no measurement chose this cell's policy"
           if verdict.source_kind == "judgement" else
           "it won measured cells of this matrix, and this cell was measured on the "
           "calibration's workloads, not this one")
    text = (f"{verdict.text}; settled {state.settled_n} windows: trying "
            f"{_what(cand, verdict, config)} {cand} ({why}) for {config.trial_windows} "
            f"windows against {base_value / 1e6:.2f} MB/s under {state.policy}"
            + (f", {config.trial_rounds} rounds in turns with {state.policy}"
               if config.trial_rounds > 1 else ""))
    return out("switch", Reason.TRIAL, text,
               replace(_switched(state, cand, now, trial=True), trial=trial,
                       trial_starts=state.trial_starts + (now,)),
               verdict, res)


def _what(policy: str, verdict: Verdict, config: DecideConfig) -> str:
    if policy == verdict.second_opinion:
        return "the matrix's choice"
    return "the runner-up" if near_runner_up(policy, verdict, config) else "the alternative"


def _trial_window(features: WindowFeatures, state: DeviceState, config: DecideConfig,
                  goal: str, now: float, out: Any,
                  policies: PolicyTable | None) -> Decision:
    """A judged window of a trial: measure it; after trial_windows of the candidate, keep it
    for the cell, go back to the cell's policy, or (trial_rounds > 1) measure the policy again
    as the next round's base; after trial_windows of that, the candidate again."""
    t = state.trial
    assert t is not None
    key = t.cell.rsplit(":", 1)[-1]
    wc = features.workload_class
    value = measure(features, goal)
    # Without the processes' ids (diskstats) the process count is all there is to tell
    # another workload by. With them it is not used: a scheduler that serves streams in
    # turns shows fewer processes per window, so the count moves under the trial itself.
    recount = not t.pids and wc is not None and wc.processes != t.processes
    if value is None or wc is None or recount:
        why = (f"the goal is now {goal}" if value is None else
               "no class this window" if wc is None else
               f"the processes went from {t.processes} to {wc.processes}: another workload")
        return _trial_abandon(state, why, now, out, policies)
    spike = burst(t, value)
    if spike is not None:
        return _trial_abandon(state, spike, now, out, policies)
    values = t.values + (value,)
    under = t.base if t.measuring_base else t.candidate
    rnd = f"round {len(t.gains) + 1} of {config.trial_rounds}, " \
        if config.trial_rounds > 1 else ""
    if len(values) < config.trial_windows and clear_loser(t, values, config):
        lost = lost_early(t, values, now, config)
        return _trial_back(state, lost, now, out, policies,
                           f"trial of {t.candidate} for cell {key}: {rnd}{lost.why}")
    if len(values) < config.trial_windows:
        against = "" if t.measuring_base else \
            f" against {t.base_value / 1e6:.2f} MB/s under {t.base}"
        return out("hold", Reason.TRIAL,
                   f"trial of {t.candidate} for cell {key}: {rnd}{under} window {len(values)} "
                   f"of {config.trial_windows}, {value / 1e6:.2f} MB/s{against}",
                   replace(state, trial=replace(t, values=values)))
    mean = sum(values) / len(values)
    if t.measuring_base:
        # the base of the next round, measured: the candidate again
        res = _realise(t.candidate, policies, state)
        again = replace(t, base_value=mean, values=(), measuring_base=False)
        return out("switch", Reason.TRIAL,
                   f"trial of {t.candidate} for cell {key}: {rnd}{t.base} moved "
                   f"{mean / 1e6:.2f} MB/s over {len(values)} windows: {t.candidate} again",
                   replace(_switched(state, t.candidate, now, trial=True), trial=again),
                   resolution=res)
    gains = t.gains + ((mean / t.base_value - 1) if t.base_value > 0 else 0.0,)
    done = replace(t, values=values, gains=gains)
    step_ = after_round(gains, config, t.noise)
    if step_ == "again":
        res = _realise(t.base, policies, state)
        return out("switch", Reason.TRIAL,
                   f"trial of {t.candidate} for cell {key}: {rnd}{t.candidate} moved "
                   f"{mean / 1e6:.2f} MB/s against {t.base_value / 1e6:.2f} under {t.base} "
                   f"({100 * gains[-1]:+.0f}%): {t.base} again for the next round's base",
                   replace(_switched(state, t.base, now, trial=True),
                           trial=replace(done, values=(), measuring_base=True)),
                   resolution=res)
    result = conclude(done, gains, now, config)
    if result.kept:
        return out("hold", Reason.TRIAL,
                   f"trial of {t.candidate} for cell {key}: {result.why}: {t.candidate} kept "
                   f"for this cell for {config.trial_retry_s:g} s",
                   replace(state, trial=None, trials=state.trials + (result,), settled=None,
                           settled_n=0, recent=()))
    return _trial_back(state, result, now, out, policies,
                       f"trial of {t.candidate} for cell {key}: {result.why}")


def _trial_abandon(state: DeviceState, why: str, now: float, out: Any,
                   policies: PolicyTable | None) -> Decision:
    t = state.trial
    assert t is not None
    result = TrialResult(t.cell, t.base, t.candidate, now, False, None, f"abandoned: {why}")
    return _trial_back(state, result, now, out, policies,
                       f"trial of {t.candidate} for cell {t.cell.rsplit(':', 1)[-1]} "
                       f"abandoned ({why})")


def _trial_back(state: DeviceState, result: TrialResult, now: float, out: Any,
                policies: PolicyTable | None, text: str) -> Decision:
    """Back to the cell's policy after a trial: part of the trial, so neither the budget
    nor the damping holds it."""
    if state.policy == result.base:
        return out("hold", Reason.TRIAL, f"{text}: {result.base} stays",
                   replace(state, trial=None, trials=state.trials + (result,)))
    res = _realise(result.base, policies, state)
    back = _switched(replace(state, trial=None, trials=state.trials + (result,)), result.base,
                     now, trial=True)
    return out("switch", Reason.TRIAL, f"{text}: back to {result.base}", back, resolution=res)


def _found_realises(state: DeviceState, tied: tuple[str, ...],
                    policies: PolicyTable | None) -> tuple[str, ...]:
    """The policies of `tied` that the scheduler found running realises on this device, while
    ioaz has put none in force. A switch away from it could gain nothing the cell's calibration
    could measure, as from a tied policy ioaz set; the simulator starts from the found
    scheduler's policy, so this is also where ioazd and the simulator agree. Scheduler names
    only: the knobs found are the kernel's, not a policy's."""
    if state.policy is not None or state.found is None:
        return ()
    return tuple(p for p in tied
                 if (r := _realise(p, policies, state)) is not None and r.scheduler == state.found)


def _realise(policy: str, policies: PolicyTable | None,
             state: DeviceState) -> Resolution | None:
    """How this device would realise `policy` (resolve), or None when the policy table or
    the device's scheduler choices are not known."""
    return resolve(policy, policies, state.available) if policies and state.available else None


def _switched(state: DeviceState, policy: str, now: float, auto: bool = False,
              trial: bool = False, pids: tuple[int, ...] = ()) -> DeviceState:
    """The state after a switch to `policy`. `auto`: a verdict's switch, kept for the
    flip-flop guard; `trial`: a trial's, which has its own cap (max_trials_per_hour) and
    leaves the budget and the flip-flop guard's record alone."""
    if trial:
        history, cycle, switches = state.history, state.cycle, state.switches
    else:
        history = (state.history + ((now, state.policy, policy, pids),))[-HISTORY:] \
            if auto else ()
        cycle = state.cycle if auto and policy in state.cycle else ()
        switches = state.switches + (now,)
    left_for = policy if auto and state.idle_set else state.idle_left_for
    return replace(state, policy=policy, since=now, last_switch=now, candidate=None, streak=0,
                   switches=switches, history=history, cycle=cycle,
                   settled=None, settled_n=0, recent=(), idle_set=False,
                   idle_left_for=left_for, started_under=False, kept_by=())


def _idle_switch(state: DeviceState, res: Resolution, now: float, out: Any) -> Decision:
    quiet_s = now - (state.quiet_since if state.quiet_since is not None else now)
    text = (f"quiet for {quiet_s:.0f} s: {res.policy}, the idle policy, so that the next "
            "workload's processes start under it")
    return out("switch", Reason.IDLE_POLICY, text, idle_switched(state, res.policy, now),
               resolution=res)


__all__ = [
    "Decision",
    "DeviceState",
    "Mode",
    "Pin",
    "request_count",
    "step",
]
