"""cfq: per-process time slices with idling, after Linux CFQ (Carroll 2.4.5, Table 2.4); the
BFQ of today keeps the same shape (budgets instead of times aside).

Every process has its own queue of synchronous requests; asynchronous requests of all processes
share one queue. Queues with requests take turns (round robin); the active queue owns the disk for
its slice (slice_sync, slice_async), served in SCAN order with short backward seeks (back_seek_max
at back_seek_penalty times the cost), its expired requests first. When a synchronous queue runs
empty within its slice, the disk idles up to slice_idle for that process's next request, if the
process thinks for less than slice_idle on average; slice_idle 0 disables idling (Carroll 6.4
recommends it on RAID).

`bfq` is the same with the kernel bfq's stable merging on (`stable_merge`), which decides how
bfq serves processes that start together (docs/testbed.md, fifty-seventh run): a process's queue
created within burst_interval_ms of the queue bfq created last (within 600 ms of it) is marked
for a merge with that queue, and at its first request 600 ms or more after its creation the two
become one queue for good (a stably merged queue is never split), unless idling would raise
throughput with no weight-raised queue busy (a rotational disk without command queueing, or a
sequential queue on one with it). A queue is weight-raised while young (wr_s) unless it came in
a burst of large_burst queues or more; on a non-rotational disk with queueing the merge is
made at once. After bfq_do_or_sched_stable_merge, bfq_setup_stable_merge,
idling_boosts_thr_without_issues and bfq_add_to_burst in the kernel's block/bfq-iosched.c
(6.12), not its code. The model assumes the marked partner's process still runs (bfq cancels
the merge when it has exited), and takes the drive's queueing as known from the start, where
bfq learns it over 32 samples and until then merges where idling would have kept queues apart.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import _TIE, Decision, Scheduler, SortedQueue

Key = int | str


class _Queue:
    __slots__ = ("created", "fifo", "inflight", "large_burst", "last_complete", "last_end",
                 "partner", "seeks", "sorted", "ttime")

    def __init__(self, created: float = 0.0) -> None:
        self.sorted = SortedQueue()
        self.fifo: deque[Request] = deque()
        self.inflight = 0
        self.last_complete = -1.0
        self.ttime = -1.0
        # stable merging only
        self.created = created
        self.partner: Key | None = None   # marked for a merge with this queue
        self.large_burst = False
        self.seeks = 0                    # the last 32 requests, 1 bit a seek
        self.last_end = -1


SEEK_SECTORS = 800     # bfq's BFQ_SEEK_THR: farther from the last request is a seek
SEEKY_OF_32 = 4        # BFQQ_SEEKY: more seeks than this among the last 32 requests
HW_QUEUE_THRESHOLD = 3  # bfq takes a drive holding more commands than this as queueing


class CFQ(Scheduler):
    name = "cfq"
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "slice_sync_ms": 100.0, "slice_async_ms": 40.0, "slice_idle_ms": 8.0,
        "fifo_expire_sync_ms": 125.0, "fifo_expire_async_ms": 250.0,
        "back_seek_max_kb": 16384, "back_seek_penalty": 2,
        "stable_merge": 0, "burst_interval_ms": 180.0, "stable_merge_after_ms": 600.0,
        "large_burst": 8, "wr_s": 3.0}

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
        self.sm = bool(self.t["stable_merge"])
        self.owner: dict[int, Key] = {}       # process -> the shared queue it was merged into
        self.rq_key: dict[Request, Key] = {}  # a request on the disk -> its queue (merging)
        self.last_created: Key | None = None
        self.burst: list[_Queue] = []
        self.burst_large = False
        self.burst_t = -1.0
        self.burst_s = self.t["burst_interval_ms"] / 1e3
        self.merge_after = self.t["stable_merge_after_ms"] / 1e3
        rotational = getattr(device, "rotational", True) is not False
        queueing = getattr(device, "queue_depth", 1) > HW_QUEUE_THRESHOLD
        self.rot_without_queueing = rotational and not queueing
        self.nonrot_with_queueing = not rotational and queueing

    def __len__(self) -> int:
        return self.n

    @staticmethod
    def key(rq: Request) -> Key:
        return rq.pid if rq.sync else "async"

    def add(self, rq: Request, now: float) -> Request | None:
        k: Key = (self._merging_key(rq, now) if self.sm else rq.pid) if rq.sync else "async"
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

    # -- bfq's stable merging (stable_merge) -----------------------------------------------

    def _merging_key(self, rq: Request, now: float) -> Key:
        """The queue rq's process submits to: its own, or the one it was merged into."""
        pid = rq.pid
        k = self.owner.get(pid)
        if k is None:
            q = self.queues.get(pid)
            if q is None:
                q = self.queues[pid] = self._created(pid, now)
            if q.partner is not None and now >= q.created + self.merge_after:
                partner = self._resolve(q.partner)
                q.partner = None
                if partner != pid and not self._idling_boosts(q, now):
                    self.owner[pid] = partner
            k = self.owner.get(pid, pid)
        q = self.queues[k]
        seek = q.last_end >= 0 and abs(rq.sector - q.last_end) > SEEK_SECTORS
        q.seeks = ((q.seeks << 1) | int(seek)) & 0xFFFFFFFF
        q.last_end = rq.sector + rq.nsec
        return k

    def _created(self, pid: int, now: float) -> _Queue:
        q = _Queue(now)
        # bursts of queue creations (bfq_handle_burst): a queue in a large one is never raised
        if self.burst and now - self.burst_t <= self.burst_s:
            self.burst.append(q)
            if self.burst_large or len(self.burst) >= self.t["large_burst"]:
                self.burst_large = True
                for b in self.burst:
                    b.large_burst = True
        else:
            self.burst, self.burst_large = [q], False
        self.burst_t = now
        lk = self.last_created
        last = self.queues.get(lk) if lk is not None else None
        if lk is None or last is None or now > last.created + self.merge_after:
            self.last_created = pid
        elif now <= last.created + self.burst_s:
            if self.nonrot_with_queueing:
                self.owner[pid] = self._resolve(lk)
            else:
                q.partner = lk
        return q

    def _resolve(self, k: Key) -> Key:
        while isinstance(k, int) and k in self.owner:
            k = self.owner[k]
        return k

    def _idling_boosts(self, q: _Queue, now: float) -> bool:
        """bfq keeps q alone when idling for it raises throughput and no busy queue is
        weight-raised."""
        sequential = bin(q.seeks).count("1") <= SEEKY_OF_32
        if not (self.rot_without_queueing or (not self.nonrot_with_queueing and sequential)):
            return False
        return not any((o.sorted.reqs or o.inflight) and not o.large_burst
                       and now < o.created + self.t["wr_s"] for o in self.queues.values())

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
        if self.sm and self.active is not None:
            self.rq_key[rq] = self.active
        e = rq.sector + rq.nsec
        ends = self._ends
        if ends.get(e) is rq:   # untrack()
            del ends[e]
        self.head = e
        rq.issue = 0.0
        self.n -= 1
        return rq

    def completed(self, rq: Request, now: float) -> None:
        k = self.rq_key.pop(rq, None) if self.sm else None
        q = self.queues.get(k if k is not None else rq.pid if rq.sync else "async")
        if q is not None:
            q.inflight -= 1
            q.last_complete = now
