"""Device models: a zoned seek-and-rotate HDD with an optional command queue and read cache,
an SSD, and RAID 0, 1+0 and 5 arrays of HDDs.

A device is driven by the engine through three calls: `bind(at, done)` gives it the event clock
(`at(time, fn, arg)` calls `fn(time, arg)` then) and the completion callback
(`done(request, time)`); `can_accept()` says whether the host may issue one more request (the
device's queue depth); `submit(request, now)` hands a request over. The device schedules its
own completion events.

Parameters come from YAML (models/*.yaml, see `load_device`); every default there cites the paper
it comes from, and the few numbers the papers do not give are marked as assumptions.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import Any

import yaml

from ioaz.sim import PKG
from ioaz.sim.request import SECTOR, Request

# the read-cache index's bucket: 2**14 sectors (8 MiB), so a frozen segment (a request and its
# read-ahead, or a sequential run the head followed) usually sits in one or two
SEG_BUCKET_SHIFT = 14
AtFn = Callable[[float, Callable[[float, Any], None], Any], None]
DoneFn = Callable[[Request, float], None]
MODELS_DIR = PKG / "models"  # the sources' directory, also when this module runs compiled


class Device:
    """What the engine needs from any device."""

    name = "device"
    queue_depth = 1

    def __init__(self) -> None:
        self.inflight = 0
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


# ----------------------------------------------------------------------------------- HDD


@dataclass
class HDDParams:
    name: str = "hdd"
    capacity_gb: float = 72.0          # decimal GB
    rpm: float = 10000.0
    heads: int = 2                     # tracks per cylinder
    zones: int = 20
    rate_outer_mb_s: float = 89.0      # media transfer rate, decimal MB/s, outermost zone
    rate_inner_mb_s: float = 55.0
    seek_t2t_ms: float = 0.5           # one-cylinder seek
    seek_avg_ms: float = 3.7           # seek over a third of the cylinders
    seek_full_ms: float = 8.0          # full stroke
    overhead_ms: float = 0.05          # command processing, every request
    iface_mb_s: float = 300.0          # host interface, for cache hits
    queue_depth: int = 1               # commands the disk holds and reorders (NCQ/TCQ)
    cache_segments: int = 0            # read cache segments (0: no read cache)
    min_prefetch_kb: float = 0.0       # read-ahead after a read miss the disk always finishes
    max_prefetch_kb: float = 0.0       # read-ahead it continues while idle, abortable


class _Segment:
    """A read-cache segment: data from `start` up to an end that grows while the head keeps
    reading ahead into it (prefetch), frozen once the head leaves."""

    __slots__ = ("end0", "frozen", "sps", "start", "t0", "used")

    def __init__(self, start: int, end0: int, t0: float, sps: float) -> None:
        self.start = start
        self.end0 = end0      # end of the data the host asked for
        self.sps = sps        # media rate (sectors/s) of the zone end0 lies in
        self.t0 = t0          # when the head had read up to end0
        self.frozen = -1      # end once prefetch stopped, -1 while the head is still on it
        self.used = t0


class HDD(Device):
    """One spindle. Service time of a media access (seek model after Ruemmler & Wilkes, as
    Xu & Jiang 3.2 fit theirs: a + b*sqrt(d) for short seeks, linear for long ones):

        overhead + seek(cylinder distance) + half a rotation + nsec / (sectors per track * rps)

    with no seek and no rotation when the request starts exactly where the head stopped.
    The short-seek curve passes through the one-cylinder time at d=1 and the average seek at
    d=C/3 (the mean distance between two uniform random cylinders); the long-seek line joins
    that point to the full-stroke time at d=C-1. Rotational delay is the expected half turn, so
    the model is deterministic and hand-checkable.
    """

    def __init__(self, p: HDDParams) -> None:
        super().__init__()
        self.p = p
        self.name = p.name
        self.queue_depth = max(1, p.queue_depth)
        rps = p.rpm / 60.0
        self.rps = rps
        self.rot_s = 1.0 / rps
        spt_out = p.rate_outer_mb_s * 1e6 / (SECTOR * rps)
        spt_in = p.rate_inner_mb_s * 1e6 / (SECTOR * rps)
        z = max(1, p.zones)
        self.spt = [round(spt_out + (spt_in - spt_out) * (i / (z - 1) if z > 1 else 0))
                    for i in range(z)]
        mean_spt = sum(self.spt) / z
        cyls = max(z, round(p.capacity_gb * 1e9 / SECTOR / (p.heads * mean_spt)))
        self.cyl_per_zone = max(1, cyls // z)
        self.cylinders = self.cyl_per_zone * z
        self.zone_lba: list[int] = []   # first sector of each zone
        lba = 0
        for s in self.spt:
            self.zone_lba.append(lba)
            lba += self.cyl_per_zone * p.heads * s
        self._capacity = lba
        self.d0 = self.cylinders / 3.0
        t2t, avg, full = p.seek_t2t_ms / 1e3, p.seek_avg_ms / 1e3, p.seek_full_ms / 1e3
        self.seek_b = (avg - t2t) / (math.sqrt(self.d0) - 1.0)
        self.seek_a = t2t - self.seek_b
        self.seek_avg = avg
        self.seek_slope = (full - avg) / max(1.0, (self.cylinders - 1) - self.d0)
        self.overhead = p.overhead_ms / 1e3
        self.half_rot = self.rot_s / 2
        self.iface_bps = p.iface_mb_s * 1e6
        self.min_pf = int(p.min_prefetch_kb * 1024 / SECTOR)
        self.max_pf = max(self.min_pf, int(p.max_prefetch_kb * 1024 / SECTOR))
        self.cache_segments = p.cache_segments
        # per-zone tables for the hot path: media rate (sectors/s), sectors per cylinder and
        # first cylinder; the same products the pure functions below compute
        self.zone_sps = [s * rps for s in self.spt]
        self.zone_per_cyl = [p.heads * s for s in self.spt]
        self.zone_cyl0 = [z * self.cyl_per_zone for z in range(len(self.spt))]
        self.zone_end = [*self.zone_lba[1:], math.inf]   # first sector past each zone
        # head state
        self.head_lba = 0
        self.head_cyl = 0
        self.head_free = 0.0          # the head is busy finishing a minimum prefetch until then
        self.segments: list[_Segment] = []
        self.active: _Segment | None = None
        # Frozen segments indexed by the 2**SEG_BUCKET_SHIFT-sector buckets they cover: a read
        # looks at the segments over its first sector, a write at those over its range,
        # instead of scanning every segment. A bucket's list keeps the order of `segments`
        # (both are in creation order: a segment is frozen before the next one is created),
        # so the first match is the one a scan of `segments` finds.
        self.seg_index: dict[int, list[_Segment]] = {}
        self.queue: list[Request] = []
        self.busy = False
        self.cache_hits = 0

    # --- geometry and timing, all pure -------------------------------------------------
    @property
    def capacity_sectors(self) -> int:
        return self._capacity

    def zone_of(self, lba: int) -> int:
        return max(0, bisect_right(self.zone_lba, lba) - 1)

    def cylinder_of(self, lba: int) -> int:
        z = self.zone_of(lba)
        return min(self.cylinders - 1,
                   self.zone_cyl0[z] + (lba - self.zone_lba[z]) // self.zone_per_cyl[z])

    def sectors_per_s(self, lba: int) -> float:
        return self.zone_sps[self.zone_of(lba)]

    def seek_time(self, d: int) -> float:
        if d <= 0:
            return 0.0
        if d <= self.d0:
            return self.seek_a + self.seek_b * math.sqrt(d)
        return self.seek_avg + self.seek_slope * (d - self.d0)

    def transfer_time(self, lba: int, nsec: int) -> float:
        return nsec / self.sectors_per_s(lba)

    def media_time(self, from_lba: int, rq_lba: int, nsec: int) -> float:
        """Overhead + positioning + transfer from a head that stopped at from_lba."""
        if rq_lba == from_lba:
            return self.overhead + self.transfer_time(rq_lba, nsec)
        d = abs(self.cylinder_of(rq_lba) - self.cylinder_of(from_lba))
        return (self.overhead + self.seek_time(d) + self.rot_s / 2
                + self.transfer_time(rq_lba, nsec))

    def estimate(self, distance: int, nsec: int = 8) -> float:
        mid = self._capacity // 2
        return self.media_time(mid, min(self._capacity - 1, mid + abs(distance)), nsec)

    # --- the read cache ----------------------------------------------------------------
    def _valid_end(self, seg: _Segment, t: float) -> int:
        if seg.frozen >= 0:
            return seg.frozen
        dt = t - seg.t0
        grown = int((dt if dt > 0.0 else 0.0) * seg.sps)
        mp = self.max_pf
        return seg.end0 + (grown if grown < mp else mp)

    def _index(self, seg: _Segment) -> None:
        """Enter a segment that has just been frozen into seg_index."""
        idx = self.seg_index
        for b in range(seg.start >> SEG_BUCKET_SHIFT, ((seg.frozen - 1) >> SEG_BUCKET_SHIFT) + 1):
            lst = idx.get(b)
            if lst is None:
                idx[b] = [seg]
            else:
                lst.append(seg)

    def _unindex(self, seg: _Segment) -> None:
        idx = self.seg_index
        for b in range(seg.start >> SEG_BUCKET_SHIFT, ((seg.frozen - 1) >> SEG_BUCKET_SHIFT) + 1):
            lst = idx[b]
            lst.remove(seg)
            if not lst:
                del idx[b]

    def _read_cached(self, rq: Request, now: float) -> float:
        """Service time if the cache can serve the read (fully or by the ongoing prefetch),
        else -1. Every segment but the active one is frozen; the active one is the newest,
        the last a scan of `segments` would reach."""
        s = rq.sector
        e = s + rq.nsec
        lst = self.seg_index.get(s >> SEG_BUCKET_SHIFT)
        if lst is not None:
            for seg in lst:
                if seg.start <= s and e <= seg.frozen:
                    seg.used = now
                    self.cache_hits += 1
                    return self.overhead + rq.nsec * SECTOR / self.iface_bps
        act = self.active
        if act is None or act.start > s:
            return -1.0
        # the segment the head reads ahead into: how far it has got by now
        act_end = self._valid_end(act, now)
        if e <= act_end:
            act.used = now
            self.cache_hits += 1
            return self.overhead + rq.nsec * SECTOR / self.iface_bps
        if s <= act_end:
            # The head is reading ahead right here: wait for it to reach the end of the request.
            ready = act.t0 + (e - act.end0) / act.sps
            t = self.overhead + max(0.0, ready - now)
            # The head reads on past this request from the moment it reached its end.
            act.end0, act.t0, act.used = e, max(ready, now), now
            act.sps = self.sectors_per_s(e)
            self.head_lba = e
            self.cache_hits += 1
            return t
        return -1.0

    def access(self, rq: Request, now: float) -> float:
        """Serve rq starting at `now` (the disk is free): returns its service time and moves
        the head. Public so tests can hand-check single accesses."""
        s = rq.sector
        nsec = rq.nsec
        e = s + nsec
        write = rq.write
        cached = self.cache_segments > 0
        act = self.active
        idx = self.seg_index
        # a read the cache may serve: a frozen segment in its first sector's bucket, or the
        # active one starting at or before it and able to reach it (a segment's end is at most
        # end0 + max_pf)
        if cached and not write and (
                idx.get(s >> SEG_BUCKET_SHIFT) is not None
                or (act is not None and act.start <= s <= act.end0 + self.max_pf)):
            t = self._read_cached(rq, now)
            if t >= 0:
                return t
        hf = self.head_free
        if act is not None:
            # the head moves away: the segment it was reading ahead into stops growing
            t = now if now >= hf else hf
            f = act.frozen
            if f < 0:
                dt = t - act.t0
                grown = int((dt if dt > 0.0 else 0.0) * act.sps)
                mp = self.max_pf
                f = act.end0 + (grown if grown < mp else mp)
            act.frozen = f
            self.active = None
            b = act.start >> SEG_BUCKET_SHIFT
            if b == (f - 1) >> SEG_BUCKET_SHIFT:   # _index(act) for a one-bucket segment
                lst = idx.get(b)
                if lst is None:
                    idx[b] = [act]
                else:
                    lst.append(act)
            else:
                self._index(act)
        start = now if now >= hf else hf
        if write and self.segments:
            # Write-through: drop cached copies of what is overwritten (all frozen by now).
            drop = None
            for b in range(s >> SEG_BUCKET_SHIFT, ((e - 1) >> SEG_BUCKET_SHIFT) + 1):
                lst = idx.get(b)
                if lst is not None:
                    for g in lst:
                        if g.start < e and g.frozen > s:
                            if drop is None:
                                drop = [g]
                            elif g not in drop:
                                drop.append(g)
            if drop is not None:
                self.segments = [g for g in self.segments if g.start >= e or g.frozen <= s]
                for g in drop:
                    self._unindex(g)
        zlba = self.zone_lba
        z = bisect_right(zlba, s) - 1
        if z < 0:
            z = 0
        sps = self.zone_sps[z]
        if s == self.head_lba:
            t_end = start + self.overhead + nsec / sps
        else:
            cyl = self.zone_cyl0[z] + (s - zlba[z]) // self.zone_per_cyl[z]
            last = self.cylinders - 1
            d = (cyl if cyl < last else last) - self.head_cyl
            if d < 0:
                d = -d
            if d <= 0:
                seek = 0.0
            elif d <= self.d0:
                seek = self.seek_a + self.seek_b * math.sqrt(d)
            else:
                seek = self.seek_avg + self.seek_slope * (d - self.d0)
            t_end = start + (self.overhead + seek + self.half_rot + nsec / sps)
        self.head_lba = e
        if e < self.zone_end[z]:
            ze = z                 # the access ends in the zone it started in
        else:
            ze = bisect_right(zlba, e) - 1
        cyl = self.zone_cyl0[ze] + (e - zlba[ze]) // self.zone_per_cyl[ze]
        self.head_cyl = cyl if cyl < self.cylinders - 1 else self.cylinders - 1
        self.head_free = t_end
        if cached and not write:
            segs = self.segments
            if len(segs) >= self.cache_segments:
                old = min(segs, key=_used)
                segs.remove(old)
                b = old.start >> SEG_BUCKET_SHIFT
                if b == (old.frozen - 1) >> SEG_BUCKET_SHIFT:   # _unindex(old), one bucket
                    lst = idx[b]
                    if len(lst) == 1:
                        del idx[b]
                    else:
                        lst.remove(old)
                else:
                    self._unindex(old)
                # the evicted segment's object serves the new one (_Segment.__init__, inline)
                seg = old
                seg.start = s
                seg.end0 = e
                seg.sps = self.zone_sps[ze]
                seg.t0 = seg.used = t_end
                seg.frozen = -1
            else:
                seg = _Segment(s, e, t_end, self.zone_sps[ze])
            segs.append(seg)
            self.active = seg
            if self.min_pf:
                # The head keeps reading min_prefetch before it will accept a seek.
                self.head_free = t_end + self.min_pf / self.zone_sps[ze]
        return t_end - now

    # --- queueing ----------------------------------------------------------------------
    def submit(self, rq: Request, now: float) -> None:
        self.inflight += 1
        if self.busy:
            self.queue.append(rq)
        else:
            # the disk is idle, so its queue is empty: serve rq at once
            self.busy = True
            self._at(now + self.access(rq, now), self._finish, rq)  # type: ignore[misc]

    def _pick(self) -> Request:
        q = self.queue
        if len(q) == 1 or self.queue_depth == 1:
            return q.pop(0)
        # Command queueing: among the first queue_depth commands, the shortest seek first
        # (a streaming continuation has distance 0).
        window = q[: self.queue_depth]
        hl, hc = self.head_lba, self.head_cyl
        best = min(range(len(window)),
                   key=lambda i: -1 if window[i].sector == hl
                   else abs(self.cylinder_of(window[i].sector) - hc))
        return q.pop(best)

    def _start(self, now: float) -> None:
        rq = self._pick()
        self.busy = True
        assert self._at is not None
        self._at(now + self.access(rq, now), self._finish, rq)

    def _finish(self, now: float, rq: Request) -> None:
        rq.complete = now
        self.busy = False
        self.inflight -= 1
        if self.queue:
            self._start(now)
        self._done(rq, now)  # type: ignore[misc]


_used = attrgetter("used")


# ----------------------------------------------------------------------------------- SSD


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


# ---------------------------------------------------------------------------------- RAID


@dataclass
class RAIDParams:
    name: str = "raid"
    level: str = "0"                 # "0", "1+0", "5"
    disks: int = 4
    stripe_kb: float = 128.0         # Carroll Table 4.5: 128 KiB for 0 and 1+0, 64 KiB for 5
    queue_depth: int = 32            # controller queue (Carroll 3.3/5.4: 32 did best)
    member: dict[str, Any] | None = None   # HDDParams fields of every member disk


class _Op:
    """A host request in the controller: stages of member I/Os; a stage starts when the
    previous one is done (RAID 5 read-modify-write)."""

    __slots__ = ("pending", "rq", "stages")

    def __init__(self, rq: Request, stages: list[list[tuple[int, int, int, bool]]]) -> None:
        self.rq = rq
        self.stages = stages
        self.pending = 0


class RAID(Device):
    """A hardware array (Carroll 2.3): stripe units round-robin over the members; RAID 1+0 is
    RAID 0 over mirrored pairs (reads from the less busy mirror, writes to both); RAID 5 rotates
    a parity unit (left-symmetric), full-stripe writes go straight to disk, partial ones read
    old data and parity first (read-modify-write). Each member queues its parts FIFO and reorders
    within its own command queue."""

    def __init__(self, p: RAIDParams) -> None:
        super().__init__()
        self.p = p
        self.name = p.name
        self.queue_depth = p.queue_depth
        mp = HDDParams(**(p.member or {}))
        mp.queue_depth = max(1, mp.queue_depth)
        self.members = [HDD(mp) for _ in range(p.disks)]
        self.unit = int(p.stripe_kb * 1024 / SECTOR)
        n = p.disks
        if p.level == "0":
            self.data_disks = n
        elif p.level == "1+0":
            if n % 2:
                raise ValueError("RAID 1+0 needs an even number of disks")
            self.data_disks = n // 2
        elif p.level == "5":
            if n < 3:
                raise ValueError("RAID 5 needs at least 3 disks")
            self.data_disks = n - 1
        else:
            raise ValueError(f"RAID level {p.level!r} not one of 0, 1+0, 5")
        per_disk = self.members[0].capacity_sectors // self.unit * self.unit
        self._cap = per_disk * self.data_disks

    @property
    def capacity_sectors(self) -> int:
        return self._cap

    def bind(self, at: AtFn, done: DoneFn) -> None:
        super().bind(at, done)
        for m in self.members:
            m.bind(at, self._member_done)

    def estimate(self, distance: int, nsec: int = 8) -> float:
        return self.members[0].estimate(distance // self.data_disks, nsec)

    # --- mapping -------------------------------------------------------------------------
    def units(self, sector: int, nsec: int) -> list[tuple[int, int, int]]:
        """Split [sector, sector+nsec) into (logical unit, offset in unit, length) pieces."""
        out = []
        u = self.unit
        while nsec > 0:
            lu, off = divmod(sector, u)
            ln = min(nsec, u - off)
            out.append((lu, off, ln))
            sector += ln
            nsec -= ln
        return out

    def locate(self, lu: int) -> tuple[int, int]:
        """Logical stripe unit -> (member disk, first sector on that disk) for RAID 0 / 5;
        for RAID 1+0 the disk is the first of the mirror pair."""
        n, u = self.p.disks, self.unit
        if self.p.level == "0":
            stripe, k = divmod(lu, n)
            return k, stripe * u
        if self.p.level == "1+0":
            stripe, k = divmod(lu, n // 2)
            return 2 * k, stripe * u
        stripe, k = divmod(lu, n - 1)
        parity = (n - 1) - stripe % n
        return (parity + 1 + k) % n, stripe * u

    def parity_disk(self, stripe: int) -> int:
        return (self.p.disks - 1) - stripe % self.p.disks

    def plan(self, rq: Request) -> list[list[tuple[int, int, int, bool]]]:
        """Member I/Os of a host request, in stages: (disk, sector, nsec, write)."""
        lvl = self.p.level
        pieces = self.units(rq.sector, rq.nsec)
        if lvl == "0" or (lvl == "5" and not rq.write):
            return [[(d, base + off, ln, rq.write)
                     for lu, off, ln in pieces for d, base in [self.locate(lu)]]]
        if lvl == "1+0":
            ios = []
            for lu, off, ln in pieces:
                d, base = self.locate(lu)
                if rq.write:
                    ios += [(d, base + off, ln, True), (d + 1, base + off, ln, True)]
                else:
                    a, b = self.members[d], self.members[d + 1]
                    ios.append((d if a.inflight <= b.inflight else d + 1, base + off, ln, False))
            return [ios]
        # RAID 5 write: group the pieces by stripe.
        by_stripe: dict[int, list[tuple[int, int, int]]] = {}
        for lu, off, ln in pieces:
            by_stripe.setdefault(lu // (self.p.disks - 1), []).append((lu, off, ln))
        reads: list[tuple[int, int, int, bool]] = []
        writes: list[tuple[int, int, int, bool]] = []
        u = self.unit
        for stripe, ps in by_stripe.items():
            pd = self.parity_disk(stripe)
            full = len(ps) == self.p.disks - 1 and all(ln == u for _, _, ln in ps)
            lo = min(off for _, off, _ in ps)
            hi = max(off + ln for _, off, ln in ps)
            for lu, off, ln in ps:
                d, base = self.locate(lu)
                if not full:
                    reads.append((d, base + off, ln, False))
                writes.append((d, base + off, ln, True))
            if not full:
                reads.append((pd, stripe * u + lo, hi - lo, False))
            writes.append((pd, stripe * u + lo, hi - lo, True))
        return [reads, writes] if reads else [writes]

    # --- queueing -------------------------------------------------------------------------
    def submit(self, rq: Request, now: float) -> None:
        self.inflight += 1
        op = _Op(rq, self.plan(rq))
        self._stage(op, now)

    def _stage(self, op: _Op, now: float) -> None:
        ios = op.stages.pop(0)
        op.pending = len(ios)
        for d, sector, nsec, write in ios:
            sub = Request(op, op.rq.pid, sector, nsec, write, op.rq.sync, now)
            self.members[d].submit(sub, now)

    def _member_done(self, sub: Request, now: float) -> None:
        op = sub.id
        assert isinstance(op, _Op)
        op.pending -= 1
        if op.pending:
            return
        if op.stages:
            self._stage(op, now)
            return
        self.inflight -= 1
        op.rq.complete = now
        assert self._done is not None
        self._done(op.rq, now)

    # members take unbounded controller queues: their queue_depth only bounds reordering
    def member_queue_lengths(self) -> list[int]:
        return [len(m.queue) for m in self.members]


# ------------------------------------------------------------------------------- loading


def _build(cls: type, kwargs: dict[str, Any], where: str) -> Any:
    known = {f.name for f in fields(cls)}
    bad = sorted(set(kwargs) - known)
    if bad:
        raise ValueError(f"{where}: unknown parameter(s) {bad}; expected some of {sorted(known)}")
    return cls(**kwargs)


def device_from_dict(spec: dict[str, Any], where: str = "device") -> Device:
    spec = dict(spec)
    kind = spec.pop("kind", "hdd")
    if kind == "hdd":
        return HDD(_build(HDDParams, spec, where))
    if kind == "ssd":
        return SSD(_build(SSDParams, spec, where))
    if kind == "fixed":
        return FixedDevice(_build(FixedParams, spec, where))
    if kind == "raid":
        spec["level"] = str(spec.get("level", "0"))
        member = spec.get("member")
        if isinstance(member, str):
            spec["member"] = _load_spec(member)
            spec["member"].pop("kind", None)
        return RAID(_build(RAIDParams, spec, where))
    raise ValueError(f"{where}: kind {kind!r} not one of hdd, ssd, fixed, raid")


def _load_spec(name_or_path: str) -> dict[str, Any]:
    path = Path(name_or_path)
    if not path.suffix:
        path = MODELS_DIR / f"{name_or_path}.yaml"
    if not path.exists():
        raise ValueError(f"device model {name_or_path!r} not found "
                         f"(known: {', '.join(model_names())})")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of device parameters")  # noqa: TRY004
    data.setdefault("name", path.stem)
    return data


def load_device(name_or_path: str, **overrides: Any) -> Device:
    """A device from a model name (models/NAME.yaml) or a YAML file path, with overrides."""
    spec = _load_spec(name_or_path)
    spec.update(overrides)
    return device_from_dict(spec, where=name_or_path)


def model_names() -> list[str]:
    return sorted(p.stem for p in MODELS_DIR.glob("*.yaml"))
