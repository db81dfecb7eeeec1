"""cfq: per-process time slices with idling, after Linux CFQ (Carroll 2.4.5, Table 2.4); the
BFQ of today keeps the same shape (budgets instead of times aside).

Every process has its own queue of synchronous requests; asynchronous requests of all processes
share one queue. Queues with requests take turns (round robin); the active queue owns the disk for
its slice (slice_sync, slice_async), served in SCAN order with short backward seeks (back_seek_max
at back_seek_penalty times the cost), its expired requests first. When a synchronous queue runs
empty within its slice, the disk idles up to slice_idle for that process's next request, if the
process thinks for less than slice_idle on average; slice_idle 0 disables idling (Carroll 6.4
recommends it on RAID).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import _TIE, Decision, Scheduler, SortedQueue

Key = int | str


class _Queue:
    __slots__ = ("fifo", "inflight", "last_complete", "sorted", "ttime")

    def __init__(self) -> None:
        self.sorted = SortedQueue()
        self.fifo: deque[Request] = deque()
        self.inflight = 0
        self.last_complete = -1.0
        self.ttime = -1.0


class CFQ(Scheduler):
    name = "cfq"
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "slice_sync_ms": 100.0, "slice_async_ms": 40.0, "slice_idle_ms": 8.0,
        "fifo_expire_sync_ms": 125.0, "fifo_expire_async_ms": 250.0,
        "back_seek_max_kb": 16384, "back_seek_penalty": 2}

    def __init__(self, device: object = None, **tunables: object) -> None:
        super().__init__(device, **tunables)
        self.queues: dict[Key, _Queue] = {}
        self.rr: deque[Key] = deque()
        self.active: Key | None = None
        self.slice_end = 0.0
        self.head = 0
        self.n = 0
        self.idle = self.t["slice_idle_ms"] / 1e3
        self.back = int(self.t["back_seek_max_kb"] * 2)
        self.pen = self.t["back_seek_penalty"]
        self.expire_sync = self.t["fifo_expire_sync_ms"] / 1e3
        self.expire_async = self.t["fifo_expire_async_ms"] / 1e3
        self.slice_sync = self.t["slice_sync_ms"] / 1e3
        self.slice_async = self.t["slice_async_ms"] / 1e3

    def __len__(self) -> int:
        return self.n

    @staticmethod
    def key(rq: Request) -> Key:
        return rq.pid if rq.sync else "async"

    def add(self, rq: Request, now: float) -> Request | None:
        k = rq.pid if rq.sync else "async"   # key(rq)
        q = self.queues.get(k)
        if q is None:
            q = self.queues[k] = _Queue()
        if rq.sync and q.last_complete >= 0:
            tt = now - q.last_complete
            q.ttime = tt if q.ttime < 0 else 0.75 * q.ttime + 0.25 * tt
        tgt = self.merge_or_stamp(rq)
        if tgt is not None:
            return tgt
        rq.deadline = now + (self.expire_sync if rq.sync else self.expire_async)
        if not q.sorted.reqs and k != self.active:
            self.rr.append(k)
        q.sorted.add(rq)
        q.fifo.append(rq)
        self._ends[rq.sector + rq.nsec] = rq
        self.n += 1
        return None

    def _expire_active(self) -> None:
        k = self.active
        self.active = None
        if k is not None and self.queues[k].sorted.reqs:
            self.rr.append(k)

    def dispatch(self, now: float) -> Decision:
        while True:
            if self.active is None:
                if not self.rr:
                    return None
                self.active = self.rr.popleft()
                self.slice_end = now + (self.slice_async if self.active == "async"
                                        else self.slice_sync)
            q = self.queues[self.active]
            if now >= self.slice_end:
                self._expire_active()
                continue
            if q.sorted.reqs:   # non-empty (without SortedQueue.__len__)
                return self._take(q, self._pick(q, now))
            if self.active != "async" and self.idle > 0 and (q.ttime < 0 or q.ttime <= self.idle):
                if q.inflight:
                    return None       # its request is still on the disk: wait for it
                until = min(self.slice_end, q.last_complete + self.idle)
                if now < until:
                    return until
            self._expire_active()
            if not self.rr:
                return None

    def _pick(self, q: _Queue, now: float) -> Request:
        while q.fifo and q.fifo[0].issue != -1.0:
            q.fifo.popleft()
        if q.fifo and q.fifo[0].deadline <= now:
            return q.fifo[0]
        head = self.head
        sq = q.sorted
        reqs = sq.reqs
        i = bisect_left(sq.keys, head * _TIE)
        nxt = reqs[i] if i < len(reqs) else None
        if i > 0:
            prv = reqs[i - 1]
            back = head - prv.sector
            if 0 <= back <= self.back and (nxt is None or self.pen * back < nxt.sector - head):
                return prv
        return nxt if nxt is not None else reqs[0]

    def _take(self, q: _Queue, rq: Request) -> Request:
        q.sorted.remove(rq)
        q.inflight += 1
        e = rq.sector + rq.nsec
        ends = self._ends
        if ends.get(e) is rq:   # untrack()
            del ends[e]
        self.head = e
        rq.issue = 0.0
        self.n -= 1
        return rq

    def completed(self, rq: Request, now: float) -> None:
        q = self.queues.get(rq.pid if rq.sync else "async")
        if q is not None:
            q.inflight -= 1
            q.last_complete = now
