"""A zoned seek-and-rotate hard disk with an optional command queue and a segmented read cache.

Parameters come from YAML (models/*.yaml, loaded by devices.py); every default there cites the
paper it comes from, and the few numbers the papers do not give are marked as assumptions.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from operator import attrgetter

from ioaz.sim.device_base import Device
from ioaz.sim.request import SECTOR, Request

# the read-cache index's bucket: 2**14 sectors (8 MiB), so a frozen segment (a request and its
# read-ahead, or a sequential run the head followed) usually sits in one or two
SEG_BUCKET_SHIFT = 14



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
    segment_kb: float = 1024.0         # what one segment holds: a stream's newest data
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
        self.seg_max = max(1, int(p.segment_kb * 1024 / SECTOR))
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
            # The head reads on past this request from the moment it reached its end. The
            # segment keeps only its newest segment_kb: a stream read through it overwrites
            # what it read longer ago (a segment that held the whole stream served every
            # later pass over it from the cache, at the interface's rate).
            act.end0, act.t0, act.used = e, max(ready, now), now
            if e - act.start > self.seg_max:
                act.start = e - self.seg_max
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
