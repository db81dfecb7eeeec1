"""The requests in flight over as long as the elevator may hold one: the depth of a class.

A window's depth is Little's law over the requests that completed in it (features.py): the
sum of their latencies over the window's length. A request the elevator holds back counts
only in the window it completes in. mq-deadline serves sixteen sequential writers 8 deep one
at a time; the others' requests wait out their write_expire (ioazd sets it to twice the p99,
10 s and more), so for the windows between two expiries the disk completes one writer's
requests and the class's depth reads one each, "shallow", the depth of sixteen writers that
wait for each request, whose cell names stream. The class then follows the scheduler in
force, as the process count did before class membership (horizon.py): in the
hundred-and-eighteenth run ioazd switched the writers to mq-deadline and, 6 s later, back.

Over the elevator's longest expiry every held request has completed once, so the mean over
that span counts them: the depth a class reads is the larger of the window's and that mean.
Elevators that hold nothing longer than a window (bfq's fifo_expire_* are 125-250 ms, kyber
and none have none) leave the window's depth alone; so does a workload that goes from deep
to shallow, until its deep windows are older than the expiry.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable

# The history kept, and so the longest span averaged: a minute. ioazd's write_expire on a busy
# disk was 10-40 s (twice the p99, times 10); its ceiling (knob_rules: 30 s read, 300 s write)
# would hold a class deep for five minutes after its workload went shallow.
KEPT_S = 60.0


class HeldDepth:
    """One device's depth (requests in flight, and the reads' part of them) window by window,
    over the last KEPT_S seconds."""

    def __init__(self) -> None:
        self.recent: deque[tuple[float, float, float | None]] = deque()

    def add(self, window_s: float, depth: float | None, read_depth: float | None) -> None:
        """One window's avg_depth and read_depth; a window without a depth (diskstats'
        sampling gap, nothing completed) restarts the history."""
        if depth is None:
            self.recent.clear()
            return
        self.recent.append((window_s, depth, read_depth))
        span = sum(s for s, _, _ in self.recent)
        while len(self.recent) > 1 and span - self.recent[0][0] >= KEPT_S:
            span -= self.recent.popleft()[0]

    def over(self, expiry_s: float | Callable[[], float]) -> tuple[float, float | None] | None:
        """The mean depth and read depth over the newest windows that cover the elevator's
        expiry (at most KEPT_S), or None when the expiry is no longer than the newest window
        (nothing is held past it) or there is only that window. A callable expiry is read
        only when there is more than one window to average."""
        if len(self.recent) < 2:
            return None
        expiry = expiry_s() if callable(expiry_s) else expiry_s
        if expiry <= self.recent[-1][0]:
            return None
        span = depth = read = 0.0
        reads_known = True
        for s, d, r in reversed(self.recent):
            span, depth = span + s, depth + d * s
            if r is None:
                reads_known = False
            else:
                read += r * s
            if span >= expiry:
                break
        return depth / span, (read / span if reads_known else None)
