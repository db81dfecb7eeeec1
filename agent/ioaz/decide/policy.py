"""Damping: from this window's verdict and the device's state to a Decision (switch or hold).

Pure: no clock, no sysfs. `now` is passed in (seconds, any epoch), so ioazd and the
simulator drive the same code. The verdict comes from any VerdictProvider; this module only
decides whether acting on it now is wise:

  manual / paused        the administrator (or someone behind our back) owns the device
  pin                    the administrator's policy, until it expires
  idle / too_few_requests  nothing to judge: the window is not evidence
  cooldown               a window right after a switch measures the switch, not the workload
  hysteresis             the same verdict in N consecutive judged windows (fewer,
                         first_choice_windows, while the scheduler is the one found at start)
  dwell                  a minimum time on a scheduler before leaving it
  flip_flop              after A -> B -> A where B lasted under flip_flop_stay_s, B again
                         only return_hold_s after the return (a verdict the scheduler
                         itself shapes can cycle)
  budget                 at most K automatic switches per sliding hour
"""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..classify.types import WindowFeatures
from .config import DecideConfig
from .policies import PolicyTable, Resolution, resolve
from .rules import DeviceInfo, goal_for
from .verdict import Verdict, VerdictProvider

HOUR_S = 3600.0


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
    # the last two automatic switches, (time, from, to), oldest first (flip-flop guard)
    history: tuple[tuple[float, str | None, str], ...] = ()
    # two policies the flip-flop guard has held a cycle between; their returns stay guarded
    # however long the hold made one of them last, until a third policy is chosen
    cycle: tuple[str, ...] = ()
    available: tuple[str, ...] = ()       # queue/scheduler choices; () = unknown
    note: str = ""                        # why the mode is what it is (manual, pin)

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
    reason: str                       # machine reason (see module docstring), or "matrix"
    text: str                         # human explanation
    policy: str | None             # the policy in force after this decision
    previous: str | None           # the policy in force before it
    goal: str
    verdict: Verdict | None
    resolution: Resolution | None  # set when switching: scheduler, knobs, fallback
    features: dict[str, Any]
    workload_class: dict[str, str] | None
    state: DeviceState                # the state to keep for the next window

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


def request_count(f: WindowFeatures) -> int:
    """Requests completed in the window; derived from iops when the source gives no count."""
    return f.requests if f.requests else round(f.iops * f.window_s)


def step(features: WindowFeatures, state: DeviceState, config: DecideConfig,
         provider: VerdictProvider, now: float,
         policies: PolicyTable | None = None) -> Decision:
    """Decide one window for one device. The returned Decision.state assumes a switch is
    carried out; if the actuator fails, keep on_switch_failed(...) instead."""
    notes: list[str] = []
    if state.mode is Mode.PINNED and state.pin and state.pin.until is not None \
            and now >= state.pin.until:
        notes.append(f"pin on {state.pin.policy} expired")
        state = replace(state, mode=Mode.AUTO, pin=None, candidate=None, streak=0, note="")
    goal = goal_for(state.info.name, state.goal, config.goals, config.goal)
    state = replace(state, switches=tuple(t for t in state.switches if now - t < HOUR_S))

    def out(action: str, reason: str, text: str, new_state: DeviceState,
            verdict: Verdict | None = None, resolution: Resolution | None = None,
            ) -> Decision:
        return Decision(
            device=state.info.name, now=now, action=action, reason=reason,
            text="; ".join(notes + [text]), policy=new_state.policy, previous=state.policy,
            goal=goal, verdict=verdict, resolution=resolution,
            features=features.observe_dict(),
            workload_class=features.workload_class.axes() if features.workload_class else None,
            state=new_state,
        )

    if state.mode is Mode.MANUAL:
        return out("hold", "manual", f"manual: left alone until resumed ({state.note})"
                   if state.note else "manual: left alone until resumed", state)
    if state.mode is Mode.PAUSED:
        return out("hold", "paused", "paused by the administrator", state)

    if state.mode is Mode.PINNED and state.pin:
        pin = state.pin
        left = "" if pin.until is None else f", {pin.until - now:.0f} s left"
        if state.policy == pin.policy:
            return out("hold", "pin", f"pinned to {pin.policy}{left}", state)
        res = resolve(pin.policy, policies, state.available) if policies and state.available \
            else None
        if res is not None and res.scheduler is None:
            return out("hold", "unavailable", f"pinned to {pin.policy}, but {res.reason}", state,
                       resolution=res)
        # The administrator asked for it: no hysteresis, dwell or budget, but it is counted.
        return out("switch", "pin", f"pinned to {pin.policy}{left}",
                   _switched(state, pin.policy, now), resolution=res)

    # -- auto ----------------------------------------------------------------------------
    n = request_count(features)
    if features.iops < config.idle_iops or n == 0:
        return out("hold", "idle", f"idle ({features.iops:.1f} IO/s < {config.idle_iops:g}): "
                                   "nothing to judge", state)
    if n < config.min_requests:
        return out("hold", "too_few_requests",
                   f"{n} requests < {config.min_requests}: too few to judge", state)
    if state.last_switch is not None and now - state.last_switch < config.cooldown_s:
        return out("hold", "cooldown",
                   f"{now - state.last_switch:.1f} s after a switch (< {config.cooldown_s:g} s):"
                   " this window measures the switch, not the workload", state)

    verdict = provider.verdict(features, state.info, goal)
    wanted = verdict.policy
    if wanted is None:
        return out("hold", "no_verdict", verdict.text, state, verdict)
    if wanted == state.policy:
        return out("hold", verdict.provider.split(":")[0],
                   f"{verdict.text}; already in force",
                   replace(state, candidate=None, streak=0), verdict)

    streak = state.streak + 1 if wanted == state.candidate else 1
    state2 = replace(state, candidate=wanted, streak=streak)
    found = state.last_switch is None   # the scheduler found at start: nothing chosen yet
    needed = min(config.first_choice_windows, config.hysteresis_windows) if found \
        else config.hysteresis_windows
    if streak < needed:
        return out("hold", "hysteresis",
                   f"{verdict.text}; seen {streak} of {needed} windows"
                   + (" (first choice)" if found else ""), state2, verdict)
    if state.since is not None and now - state.since < config.min_dwell_s:
        return out("hold", "dwell",
                   f"{verdict.text}; only {now - state.since:.1f} s on the current scheduler "
                   f"(< {config.min_dwell_s:g} s)", state2, verdict)
    if _flip_flop(state, wanted, now, config.return_hold_s, config.flip_flop_stay_s):
        (t0, a, b), (t1, _, _) = state.history
        return out("hold", "flip_flop",
                   f"{verdict.text}; {a} -> {b} -> {a} ({b} left after {t1 - t0:.0f} s), the "
                   f"return {now - t1:.0f} s ago: {b} again only {config.return_hold_s:g} s "
                   "after it", replace(state2, cycle=tuple(sorted((a or "", b)))), verdict)
    if len(state.switches) >= config.max_switches_per_hour:
        return out("hold", "budget",
                   f"{verdict.text}; switch budget spent ({len(state.switches)} of "
                   f"{config.max_switches_per_hour} in the last hour)", state2, verdict)
    res = resolve(wanted, policies, state.available) if policies and state.available else None
    if res is not None and res.scheduler is None:
        return out("hold", "unavailable", f"{verdict.text}; {res.reason}", state2, verdict, res)
    text = verdict.text + (f"; {res.reason}" if res is not None and res.fell_back else "")
    return out("switch", verdict.provider.split(":")[0], text,
               _switched(state, wanted, now, auto=True), verdict, res)


def _flip_flop(state: DeviceState, wanted: str, now: float, hold_s: float,
               stay_s: float) -> bool:
    """True when the last two switches went A -> B -> A with B left within stay_s, `wanted`
    is B again, and the return to A is less than hold_s ago. One return is a phase coming
    back; going again at once is a cycle (a model whose verdict reads features that each
    scheduler shapes differently can want B under A and A under B, and then B lasts only the
    dwell). A B that lasted longer was a phase of the workload, and B again is its return."""
    if len(state.history) < 2:
        return False
    (t0, a, b), (t1, b2, a2) = state.history
    held_before = state.cycle == tuple(sorted((a or "", b)))
    return a == a2 and b == b2 and wanted == b and state.policy == a and now - t1 < hold_s \
        and (t1 - t0 < stay_s or held_before)


def _switched(state: DeviceState, policy: str, now: float, auto: bool = False) -> DeviceState:
    history = (state.history + ((now, state.policy, policy),))[-2:] if auto else ()
    cycle = state.cycle if auto and policy in state.cycle else ()
    return replace(state, policy=policy, since=now, last_switch=now, candidate=None, streak=0,
                   switches=state.switches + (now,), history=history, cycle=cycle)


# -- what the administrator and the daemon do to a state (pure too) --------------------------

def initial_state(info: DeviceInfo, available: tuple[str, ...] = ()) -> DeviceState:
    return DeviceState(info=info, available=tuple(available))


def on_switch_failed(before: DeviceState, now: float) -> DeviceState:
    """The actuator could not switch: the old policy stays, but the attempt uses the budget
    and starts a cooldown, so a failing device is not hammered every window."""
    return replace(before, last_switch=now, candidate=None, streak=0,
                   switches=before.switches + (now,))


def pin(state: DeviceState, policy: str, now: float,
        duration_s: float | None = None) -> DeviceState:
    return replace(state, mode=Mode.PINNED,
                   pin=Pin(policy, None if duration_s is None else now + duration_s),
                   candidate=None, streak=0, note=f"pinned to {policy}")


def unpin(state: DeviceState) -> DeviceState:
    if state.mode is not Mode.PINNED:
        return state
    return replace(state, mode=Mode.AUTO, pin=None, candidate=None, streak=0, note="")


def pause(state: DeviceState) -> DeviceState:
    return replace(state, mode=Mode.PAUSED, candidate=None, streak=0, note="paused")


def to_manual(state: DeviceState, why: str) -> DeviceState:
    """Someone changed the scheduler or a knob behind our back (seen by the actuator)."""
    return replace(state, mode=Mode.MANUAL, candidate=None, streak=0, note=why)


def resume(state: DeviceState, now: float) -> DeviceState:
    """Back to auto. After manual the policy in force is unknown (someone else chose it):
    forget ours and count dwell from now."""
    if state.mode is Mode.MANUAL:
        return replace(state, mode=Mode.AUTO, pin=None, policy=None, since=now,
                       candidate=None, streak=0, note="")
    return replace(state, mode=Mode.AUTO, pin=None, candidate=None, streak=0, note="")


def set_goal(state: DeviceState, goal: str | None) -> DeviceState:
    """`ioazctl goal DEV GOAL` (None: back to the configured goal). Evidence gathered for
    the old goal's verdict does not carry over."""
    return replace(state, goal=goal, candidate=None, streak=0)


__all__ = [
    "Decision",
    "DeviceState",
    "Mode",
    "Pin",
    "initial_state",
    "on_switch_failed",
    "pause",
    "pin",
    "request_count",
    "resume",
    "set_goal",
    "step",
    "to_manual",
    "unpin",
]
