"""deadline with Linux mq-deadline semantics (Carroll 2.4.3, Table 2.2), without I/O priorities.

Reads and writes each have a sector-sorted queue and a FIFO of expiry times. Requests go out in
batches of up to fifo_batch in one direction, each the next in sector order after the previous
one (one-way elevator). A new batch picks its direction: reads unless writes are pending and have
been passed over writes_starved times. It starts at the next request in sector order, or at the
FIFO head if that has expired or the elevator has reached the end of the disk.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import _TIE, Decision, Scheduler, SortedQueue

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
        self.fifo_batch = self.t["fifo_batch"]
        self.writes_starved = self.t["writes_starved"]

    def __len__(self) -> int:
        return self.n

    def add(self, rq: Request, now: float) -> Request | None:
        ends = self._ends
        s = rq.sector
        if s in ends:   # merge_or_stamp(), inline
            tgt = self.back_merge(rq)
            if tgt is not None:
                return tgt
        seq = self._seq + 1
        self._seq = rq.seq = seq
        d = WRITE if rq.write else READ
        rq.deadline = now + self.expire[d]
        sq = self.sort[d]   # sq.add(rq), inline
        k = s * _TIE + seq % _TIE
        keys = sq.keys
        i = bisect_left(keys, k)
        keys.insert(i, k)
        sq.reqs.insert(i, rq)
        self.fifo[d].append(rq)
        ends[s + rq.nsec] = rq
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
        fr, fw = self.fifo
        while fr and fr[0].issue != -1.0:   # lazily drop ones already dispatched
            fr.popleft()
        while fw and fw[0].issue != -1.0:
            fw.popleft()
        r = fr[0] if fr else None
        w = fw[0] if fw else None
        best = r if w is None or (r is not None and r.deadline <= w.deadline) else w
        return best if best is not None and best.deadline <= now else None

    def any_expired(self, now: float) -> bool:
        return self.expired(READ, now) or self.expired(WRITE, now)

    def select(self, now: float) -> tuple[Request | None, bool]:
        """The request deadline would dispatch now and whether it starts a new batch,
        without changing any state (the stream scheduler asks this; dropping FIFO entries
        already dispatched is bookkeeping, not state)."""
        if self.n == 0:
            return None, False
        sort = self.sort
        lp = self.latest_pos
        if self.batching < self.fifo_batch:
            sq = sort[self.last_dir]
            keys = sq.keys
            i = bisect_left(keys, lp[self.last_dir] * _TIE)
            if i < len(keys):
                return sq.reqs[i], False
        if sort[READ].keys:   # _direction()
            d = WRITE if sort[WRITE].keys and self.starved >= self.writes_starved else READ
        else:
            d = WRITE
        sq = sort[d]
        keys = sq.keys
        i = bisect_left(keys, lp[d] * _TIE)
        f = self.fifo[d]
        while f and f[0].issue != -1.0:   # lazily drop ones already dispatched
            f.popleft()
        head = f[0] if f else None
        if i >= len(keys) or (head is not None and head.deadline <= now):
            return head, True
        return sq.reqs[i], True

    def peek(self, now: float) -> Request | None:
        """select(now)'s request alone (what the stream scheduler compares with)."""
        if self.n == 0:
            return None
        if self.batching < self.fifo_batch:
            d = self.last_dir
            sq = self.sort[d]
            keys = sq.keys
            i = bisect_left(keys, self.latest_pos[d] * _TIE)
            if i < len(keys):
                return sq.reqs[i]
        return self.select(now)[0]

    def _direction(self) -> tuple[int, int]:
        """(direction, new starved count) for a new batch."""
        writes = len(self.sort[WRITE].keys)
        if self.sort[READ].keys:
            if writes and self.starved >= self.writes_starved:
                return WRITE, 0
            return READ, self.starved + (1 if writes else 0)
        return WRITE, 0

    def take(self, rq: Request, new_batch: bool = False) -> None:
        d = WRITE if rq.write else READ
        if new_batch:
            self.starved = self._direction()[1]
            self.batching = 0
        self.batching += 1
        self.last_dir = d
        s = rq.sector
        e = s + rq.nsec
        self.latest_pos[d] = e
        sq = self.sort[d]   # sq.remove(rq), inline
        keys = sq.keys
        i = bisect_left(keys, s * _TIE + rq.seq % _TIE)
        reqs = sq.reqs
        assert reqs[i] is rq
        del keys[i]
        del reqs[i]
        ends = self._ends
        if ends.get(e) is rq:   # untrack()
            del ends[e]
        rq.issue = 0.0  # marks it gone from the FIFO; the engine sets the real issue time
        self.n -= 1

    def dispatch(self, now: float) -> Decision:
        if self.n == 0:
            return None
        d = self.last_dir
        if self.batching < self.fifo_batch:
            # inside a batch: the next request in sector order, the same direction (select())
            sq = self.sort[d]
            pos = self.latest_pos[d]
            keys = sq.keys
            i = bisect_left(keys, pos * _TIE)
            if i < len(keys):
                rq = sq.reqs[i]
                self.batching += 1
                del keys[i]
                del sq.reqs[i]
                e = rq.sector + rq.nsec
                self.latest_pos[d] = e
                ends = self._ends
                if ends.get(e) is rq:   # untrack()
                    del ends[e]
                rq.issue = 0.0
                self.n -= 1
                return rq
        sel, new_batch = self.select(now)
        if sel is None:
            return None
        self.take(sel, new_batch)
        return sel
