"""deadline with Linux mq-deadline semantics (Carroll 2.4.3, Table 2.2), without I/O priorities.

Reads and writes each have a sector-sorted queue and a FIFO of expiry times. Requests go out in
batches of up to fifo_batch in one direction, each the next in sector order after the previous
one (one-way elevator). A new batch picks its direction: reads unless writes are pending and have
been passed over writes_starved times. It starts at the next request in sector order, or at the
FIFO head if that has expired or the elevator has reached the end of the disk.
"""
from __future__ import annotations

from collections import deque
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import Decision, Scheduler, SortedQueue

READ, WRITE = 0, 1


class Deadline(Scheduler):
    name = "deadline"
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "read_expire_ms": 500.0, "write_expire_ms": 5000.0, "fifo_batch": 16, "writes_starved": 2}

    def __init__(self, device: object = None, **tunables: object) -> None:
        super().__init__(device, **tunables)
        self.sort = (SortedQueue(), SortedQueue())
        self.fifo: tuple[deque[Request], deque[Request]] = (deque(), deque())
        self.expire = (self.t["read_expire_ms"] / 1e3, self.t["write_expire_ms"] / 1e3)
        self.latest_pos = [0, 0]
        self.batching = 0
        self.starved = 0
        self.last_dir = READ
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add(self, rq: Request, now: float) -> Request | None:
        tgt = self.back_merge(rq)
        if tgt is not None:
            return tgt
        self._stamp(rq)
        d = WRITE if rq.write else READ
        rq.deadline = now + self.expire[d]
        self.sort[d].add(rq)
        self.fifo[d].append(rq)
        self.track(rq)
        self.n += 1
        return None

    def _fifo_head(self, d: int) -> Request | None:
        f = self.fifo[d]
        while f and f[0].issue != -1.0:   # lazily drop ones already dispatched
            f.popleft()
        return f[0] if f else None

    def expired(self, d: int, now: float) -> bool:
        h = self._fifo_head(d)
        return h is not None and h.deadline <= now

    def earliest_expired(self, now: float) -> Request | None:
        """The oldest-deadline FIFO head, if its deadline has passed."""
        r, w = self._fifo_head(READ), self._fifo_head(WRITE)
        best = r if w is None or (r is not None and r.deadline <= w.deadline) else w
        return best if best is not None and best.deadline <= now else None

    def any_expired(self, now: float) -> bool:
        return self.expired(READ, now) or self.expired(WRITE, now)

    def select(self, now: float) -> tuple[Request | None, bool]:
        """The request deadline would dispatch now and whether it starts a new batch,
        without changing any state (the stream scheduler asks this)."""
        if self.n == 0:
            return None, False
        if self.batching < self.t["fifo_batch"]:
            nxt = self.sort[self.last_dir].at_or_after(self.latest_pos[self.last_dir])
            if nxt is not None:
                return nxt, False
        d = self._direction()[0]
        nxt = self.sort[d].at_or_after(self.latest_pos[d])
        if nxt is None or self.expired(d, now):
            return self._fifo_head(d), True
        return nxt, True

    def _direction(self) -> tuple[int, int]:
        """(direction, new starved count) for a new batch."""
        reads, writes = len(self.sort[READ]), len(self.sort[WRITE])
        if reads:
            if writes and self.starved >= self.t["writes_starved"]:
                return WRITE, 0
            return READ, self.starved + (1 if writes else 0)
        return WRITE, 0

    def take(self, rq: Request, new_batch: bool) -> None:
        d = WRITE if rq.write else READ
        if new_batch:
            self.starved = self._direction()[1]
            self.batching = 0
        self.batching += 1
        self.last_dir = d
        self.latest_pos[d] = rq.sector + rq.nsec
        self.sort[d].remove(rq)
        self.untrack(rq)
        rq.issue = 0.0  # marks it gone from the FIFO; the engine sets the real issue time
        self.n -= 1

    def dispatch(self, now: float) -> Decision:
        rq, new_batch = self.select(now)
        if rq is None:
            return None
        self.take(rq, new_batch)
        return rq
