"""The idle policy: the scheduler a quiet disk that spins is left under, so that the next
workload's processes start under it.

Why: some schedulers serve a process well only when it starts under them. bfq creates a
process's queue at its first request; a switch to bfq creates every running process's queue
within milliseconds of the others, bfq marks queues created that close together for a
merge, and 0.6 s later merges them into one queue it never splits (bfq's stable merging,
traced in docs/testbed.md, forty-eighth run). On S's five sequential readers beside five
writers bfq set 10 or 30 s into the run moved 0.58-0.70x what bfq set before it moved, and
no bfq knob helps (forty-ninth run); a switch away from bfq to the others cost nothing that
was measured. So a disk that has been quiet (idle, or too few requests to judge) for
`idle_after_s` is set to `idle_policy`, and ioazd treats it as it treats the scheduler found
at start: nobody chose it for the workload that comes next, so the first choice takes
first_choice_windows, with no dwell. Disks that spin only: the reason is bfq's idling for
a seeking head, and the published guidance for SSDs is none or mq-deadline.

Pure, as damping.py: `now` is passed in.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol, TypeVar

from ..device import DeviceInfo
from .config import DecideConfig
from .policies import PolicyTable, Resolution, resolve
from .trial import mostly_new

# processes remembered as the workload that started under the idle policy and kept it
KEPT_BY = 64


class Quiet(Protocol):
    """What this module reads of damping's DeviceState (which imports this module)."""

    @property
    def info(self) -> DeviceInfo: ...
    @property
    def policy(self) -> str | None: ...
    @property
    def found(self) -> str | None: ...
    @property
    def quiet_since(self) -> float | None: ...
    @property
    def trial(self) -> Any: ...
    @property
    def switches(self) -> tuple[float, ...]: ...
    @property
    def idle_left_for(self) -> str | None: ...
    @property
    def idle_set(self) -> bool: ...
    @property
    def started_under(self) -> bool: ...
    @property
    def kept_by(self) -> tuple[int, ...]: ...
    @property
    def verdicts(self) -> tuple[str, ...]: ...
    @property
    def available(self) -> tuple[str, ...]: ...


State = TypeVar("State", bound=Quiet)


def wanted(state: Quiet, config: DecideConfig) -> str | None:
    """The idle policy this device would be set to when quiet, None when it gets none: no
    idle_policy configured, a disk that does not say it spins, the policy already in force,
    or in force the policy that the last workload to start under the idle policy left it
    for in its first choice. A disk whose one workload comes and goes (a nightly job, a
    client's bursts) would otherwise pay two switches and its first window under bfq each
    time; it pays them once."""
    policy = config.idle_policy
    if policy is None or state.info.rotational is not True or state.policy == policy:
        return None
    if state.policy is not None and state.policy == state.idle_left_for:
        return None   # the workload that left the idle policy for this one will be back
    return policy


def due(state: Quiet, config: DecideConfig, now: float,
        policies: PolicyTable | None) -> Resolution | None:
    """How to realise the idle policy now, or None when it is not due: the device quiet for
    idle_after_s (the start counts as quiet when nothing is in flight: the daemon says so),
    nothing being confirmed or tried, room left in the hour's budget for this switch and the
    next workload's, and a realisation the device offers that is not what already runs."""
    policy = wanted(state, config)
    if policy is None or state.quiet_since is None or state.trial is not None:
        return None
    if now - state.quiet_since < config.idle_after_s:
        return None
    if len(state.switches) + 2 > config.max_switches_per_hour:
        return None
    if policies is None or not state.available:
        return None
    res = resolve(policy, policies, state.available)
    if res.scheduler is None:
        return None
    if state.policy is None and state.found == res.scheduler:
        return None   # the scheduler found running is the idle policy's (its knobs the kernel's)
    return res


def kept_by(state: Quiet, now_pids: tuple[int, ...]) -> tuple[int, ...]:
    """The processes a workload that keeps the idle policy is known by: this window's
    workload first, then those before it, KEPT_BY at most (a server's busy processes, not
    every short-lived one a disk under bfq has served for days)."""
    return (now_pids + tuple(p for p in state.kept_by if p not in now_pids))[:KEPT_BY]


def leaving_held(state: Quiet, wanted: str, pids: tuple[int, ...],
                 windows: int) -> str | None:
    """Why leaving the idle policy for `wanted` waits, or None: the workload started under it
    and kept it, and `wanted` is the verdict in no more than half of its last `windows`
    judged windows. What that start gave its processes (their own bfq queues) a switch cannot
    give back. A window of mostly other processes (`pids`) is another workload: not held."""
    if not state.started_under or mostly_new(pids, state.kept_by):
        return None
    votes = state.verdicts.count(wanted)
    if 2 * votes > windows:
        return None
    return (f"the workload started under {state.policy}, the idle policy, and kept it: "
            f"{wanted} in {votes} of the last {windows} judged windows, not most of them")


def rearmed(state: State, config: DecideConfig, now: float) -> State:
    """A disk quiet for idle_after_s under the idle policy already: the workload that kept it
    is over, and the next one's processes start under it as after the idle policy's switch.
    Its first choice is as quick, and its verdicts count from its own first window."""
    if state.policy is None or state.policy != config.idle_policy or state.idle_set \
            or state.trial is not None or state.quiet_since is None \
            or now - state.quiet_since < config.idle_after_s:
        return state
    return replace(  # type: ignore[type-var]
        state, idle_set=True, started_under=False, kept_by=(), verdicts=(), candidate=None,
        streak=0)


def quiet(state: State, now: float) -> State:
    """A quiet window: the device has been quiet since the first of them in a row."""
    return state if state.quiet_since is not None else replace(  # type: ignore[type-var]
        state, quiet_since=now)


def idle_switched(state: State, policy: str, now: float) -> State:
    """The state after the switch to the idle policy. It counts in the hour's budget, but
    it is no choice of the damping's: `idle_set` gives the next workload's first choice
    first_choice_windows, no dwell (since None) and no cooldown (a switch on a quiet disk
    disturbs no window that follows), as from the scheduler found at start; and the
    flip-flop guard's record, whose cycles are a workload's, does not have it."""
    return replace(  # type: ignore[type-var]
        state, policy=policy, since=None, last_switch=now, candidate=None, streak=0,
        switches=state.switches + (now,), settled=None, settled_n=0, recent=(),
        idle_set=True, found=None, started_under=False, kept_by=())


__all__ = ["KEPT_BY", "due", "idle_switched", "kept_by", "leaving_held", "quiet", "rearmed",
           "wanted"]
