"""Stream scheduling (Xu & Jiang, seeds/002_*, Figure 2 and section 3.2) around deadline.

No process information: a request that arrives soon after a completed request R, close enough
that waiting for it plus serving it would have cost less than serving the request deadline picked
(R.service_time), is R's *child*; a chain of children is a stream, established at
stream_threshold (4). When the newest request of an established stream completes, the disk idles
up to R.service_time for its child instead of dispatching deadline's choice. A stream that
outgrew the threshold by tolerance_factor (50%) gets a second chance when its timer runs out. A
stream is served for at most stream_time_slice (124 ms) while other requests wait, and an expired
deadline request always goes first (3.2: SS "respects the decision made by Deadline").

calculate_service_time() is a curve through [distance, time] points measured from the device
model (the paper fits it to measurements), with backward seeks costing 50% more.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import Decision, Scheduler
from ioaz.sim.schedulers.deadline import Deadline


class ServiceCurve:
    """time(distance) by linear interpolation between points measured at log-spaced distances."""

    def __init__(self, device: Any, points: int = 48, backward_penalty: float = 0.5) -> None:
        cap = int(getattr(device, "capacity_sectors", 1 << 30))
        self.dist = [0] + [round(math.exp(math.log(cap) * i / points)) for i in range(points + 1)]
        self.time = [device.estimate(d) for d in self.dist] if device is not None else \
            [0.0001 + 0.01 * d / cap for d in self.dist]
        self.back = 1.0 + backward_penalty

    def __call__(self, from_pos: int, to_pos: int) -> float:
        d = to_pos - from_pos
        back = d < 0
        d = abs(d)
        i = bisect_left(self.dist, d)
        if i >= len(self.dist):
            t = self.time[-1]
        elif self.dist[i] == d or i == 0:
            t = self.time[i]
        else:
            d0, d1 = self.dist[i - 1], self.dist[i]
            t = self.time[i - 1] + (self.time[i] - self.time[i - 1]) * (d - d0) / (d1 - d0)
        return t * self.back if back else t


class Stream(Scheduler):
    name = "stream"
    DEFAULTS: ClassVar[dict[str, Any]] = {"stream_threshold": 4, "stream_time_slice_ms": 124.0, "tolerance_factor": 0.5,
                "read_expire_ms": 500.0, "write_expire_ms": 5000.0, "fifo_batch": 16,
                "writes_starved": 2}

    def __init__(self, device: Any = None, **tunables: Any) -> None:
        super().__init__(device, **tunables)
        self.inner = Deadline(device, **{k: self.t[k] for k in Deadline.DEFAULTS})
        self.curve = ServiceCurve(device)
        cap = int(getattr(device, "capacity_sectors", 1 << 30))
        self.default_est = self.curve(0, cap // 3)  # no pending request: a typical random access
        self.thr = self.t["stream_threshold"]
        self.tol = self.t["tolerance_factor"]
        self.slice = self.t["stream_time_slice_ms"] / 1e3
        self.parents: list[Request] = []   # the parent-to-be queue
        self.waiting: Request | None = None
        self.wait_until = 0.0
        self.child: Request | None = None
        self.slice_start = -1.0            # >= 0 while a stream is being served
        self.stream_dispatches = 0         # children dispatched by waiting (for reports)

    def __len__(self) -> int:
        return len(self.inner)

    def add(self, rq: Request, now: float) -> Request | None:
        # The stream is formed from arrivals whatever gets dispatched (2.1).
        best = None
        best_cost = 0.0
        keep = []
        for r in self.parents:
            if r.deadline < now:
                continue
            cost = now - r.complete + self.curve(r.sector + r.nsec, rq.sector)
            if cost < r.est and (best is None or cost < best_cost):
                if best is not None:
                    keep.append(best)
                best, best_cost = r, cost
            else:
                keep.append(r)
        self.parents = keep
        rq.stream_size = best.stream_size + 1 if best is not None else 1
        merged = self.inner.add(rq, now)
        if best is not None and best is self.waiting and merged is None:
            self.child = rq
        return merged

    def completed(self, rq: Request, now: float) -> None:
        if rq.merged:
            # A merged request ends where its last bio ends; the stream goes on from there.
            rq.stream_size = max([rq.stream_size] + [m.stream_size for m in rq.merged])
        sel = self.inner.select(now)[0]
        rq.est = self.curve(rq.sector + rq.nsec, sel.sector) if sel is not None else self.default_est
        rq.deadline = now + rq.est
        self.parents.append(rq)
        self.waiting = self.child = None
        if rq.stream_size >= self.thr:
            if self.slice_start < 0:
                self.slice_start = now
            if sel is None or now - self.slice_start < self.slice:
                self.waiting = rq
                self.wait_until = now + rq.est
                return
        self.slice_start = -1.0

    def dispatch(self, now: float) -> Decision:
        w = self.waiting
        if w is not None:
            if self.inner.any_expired(now):
                self.waiting = self.child = None
                self.slice_start = -1.0
            elif self.child is not None:
                rq = self.child
                self.waiting = self.child = None
                self.inner.take(rq, new_batch=False)
                self.stream_dispatches += 1
                return rq
            elif now < self.wait_until:
                return self.wait_until
            elif w.stream_size >= (1 + self.tol) * self.thr:
                # Second chance for a long stream (Figure 2, timer procedure).
                self.wait_until = now + w.est * self.tol
                w.est *= 1 + self.tol
                w.deadline = w.complete + w.est
                w.stream_size = self.thr
                return self.wait_until
            else:
                self.waiting = None
                self.parents = [r for r in self.parents if r is not w]
                self.slice_start = -1.0
        return self.inner.dispatch(now)
