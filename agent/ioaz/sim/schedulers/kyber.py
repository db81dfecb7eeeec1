"""kyber-like: Linux kyber's shape (block/kyber-iosched.c), simplified.

Reads and writes are separate domains, each a FIFO with a limit on requests in flight (its
tokens). Dispatch goes round the domains in batches (16 reads, 8 writes). Every 100 ms the
latency each domain saw (issue to completion, 90th percentile) is compared with its target
(read_lat 2 ms, write_lat 10 ms): when reads miss their target the write depth is halved, when
both meet theirs every depth grows back toward its maximum. No sorting: kyber is for fast
devices, where reordering buys little.
"""
from __future__ import annotations

from collections import deque
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import Decision, Scheduler

READ, WRITE = 0, 1
BATCH = (16, 8)
MAX_DEPTH = (256, 128)
WINDOW_S = 0.1


class Kyber(Scheduler):
    name = "kyber"
    DEFAULTS: ClassVar[dict[str, Any]] = {"read_lat_ms": 2.0, "write_lat_ms": 10.0}

    def __init__(self, device: object = None, **tunables: object) -> None:
        super().__init__(device, **tunables)
        self.q: tuple[deque[Request], deque[Request]] = (deque(), deque())
        self.depth = list(MAX_DEPTH)
        self.inflight = [0, 0]
        self.cur = READ
        self.batch = 0
        self.target = (self.t["read_lat_ms"] / 1e3, self.t["write_lat_ms"] / 1e3)
        self.lat: tuple[list[float], list[float]] = ([], [])
        self.window_end = WINDOW_S

    def __len__(self) -> int:
        return len(self.q[0]) + len(self.q[1])

    def add(self, rq: Request, now: float) -> Request | None:
        tgt = self.back_merge(rq)
        if tgt is not None:
            return tgt
        self.q[WRITE if rq.write else READ].append(rq)
        self.track(rq)
        return None

    def dispatch(self, now: float) -> Decision:
        # Three tries: the current domain (batch not spent), the other one, and the current
        # one again with a fresh batch when the other had nothing (otherwise a spent read batch
        # with no writes queued returned nothing and stalled the device).
        for _ in range(3):
            d = self.cur
            if self.q[d] and self.inflight[d] < self.depth[d] and self.batch < BATCH[d]:
                rq = self.q[d].popleft()
                self.untrack(rq)
                self.inflight[d] += 1
                self.batch += 1
                return rq
            self.cur = 1 - d
            self.batch = 0
        return None

    def completed(self, rq: Request, now: float) -> None:
        d = WRITE if rq.write else READ
        self.inflight[d] -= 1
        self.lat[d].append(now - rq.issue)
        if now >= self.window_end:
            self._adjust()
            self.window_end = now + WINDOW_S

    def _adjust(self) -> None:
        p90 = []
        for lat in self.lat:
            lat.sort()
            p90.append(lat[int(0.9 * (len(lat) - 1))] if lat else 0.0)
            lat.clear()
        if p90[READ] > self.target[READ]:
            self.depth[WRITE] = max(1, self.depth[WRITE] // 2)
        elif p90[WRITE] > self.target[WRITE]:
            self.depth[WRITE] = max(1, self.depth[WRITE] * 3 // 4)
        else:
            self.depth = [min(MAX_DEPTH[i], self.depth[i] * 2) for i in (READ, WRITE)]
