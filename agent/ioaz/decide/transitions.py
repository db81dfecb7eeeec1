"""Transitions: what the administrator and the daemon do to a device's state between
windows, beside step() in damping.py, which is what a window does to it.

The administrator's modes (pin, unpin, pause, resume, a goal of the device's own), the
actuator's findings (a switch failed, the scheduler was changed behind our back, a new
policy was already the scheduler running), a device's state at start and the idle policy
set before the first window (at_start). Pure, as damping.py: `now` is passed in.
"""
from __future__ import annotations

from dataclasses import replace

from ..device import DeviceInfo
from .config import DecideConfig
from .damping import Decision, DeviceState, Mode, Pin
from .idle import due as idle_due
from .idle import idle_switched
from .policies import PolicyTable
from .reasons import Reason
from .rules import goal_for


def initial_state(info: DeviceInfo, available: tuple[str, ...] = ()) -> DeviceState:
    return DeviceState(info=info, available=tuple(available))


def at_start(state: DeviceState, config: DecideConfig, now: float,
             policies: PolicyTable | None, in_flight: int | None) -> Decision | None:
    """The idle policy at ioazd's start, on a device with nothing in flight (`in_flight`
    None: not known, so not quiet). At start ioazd cannot know how long the disk has been
    quiet; a start is most often a boot, before the services whose processes the idle policy
    is for, and a workload already running gets its first choice in its first window.
    None when nothing is to be done."""
    if state.mode is not Mode.AUTO or in_flight != 0:
        return None
    quiet = replace(state, quiet_since=now - config.idle_after_s)
    res = idle_due(quiet, config, now, policies)
    if res is None:
        return None
    goal = goal_for(state.info.name, state.goal, config.goals, config.goal)
    new = replace(idle_switched(quiet, res.policy, now), quiet_since=now)
    return Decision(device=state.info.name, now=now, action="switch",
                    reason=Reason.IDLE_POLICY,
                    text=f"nothing in flight at start: {res.policy}, the idle policy, so that "
                         "the next workload's processes start under it",
                    policy=new.policy, previous=state.policy, goal=goal, verdict=None,
                    resolution=res, features={}, workload_class=None, state=new)


def on_switch_failed(before: DeviceState, now: float) -> DeviceState:
    """The actuator could not switch: the old policy stays, but the attempt uses the budget
    and starts a cooldown, so a failing device is not hammered every window; on a quiet
    disk (the idle policy's switch) the quiet count starts again."""
    return replace(before, last_switch=now, candidate=None, streak=0,
                   switches=before.switches + (now,),
                   quiet_since=None if before.quiet_since is None else now)


def on_same_scheduler(before: DeviceState, after: DeviceState) -> DeviceState:
    """A verdict's new policy turned out to be realised by the scheduler already running (the
    kernel's mq-deadline, found at start, taken for `deadline`): the disk's scheduler did not
    change, so its dwell and cooldown clocks and the switch budget stay as they were. Else
    the first window's verdict, taken at once from a scheduler found at start, would hold
    the next, real change for a whole dwell."""
    return replace(after, since=before.since, last_switch=before.last_switch,
                   switches=before.switches)


def after_rest_window(state: DeviceState) -> DeviceState:
    """A window the daemon lengthened at rest (daemon/rest.py) counts for nothing a trial
    measures against: a long window averages away the swings a trial's ordinary windows show,
    so a base or a noise bar from long windows would let a trial keep on chance. The cell
    stays the one settled in; its count of settled windows starts again."""
    return replace(state, settled_n=0, recent=())


def pin(state: DeviceState, policy: str, now: float,
        duration_s: float | None = None) -> DeviceState:
    return replace(state, mode=Mode.PINNED,
                   pin=Pin(policy, None if duration_s is None else now + duration_s),
                   candidate=None, streak=0, trial=None, note=f"pinned to {policy}")


def unpin(state: DeviceState) -> DeviceState:
    if state.mode is not Mode.PINNED:
        return state
    return replace(state, mode=Mode.AUTO, pin=None, candidate=None, streak=0, note="")


def pause(state: DeviceState) -> DeviceState:
    return replace(state, mode=Mode.PAUSED, candidate=None, streak=0, trial=None,
                   note="paused")


def to_manual(state: DeviceState, why: str) -> DeviceState:
    """Someone changed the scheduler or a knob behind our back (seen by the actuator)."""
    return replace(state, mode=Mode.MANUAL, candidate=None, streak=0, trial=None, note=why,
                   started_under=False, kept_by=())


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
    return replace(state, goal=goal, candidate=None, streak=0, settled=None, settled_n=0,
                   recent=())


__all__ = [
    "after_rest_window",
    "initial_state",
    "on_same_scheduler",
    "on_switch_failed",
    "pause",
    "pin",
    "resume",
    "set_goal",
    "to_manual",
    "unpin",
]
