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
that span counts them: the depth a class reads is the larger of the window's and that mean,
each window's requests scaled by its own bios per request, over the windows in which the
class's direction had requests (the readers of the phase before the writers held none of
theirs: in the hundred-and-nineteenth run a mean over them read the writers shallow again).
Elevators that hold nothing longer than a window (bfq's fifo_expire_* are 125-250 ms, kyber
and none have none) leave the window's depth alone; so does a workload that goes from deep
to shallow, until its deep windows are older than the expiry.

It only delays the misreading, it does not end it: a mean of completions cannot see requests
still held, so between a switch to mq-deadline and the first expiry it falls window by
window (from four deep windows before the switch it read the writers shallow about five
windows after; the hundred-and-twentieth run's second round went back to stream so). The
probe's count of the requests in flight sees them (probe/in_flight.py): where the expiry is
longer than a window, those in flight at both the window's ends are a bound beside this mean,
and the class takes the larger (observe.py, Observer._classify; the hundred-and-twenty-first
run held the writers deep through every round so).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable

# The history kept, and so the longest span averaged: a minute. ioazd's write_expire on a busy
# disk was 10-40 s (twice the p99, times 10); its ceiling (knob_rules: 30 s read, 300 s write)
# would hold a class deep for five minutes after its workload went shallow.
KEPT_S = 60.0
# A window counts for a direction when that direction kept at least one bio in flight on
# average: par-read's readers wrote 0.03 (metadata, rounding), and their windows, counted as
# the writers', diluted the writers' mean (hundred-and-twentieth run).
MIN_BIOS = 1.0


class HeldDepth:
    """One device's bios in flight window by window (requests scaled by the window's bios per
    request, as the class's depth is), whole and by direction, over the last KEPT_S seconds."""

    def __init__(self) -> None:
        # (window_s, bios in flight: whole, reads, writes; None where the source cannot split)
        self.recent: deque[tuple[float, float, float | None, float | None]] = deque()

    def add(self, window_s: float, whole: float | None, reads: float | None = None,
            writes: float | None = None) -> None:
        """One window's bios in flight; a window without a depth (nothing measured)
        restarts the history."""
        if whole is None:
            self.recent.clear()
            return
        self.recent.append((window_s, whole, reads, writes))
        span = sum(w[0] for w in self.recent)
        while len(self.recent) > 1 and span - self.recent[0][0] >= KEPT_S:
            span -= self.recent.popleft()[0]

    def over(self, expiry_s: float | Callable[[], float], read: bool | None) -> float | None:
        """The mean bios in flight of one direction (None: both) over the windows of the
        last expiry (at most KEPT_S) in which that direction had MIN_BIOS or more: a window
        of another workload (readers before the writers came) says nothing of what the
        elevator holds of this one. None when the expiry is no longer than the newest window
        (nothing is held past it), or fewer than two windows count. A callable expiry is read
        only when there is more than one window."""
        if len(self.recent) < 2:
            return None
        expiry = expiry_s() if callable(expiry_s) else expiry_s
        if expiry <= self.recent[-1][0]:
            return None
        reach = total = counted = 0.0
        n = 0
        for s, whole, reads, writes in reversed(self.recent):
            reach += s
            bios = whole if read is None or reads is None or writes is None else \
                reads if read else writes
            if bios >= MIN_BIOS:
                total, counted, n = total + bios * s, counted + s, n + 1
            if reach >= expiry:
                break
        return total / counted if n >= 2 else None
