"""What every simulated scheduler provides, and the back-merge helper most of them share.

The engine calls `add(rq, now)` when a bio arrives (it returns the queued request rq was merged
into, or None), `dispatch(now)` whenever the device can take a request (a Request to issue, a
float time to be called again at if the scheduler chooses to idle, or None when it has nothing),
and `completed(rq, now)` when the device finishes one.
"""
from __future__ import annotations

from bisect import bisect_left, insort
from typing import Any, ClassVar

from ioaz.sim.request import Request

Decision = Request | float | None
MAX_SECTORS = 1024  # largest merged request: 512 KiB, the usual max_sectors_kb


class Scheduler:
    name = "base"
    # tunable -> default; constructor keywords are checked against it
    DEFAULTS: ClassVar[dict[str, Any]] = {}

    def __init__(self, device: Any = None, **tunables: Any) -> None:
        bad = sorted(set(tunables) - set(self.DEFAULTS))
        if bad:
            raise ValueError(f"{self.name}: unknown tunable(s) {bad}; "
                             f"known: {sorted(self.DEFAULTS)}")
        self.t: dict[str, Any] = {**self.DEFAULTS, **tunables}
        self.device = device
        self._ends: dict[int, Request] = {}   # end sector -> queued request (back merges)
        self._seq = 0

    def _stamp(self, rq: Request) -> None:
        self._seq += 1
        rq.seq = self._seq

    def back_merge(self, rq: Request) -> Request | None:
        """Append rq to a queued request that ends where rq starts (same direction), as the
        block layer's merge hash does; returns that request or None."""
        tgt = self._ends.get(rq.sector)
        if tgt is None or tgt.write != rq.write or tgt.nsec + rq.nsec > MAX_SECTORS:
            return None
        del self._ends[rq.sector]
        tgt.nsec += rq.nsec
        self._ends[tgt.sector + tgt.nsec] = tgt
        if tgt.merged is None:
            tgt.merged = [rq]
        else:
            tgt.merged.append(rq)
        rq.issue = -2.0  # merged: never dispatched on its own
        return tgt

    def merge_or_stamp(self, rq: Request) -> Request | None:
        """back_merge(rq) if a queued request ends where rq starts; when nothing takes it,
        rq gets its arrival number (_stamp) and None is returned."""
        if rq.sector in self._ends:
            tgt = self.back_merge(rq)
            if tgt is not None:
                return tgt
        self._seq += 1
        rq.seq = self._seq
        return None

    def track(self, rq: Request) -> None:
        self._ends[rq.sector + rq.nsec] = rq

    def untrack(self, rq: Request) -> None:
        e = rq.sector + rq.nsec
        if self._ends.get(e) is rq:
            del self._ends[e]

    def add(self, rq: Request, now: float) -> Request | None:
        raise NotImplementedError

    def dispatch(self, now: float) -> Decision:
        raise NotImplementedError

    def completed(self, rq: Request, now: float) -> None:
        pass

    def __len__(self) -> int:
        raise NotImplementedError


_TIE = 1 << 24  # sort key: sector * _TIE + arrival number (mod _TIE) as the tie-breaker


class SortedQueue:
    """Requests in sector order (arrival order among equal sectors) with removal by identity;
    a list with bisect on integer keys is faster than a tree in Python for the queue lengths a
    disk sees."""

    __slots__ = ("keys", "reqs")

    def __init__(self) -> None:
        self.keys: list[int] = []
        self.reqs: list[Request] = []

    def __len__(self) -> int:
        return len(self.reqs)

    def add(self, rq: Request) -> None:
        k = rq.sector * _TIE + rq.seq % _TIE
        i = bisect_left(self.keys, k)
        self.keys.insert(i, k)
        self.reqs.insert(i, rq)

    def remove(self, rq: Request) -> None:
        i = bisect_left(self.keys, rq.sector * _TIE + rq.seq % _TIE)
        assert self.reqs[i] is rq
        del self.keys[i]
        del self.reqs[i]

    def at_or_after(self, sector: int) -> Request | None:
        i = bisect_left(self.keys, sector * _TIE)
        return self.reqs[i] if i < len(self.reqs) else None

    def before(self, sector: int) -> Request | None:
        i = bisect_left(self.keys, sector * _TIE)
        return self.reqs[i - 1] if i > 0 else None


__all__ = ["MAX_SECTORS", "Decision", "Scheduler", "SortedQueue", "insort"]
