"""RAID 0, 1+0 and 5 arrays of the HDD model, behind a controller with its own queue
(Carroll 2.3)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ioaz.sim.device_base import AtFn, Device, DoneFn
from ioaz.sim.hdd import HDD, HDDParams
from ioaz.sim.request import SECTOR, Request


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
