"""The flip-flop guard's test: whether switching to a policy again would go round a verdict
cycle (damping.py holds the switch when it would)."""
from __future__ import annotations

from typing import Protocol

from .trial import mostly_new


class Switched(Protocol):
    """What this module reads of damping's DeviceState (which imports this module)."""

    @property
    def policy(self) -> str | None: ...
    @property
    def history(self) -> tuple[tuple[float, str | None, str, tuple[int, ...]], ...]: ...
    @property
    def cycle(self) -> tuple[str, ...]: ...


def cycle(state: Switched, wanted: str, now: float, hold_s: float,
          stay_s: float, pids: tuple[int, ...] = ()) -> tuple[list[str], float, float] | None:
    """A verdict cycle: the switches went A -> B -> A, or A -> B -> C -> A, with B (and C)
    left within stay_s, `wanted` is B again, and the return to A is less than hold_s ago.
    Returns the cycle's policies, how long B lasted and how long ago A came back.

    One return is a phase coming back; going again at once is a cycle. A verdict that reads
    features each scheduler shapes can want B under A and A under B (a model's), or hop
    through three (postmark's class on maxtor40: under sstf it reads 1/sequential/write,
    under anticipatory 4/sequential/write, under stream 4/random/write), and each policy
    then lasts only the dwell. A B that lasted longer was a phase of the workload, and B
    again is its return. So is a B wanted again by a window most of whose processes (`pids`,
    when the source names them) had not driven the device in the windows before B was left:
    a cycle is one workload going round; phases that come round quickly bring their own
    programs."""
    h = state.history
    left = next((i for i in range(len(h) - 1, 0, -1) if h[i][1] == wanted), None)
    if left is None:
        return None
    t_in, start, into, _ = h[left - 1]
    t_left, then = h[left][0], h[left][3]
    if into != wanted or start != state.policy or now - h[-1][0] >= hold_s:
        return None
    if mostly_new(pids, then):
        return None
    path = [start or "", wanted] + [to for _, _, to, _ in h[left:]]
    # a cycle the guard held: its policies stayed long only because the guard held them
    held_before = set(path) <= set(state.cycle)
    # B and everything since it was left stayed briefly: the device has been hopping
    hopping = t_left - t_in < stay_s and \
        all(h[j][0] - h[j - 1][0] < stay_s for j in range(left + 1, len(h)))
    if not (hopping or held_before):
        return None
    return path, t_left - t_in, now - h[-1][0]
