"""Devices without a head: an SSD (parallel channels, a fixed cost per request and per byte)
and a fixed-service device (every request takes the same time: the simulator's own speed test).
"""
from __future__ import annotations

from dataclasses import dataclass

from ioaz.sim.device_base import Device
from ioaz.sim.request import SECTOR, Request


@dataclass
class SSDParams:
    name: str = "ssd"
    capacity_gb: float = 480.0
    read_us: float = 80.0            # assumption: a SATA-era flash read
    write_us: float = 30.0           # assumption: write into the drive's buffer
    channels: int = 8                # requests served in parallel
    channel_mb_s: float = 250.0      # per channel transfer
    queue_depth: int = 32


class SSD(Device):
    """Flash: position-independent latency plus transfer, `channels` requests at a time."""

    def __init__(self, p: SSDParams) -> None:
        super().__init__()
        self.rotational = False
        self.p = p
        self.name = p.name
        self.queue_depth = p.queue_depth
        self.queue: list[Request] = []
        self.busy = 0
        self._cap = int(p.capacity_gb * 1e9 / SECTOR)
        self.bps = p.channel_mb_s * 1e6

    @property
    def capacity_sectors(self) -> int:
        return self._cap

    def service(self, rq: Request) -> float:
        lat = self.p.write_us if rq.write else self.p.read_us
        return lat / 1e6 + rq.nsec * SECTOR / self.bps

    def estimate(self, distance: int, nsec: int = 8) -> float:
        return self.p.read_us / 1e6 + nsec * SECTOR / self.bps

    def submit(self, rq: Request, now: float) -> None:
        self.inflight += 1
        if self.busy < self.p.channels:
            self.busy += 1
            assert self._at is not None
            self._at(now + self.service(rq), self._finish, rq)
        else:
            self.queue.append(rq)

    def _finish(self, now: float, rq: Request) -> None:
        self.inflight -= 1
        if self.queue:
            nxt = self.queue.pop(0)
            assert self._at is not None
            self._at(now + self.service(nxt), self._finish, nxt)
        else:
            self.busy -= 1
        assert self._done is not None
        self._done(rq, now)




# ------------------------------------------------------------------------- fixed service


@dataclass
class FixedParams:
    name: str = "fixed"
    capacity_gb: float = 100.0
    service_ms: float = 1.0          # every request, whatever its size or position
    queue_depth: int = 1


class FixedDevice(Device):
    """A device that takes service_ms per request, one at a time in arrival order (null_blk with
    completion_nsec, as the dispatch-order vectors use); also the cheapest device for timing
    the engine."""

    def __init__(self, p: FixedParams) -> None:
        super().__init__()
        self.p = p
        self.name = p.name
        self.queue_depth = p.queue_depth
        self.service = p.service_ms / 1e3
        self._cap = int(p.capacity_gb * 1e9 / SECTOR)
        self.queue: list[Request] = []
        self.busy = False

    @property
    def capacity_sectors(self) -> int:
        return self._cap

    def estimate(self, distance: int, nsec: int = 8) -> float:
        return self.service

    def submit(self, rq: Request, now: float) -> None:
        self.inflight += 1
        if self.busy:
            self.queue.append(rq)
        else:
            self.busy = True
            assert self._at is not None
            self._at(now + self.service, self._finish, rq)

    def _finish(self, now: float, rq: Request) -> None:
        self.inflight -= 1
        if self.queue:
            assert self._at is not None
            self._at(now + self.service, self._finish, self.queue.pop(0))
        else:
            self.busy = False
        assert self._done is not None
        self._done(rq, now)
