"""Stream scheduling (Xu & Jiang, Figure 2 and section 3.2).

No process information: a request that arrives soon after a completed request R, close enough
that waiting for it plus serving it would have cost less than serving the request the base
scheduler would pick (R's service time), is R's *child*; a chain of children is a stream,
established at stream_threshold (4). When the newest request of an established stream completes,
the disk idles up to that service time for its child instead of dispatching the base's choice.
A stream that outgrew the threshold by `tolerance` percent gets a second chance when its timer
runs out. A stream is served for at most stream_time_slice (124 ms) at a time, and a request whose
deadline has passed is served at once (3.2: SS "respects the decision made by Deadline").

Two flavours share this code:
- `stream` (the paper): around deadline, with calculate_service_time() a curve through
  [distance, time] points measured from the device model (the paper fits one to measurements);
- `stream-vr` (kmod/ioaz_stream.c): around V(R), with the kernel module's square-root curve
  from svc_min_us (adjacent) to svc_max_us (svc_full_sectors away or more).
Both make backward seeks cost backseek_penalty percent (150: the paper's +50%). Among several
possible parents an arrival extends the longest stream (the kernel module's rule).
"""
from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import Decision, Scheduler
from ioaz.sim.schedulers.deadline import Deadline
from ioaz.sim.schedulers.vr import VR


class ServiceCurve:
    """time(distance) by linear interpolation between points measured at log-spaced distances."""

    def __init__(self, device: Any, points: int = 48) -> None:
        cap = int(getattr(device, "capacity_sectors", 1 << 30))
        self.dist = [0] + [round(math.exp(math.log(cap) * i / points)) for i in range(points + 1)]
        self.time = [device.estimate(d) for d in self.dist] if device is not None else \
            [0.0001 + 0.01 * d / cap for d in self.dist]
        self.max = max(self.time)

    def __call__(self, d: int) -> float:
        dist = self.dist
        time = self.time
        i = bisect_left(dist, d)
        if i >= len(dist):
            return time[-1]
        d1 = dist[i]
        if d1 == d or i == 0:
            return time[i]
        d0 = dist[i - 1]
        t0 = time[i - 1]
        return t0 + (time[i] - t0) * (d - d0) / (d1 - d0)


class SqrtCurve:
    """kmod/ioaz_stream_detect.c's curve, in the same integer arithmetic (microseconds)."""

    def __init__(self, min_us: int, max_us: int, full: int) -> None:
        self.min_us, self.span, self.full = min_us, max(0, max_us - min_us), max(1, full)
        self.max = max_us / 1e6

    def __call__(self, d: int) -> float:
        if d >= self.full:
            return self.max
        return (self.min_us + self.span * math.isqrt((d << 20) // self.full) // 1024) / 1e6


class _Parent:
    __slots__ = ("deadline", "done", "pos", "size", "svc")

    def __init__(self, pos: int, done: float, svc: float, size: int) -> None:
        self.pos, self.done, self.svc, self.size = pos, done, svc, size
        self.deadline = done + svc


class Stream(Scheduler):
    name = "stream"
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "stream_threshold": 4, "stream_time_slice_ms": 124.0, "tolerance": 50,
        "backseek_penalty": 150, "stream_idle": 1, "base": "deadline",
        # the kernel module's max_inflight: at most this many requests on the device (0: its
        # queue depth), so a drive that reorders does not interleave the streams again
        "max_inflight": 0,
        # 0: the curve is measured from the device model; else the kernel module's sqrt curve
        "svc_min_us": 0, "svc_max_us": 0, "svc_full_sectors": 0,
        # the base scheduler's knobs
        "read_expire_ms": 500.0, "write_expire_ms": 5000.0, "fifo_batch": 16, "writes_starved": 2,
        "rev_penalty": 10, "sync_expire_ms": 500.0, "async_expire_ms": 5000.0, "deadlines": 1,
    }

    def __init__(self, device: Any = None, **tunables: Any) -> None:
        super().__init__(device, **tunables)
        t = self.t
        if t["base"] == "deadline":
            self.inner: Deadline | VR = Deadline(
                device, **{k: t[k] for k in Deadline.DEFAULTS})
        elif t["base"] == "vr":
            self.inner = VR(device, **{k: t[k] for k in VR.DEFAULTS})
        else:
            raise ValueError(f"stream: base {t['base']!r} not one of deadline, vr")
        self.curve: ServiceCurve | SqrtCurve = (
            SqrtCurve(int(t["svc_min_us"]), int(t["svc_max_us"]), int(t["svc_full_sectors"]))
            if t["svc_max_us"] > 0 else ServiceCurve(device))
        self.vr_base = isinstance(self.inner, VR)
        self.deadlines = bool(t["deadlines"]) if self.vr_base else True
        self.idle = bool(t["stream_idle"])
        self.cap = int(t["max_inflight"])
        # the base's calls this scheduler makes per request, bound once
        inner = self.inner
        # (attributes, not methods assigned per instance, which compiled classes reject)
        self._pending: Callable[[float], Request | None]
        self._expired: Callable[[float], Request | None]
        if isinstance(inner, VR):
            self._pending = lambda now: inner.pending()
            if not self.deadlines:
                self._expired = lambda now: None
            else:
                self._expired = inner.earliest_expired
        else:
            self._pending = inner.peek
            self._expired = inner.earliest_expired
        self._take_inner = inner.take   # deadline's take(rq) starts no batch
        self.svc0 = self.curve(0)         # a request right where the head is
        # the curve as a bound method: the interpreter calls that faster than an instance
        self._curve = self.curve.__call__
        self.thr = t["stream_threshold"]
        self.tol = t["tolerance"]
        self.back = t["backseek_penalty"] / 100.0
        self.slice = t["stream_time_slice_ms"] / 1e3
        self.parents: list[_Parent] = []   # the parent-to-be queue
        self.waiting: _Parent | None = None
        self.wait_until = 0.0
        self.urgent: Request | None = None  # the child that ended a wait: served next
        self.in_stream = False
        self.slice_start = 0.0
        # the kernel module's counters
        self.waits = self.waits_paid = self.waits_timeout = self.waits_cut = self.expired = 0

    def __len__(self) -> int:
        return self.inner.n

    def service(self, frm: int, to: int) -> float:
        """calculate_service_time(): the head at frm, the request at to."""
        if to >= frm:
            return self.curve(to - frm)
        return self.curve(frm - to) * self.back

    # Figure 2, "upon arrival of request new_R"
    def add(self, rq: Request, now: float) -> Request | None:
        best = None
        keep = []
        waiting = self.waiting
        sector = rq.sector
        curve = self._curve
        for p in self.parents:
            dl = p.deadline
            if dl < now:
                if p is not waiting:
                    continue
            else:
                d = sector - p.pos
                if d == 0:
                    svc = self.svc0
                elif d > 0:
                    svc = curve(d)
                else:
                    svc = curve(-d) * self.back
                if now - p.done + svc < p.svc:
                    # the child of the parent waited for ends the wait, even when another
                    # parent has as large a size (completions handled before the arrival)
                    if p is waiting:
                        best = p
                    elif best is None or (best is not waiting and p.size > best.size):
                        best = p
            keep.append(p)
        rq.stream_size = 1
        if best is not None:
            rq.stream_size = best.size + 1
            if best is waiting:
                self.waiting = None
                self.urgent = rq
                self.waits_paid += 1
            keep.remove(best)
        self.parents = keep
        merged = self.inner.add(rq, now)
        if merged is not None and self.urgent is rq:
            self.urgent = merged
        return merged

    # Figure 2, "upon completion of request R"
    def completed(self, rq: Request, now: float) -> None:
        size = rq.stream_size
        if rq.merged:
            size = max([size] + [m.stream_size for m in rq.merged])
        pos = rq.sector + rq.nsec
        pending = self._pending(now)
        # no pending request: the disk would idle anyway, so the widest window
        if pending is None:
            svc = self.curve.max
        else:
            d = pending.sector - pos
            if d == 0:
                svc = self.svc0
            elif d > 0:
                svc = self._curve(d)
            else:
                svc = self._curve(-d) * self.back
        p = _Parent(pos, now, svc, size)
        self.parents.append(p)
        if not self.idle or size < self.thr:
            return
        # Waiting pays only when the child comes after this completion: not after an
        # asynchronous request (its submitter did not wait for it), nor when the pending
        # request continues the stream past the requests still in flight (its submitter
        # runs ahead of the disk: the child is already here, and the base serves it next).
        if not rq.sync or (pending is not None and self._runs_ahead(pos, pending)):
            return
        if self._expired(now) is not None:
            self.waits_cut += 1
            self.in_stream = False
            return
        if not self.in_stream:
            self.in_stream = True
            self.slice_start = now
        elif now - self.slice_start >= self.slice:
            self.waits_cut += 1   # slice used up: serve the pending choice instead of waiting
            self.in_stream = False
            return
        self.waiting = p
        self.wait_until = now + svc
        self.waits += 1

    def _runs_ahead(self, pos: int, nxt: Request) -> bool:
        """The kernel module's ss_runs_ahead(): nxt starts at most one request's length past
        pos per request still in flight (the device has already let the completing one go)."""
        others = self.device.inflight if self.device is not None else 0
        return 0 <= nxt.sector - pos <= others * nxt.nsec

    def _take(self, rq: Request) -> Request:
        self._take_inner(rq)
        if rq.stream_size < self.thr:
            self.in_stream = False
        return rq

    def dispatch(self, now: float) -> Decision:
        if not self.inner.n:
            return None  # nothing to choose between; an arrival runs the wait logic
        if self.cap and self.device is not None and self.device.inflight >= self.cap:
            return None  # the device's room is the cap's: a completion runs us again
        rq = self.urgent
        if rq is not None:
            self.urgent = None
            self._take_inner(rq)   # _take(rq), inline
            if rq.stream_size < self.thr:
                self.in_stream = False
            return rq
        exp = self._expired(now)
        if exp is not None:
            if self.waiting is not None:
                self.waiting = None
                self.waits_cut += 1
            self.expired += 1
            self.in_stream = False
            return self._take(exp)
        w = self.waiting
        if w is not None:
            if now < self.wait_until:
                return self.wait_until
            if self.tol and w.size * 100 >= self.thr * (100 + self.tol):
                # a long stream gets a second chance (Figure 2, timer procedure)
                extra = w.svc * self.tol / 100
                w.svc += extra
                w.deadline = w.done + w.svc
                w.size = self.thr
                self.wait_until = now + extra
                return self.wait_until
            self.parents = [p for p in self.parents if p is not w]
            self.waiting = None
            self.waits_timeout += 1
        out = self.inner.dispatch(now)
        if out.__class__ is Request and out.stream_size < self.thr:  # type: ignore[union-attr]
            self.in_stream = False
        return out
