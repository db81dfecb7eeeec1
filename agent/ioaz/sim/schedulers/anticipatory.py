"""anticipatory, after Linux AS (Carroll 2.4.4, Table 2.3; Iyer & Druschel), simplified.

Synchronous and asynchronous requests are served in timed batches (read_batch_expire,
write_batch_expire); within a batch in SCAN order, a backward seek of up to back_seek_kb allowed
at twice its cost. Each batch starts at the request with the earliest deadline (Carroll 3.4's fix)
and an expired request is served first. After a synchronous request completes, the scheduler
idles up to antic_expire for the same process's next request when that process has so far
thought for less than antic_expire and seeked less than back_seek_kb on average (the per-process
history AS keeps).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import _TIE, Decision, Scheduler, SortedQueue

SYNC, ASYNC = 0, 1


class _ProcStats:
    __slots__ = ("last_complete", "last_end", "seek", "ttime")

    def __init__(self) -> None:
        self.last_complete = -1.0
        self.last_end = -1
        self.ttime = -1.0   # mean think time, -1 while unknown
        self.seek = -1.0    # mean seek distance in sectors, -1 while unknown


class Anticipatory(Scheduler):
    name = "anticipatory"
    DEFAULTS: ClassVar[dict[str, Any]] = {"read_expire_ms": 125.0, "write_expire_ms": 250.0,
                "read_batch_expire_ms": 500.0, "write_batch_expire_ms": 125.0,
                "antic_expire_ms": 6.7, "back_seek_kb": 1024}

    def __init__(self, device: object = None, **tunables: object) -> None:
        super().__init__(device, **tunables)
        self.sort = (SortedQueue(), SortedQueue())
        self.fifo: tuple[deque[Request], deque[Request]] = (deque(), deque())
        self.expire = (self.t["read_expire_ms"] / 1e3, self.t["write_expire_ms"] / 1e3)
        self.batch_len = (self.t["read_batch_expire_ms"] / 1e3,
                          self.t["write_batch_expire_ms"] / 1e3)
        self.antic = self.t["antic_expire_ms"] / 1e3
        self.back = int(self.t["back_seek_kb"] * 2)
        self.head = 0
        self.batch_dir = SYNC
        self.batch_start = 0.0
        self.procs: dict[int, _ProcStats] = {}
        self.antic_pid: int | None = None
        self.antic_until = 0.0
        self.antic_hit: Request | None = None
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add(self, rq: Request, now: float) -> Request | None:
        if rq.sync:
            ps = self.procs.get(rq.pid)
            if ps is None:
                ps = self.procs[rq.pid] = _ProcStats()
            if ps.last_complete >= 0:
                tt = now - ps.last_complete
                ps.ttime = tt if ps.ttime < 0 else 0.75 * ps.ttime + 0.25 * tt
            if ps.last_end >= 0:
                sd = abs(rq.sector - ps.last_end)
                ps.seek = sd if ps.seek < 0 else 0.75 * ps.seek + 0.25 * sd
        tgt = self.merge_or_stamp(rq)
        if tgt is not None:
            return tgt
        d = SYNC if rq.sync else ASYNC
        rq.deadline = now + self.expire[d]
        self.sort[d].add(rq)
        self.fifo[d].append(rq)
        self._ends[rq.sector + rq.nsec] = rq   # track(rq)
        self.n += 1
        if self.antic_pid == rq.pid and rq.sync and self.antic_hit is None:
            self.antic_hit = rq
        return None

    def _fifo_head(self, d: int) -> Request | None:
        f = self.fifo[d]
        while f and f[0].issue != -1.0:
            f.popleft()
        return f[0] if f else None

    def _any_expired(self, now: float) -> bool:
        for f in self.fifo:
            while f and f[0].issue != -1.0:
                f.popleft()
            if f and f[0].deadline <= now:
                return True
        return False

    def _scan(self, d: int) -> Request:
        s = self.sort[d]
        reqs = s.reqs
        i = bisect_left(s.keys, self.head * _TIE)   # s.at_or_after(head) and s.before(head)
        nxt = reqs[i] if i < len(reqs) else None
        prv = reqs[i - 1] if i > 0 else None
        back = self.head - prv.sector if prv is not None else -1
        if prv is not None and 0 <= back <= self.back and (
                nxt is None or 2 * back < nxt.sector - self.head):
            return prv
        if nxt is not None:
            return nxt
        return s.reqs[0]  # wrap to the lowest sector

    def dispatch(self, now: float) -> Decision:
        if self.antic_pid is not None:
            if self.antic_hit is not None and self.antic_hit.issue == -1.0:
                rq = self.antic_hit
                self.antic_pid = self.antic_hit = None
                return self._take(rq)
            if now < self.antic_until and not self._any_expired(now):
                return self.antic_until
            self.antic_pid = self.antic_hit = None
        if self.n == 0:
            return None
        d = self.batch_dir
        other = 1 - d
        sort = self.sort   # .reqs: whether a queue is non-empty, without SortedQueue.__len__
        if not sort[d].reqs or (sort[other].reqs
                                and now - self.batch_start >= self.batch_len[d]):
            d = self.batch_dir = other if sort[other].reqs else d
            self.batch_start = now
            head = self._fifo_head(d)
            assert head is not None
            return self._take(head)
        h = self._fifo_head(d)
        if h is not None and h.deadline <= now:
            return self._take(h)
        return self._take(self._scan(d))

    def _take(self, rq: Request) -> Request:
        self.sort[SYNC if rq.sync else ASYNC].remove(rq)
        e = rq.sector + rq.nsec
        ends = self._ends
        if ends.get(e) is rq:   # untrack(rq)
            del ends[e]
        self.head = e
        rq.issue = 0.0
        self.n -= 1
        return rq

    def completed(self, rq: Request, now: float) -> None:
        if not rq.sync or self.antic <= 0:
            return
        ps = self.procs.get(rq.pid)
        if ps is None:
            ps = self.procs[rq.pid] = _ProcStats()
        ps.last_complete = now
        ps.last_end = rq.sector + rq.nsec
        if (ps.ttime < 0 or ps.ttime <= self.antic) and (ps.seek < 0 or ps.seek <= self.back):
            self.antic_pid = rq.pid
            self.antic_until = now + self.antic
            self.antic_hit = None
