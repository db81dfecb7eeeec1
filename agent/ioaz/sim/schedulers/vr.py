"""V(R) (Carroll 3.2, Table 3.1): SSTF with a penalty for reversing the head direction.

One sector-sorted queue for reads and writes together. From the head (the end of the last
dispatched request) the candidates are the first request at or after it and the last one before
it; the distance against the current direction is multiplied by rev_penalty (Carroll divides the
other one; the comparison is the same). rev_penalty 1 is SSTF, 0 is SCAN (never reverse while a
request lies ahead). Ties keep the current direction. Deadlines (sync_expire, async_expire) are
checked only when a batch starts (the first dispatch, the first after the queue ran empty, and
after every fifo_batch dispatches), the expired request starting the new batch, to avoid the
deadline avalanche. The exact rules are those of tests/vectors/README.md, shared with kmod/.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import _TIE, Decision, Scheduler, SortedQueue


class VR(Scheduler):
    name = "vr"
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "rev_penalty": 10, "fifo_batch": 16, "sync_expire_ms": 500.0, "async_expire_ms": 5000.0,
        "deadlines": 1}

    def __init__(self, device: object = None, head_sector: int = 0, direction_up: bool = True,
                 **tunables: object) -> None:
        super().__init__(device, **tunables)
        self.sorted = SortedQueue()
        self.fifo: tuple[deque[Request], deque[Request]] = (deque(), deque())  # sync, async
        self.head = head_sector
        self.up = direction_up
        self.batching = 0
        self.n = 0
        self.expired = 0   # dispatches forced by an expired deadline (the kernel's counter)
        self.rev = self.t["rev_penalty"]
        self.fifo_batch = self.t["fifo_batch"]
        self.deadlines = self.t["deadlines"]
        self.expire = (self.t["sync_expire_ms"] / 1e3, self.t["async_expire_ms"] / 1e3)

    def __len__(self) -> int:
        return self.n

    def add(self, rq: Request, now: float) -> Request | None:
        tgt = self.merge_or_stamp(rq)
        if tgt is not None:
            return tgt
        rq.deadline = now + (self.expire[0] if rq.sync else self.expire[1])
        self.sorted.add(rq)
        (self.fifo[0] if rq.sync else self.fifo[1]).append(rq)
        self._ends[rq.sector + rq.nsec] = rq
        self.n += 1
        return None

    def earliest_expired(self, now: float) -> Request | None:
        """The request with the earliest deadline if that deadline has passed."""
        best = None
        for f in self.fifo:
            while f and f[0].issue != -1.0:   # lazily drop ones already dispatched
                f.popleft()
            if f and f[0].deadline <= now and (best is None or f[0].deadline < best.deadline):
                best = f[0]
        return best

    def pending(self) -> Request | None:
        """The plain V(R) choice, deadlines aside (what the stream scheduler compares with)."""
        return self._nearest()[0] if self.n else None

    def _nearest(self) -> tuple[Request, bool]:
        """The V(R) choice and whether it lies at or after the head (the new direction)."""
        sq = self.sorted
        head = self.head
        i = bisect_left(sq.keys, head * _TIE)
        reqs = sq.reqs
        nxt = reqs[i] if i < len(reqs) else None
        prv = reqs[i - 1] if i > 0 else None
        if nxt is None:
            assert prv is not None
            return prv, False
        if prv is None:
            return nxt, True
        fwd, back = nxt.sector - head, head - prv.sector
        r = self.rev
        if self.up:
            if r == 0 or fwd <= back * r:
                return nxt, True
            return prv, False
        if r == 0 or back <= fwd * r:
            return prv, False
        return nxt, True

    def dispatch(self, now: float) -> Decision:
        if self.n == 0:
            return None
        rq = None
        if self.batching >= self.fifo_batch or self.batching == 0:
            self.batching = 0
            if self.deadlines:
                rq = self.earliest_expired(now)
                if rq is not None:
                    self.expired += 1
        if rq is None:
            rq = self._nearest()[0]
        self.take(rq)
        return rq

    def take(self, rq: Request) -> None:
        """Hand rq to the device: the head moves to its end, in the direction it went."""
        self.up = rq.sector >= self.head
        self.batching += 1
        e = rq.sector + rq.nsec
        self.head = e
        self.sorted.remove(rq)
        ends = self._ends
        if ends.get(e) is rq:   # untrack()
            del ends[e]
        rq.issue = 0.0
        self.n -= 1
        if self.n == 0:
            self.batching = 0  # the next dispatch after an empty queue starts a batch
