"""fifo (Carroll 3.1) and noop.

fifo is strict first-come first-served: never merged, never reordered. noop keeps arrival order
too but back-merges a bio into the queued request it continues (Xu & Jiang 3.1: "does nothing
beyond merging contiguous requests")."""
from __future__ import annotations

from collections import deque
from typing import Any, ClassVar

from ioaz.sim.request import Request
from ioaz.sim.schedulers.base import Decision, Scheduler


class Fifo(Scheduler):
    name = "fifo"
    DEFAULTS: ClassVar[dict[str, Any]] = {}

    def __init__(self, device: object = None, **tunables: object) -> None:
        super().__init__(device, **tunables)
        self.q: deque[Request] = deque()

    def add(self, rq: Request, now: float) -> Request | None:
        self.q.append(rq)
        return None

    def dispatch(self, now: float) -> Decision:
        return self.q.popleft() if self.q else None

    def __len__(self) -> int:
        return len(self.q)


class Noop(Fifo):
    name = "noop"

    def add(self, rq: Request, now: float) -> Request | None:
        tgt = self.back_merge(rq)
        if tgt is not None:
            return tgt
        self.q.append(rq)
        self.track(rq)
        return None

    def dispatch(self, now: float) -> Decision:
        if not self.q:
            return None
        rq = self.q.popleft()
        self.untrack(rq)
        return rq
