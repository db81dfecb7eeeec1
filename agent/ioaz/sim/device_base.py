"""What the engine needs from any simulated device (devices.py says how models are loaded).

A device is driven by the engine through three calls: `bind(at, done)` gives it the event clock
(`at(time, fn, arg)` calls `fn(time, arg)` then) and the completion callback
(`done(request, time)`); `can_accept()` says whether the host may issue one more request (the
device's queue depth); `submit(request, now)` hands a request over. The device schedules its
own completion events.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ioaz.sim.request import Request

AtFn = Callable[[float, Callable[[float, Any], None], Any], None]
DoneFn = Callable[[Request, float], None]


class Device:
    """What the engine needs from any device."""

    name = "device"
    queue_depth = 1

    def __init__(self) -> None:
        self.inflight = 0
        self.rotational = True   # queue/rotational: how the kernel's bfq tells disks from flash
        self._at: AtFn | None = None
        self._done: DoneFn | None = None

    def bind(self, at: AtFn, done: DoneFn) -> None:
        self._at = at
        self._done = done

    def can_accept(self) -> bool:
        return self.inflight < self.queue_depth

    def submit(self, rq: Request, now: float) -> None:
        raise NotImplementedError

    @property
    def capacity_sectors(self) -> int:
        raise NotImplementedError

    def estimate(self, distance: int, nsec: int = 8) -> float:
        """Expected service time (s) of an nsec request `distance` sectors from the last one;
        what Xu & Jiang's calculate_service_time() fits from measurements (their 3.2)."""
        raise NotImplementedError

