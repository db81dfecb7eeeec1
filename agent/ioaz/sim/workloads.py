"""Workloads: processes issuing requests, grouped in phases, and the papers' named workloads.

A process issues synchronous requests one at a time (the next one `think` after the previous
completes, as a process blocked in read() does) or asynchronous ones keeping `depth` in flight
(write-back, AIO). Positions follow a pattern (seq, rand) inside the process's region.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from heapq import heappush
from typing import Any

from ioaz.sim.request import SECTOR, Request

GB = 10**9 // SECTOR        # sectors per decimal GB
KIB = 1024 // SECTOR


@dataclass
class ProcSpec:
    name: str = "p"
    op: str = "read"             # read | write | mixed
    read_fraction: float = 0.5   # for mixed
    pattern: str = "seq"         # seq | rand
    size_kb: float = 4.0
    sync: bool = True            # True: one request at a time
    depth: int = 1               # requests kept in flight when not sync
    # O_DIRECT: the elevators see every request as synchronous however many are in flight,
    # as the kernel's op_is_sync() sees a libaio writer's REQ_SYNC (bfq and cfq give it its
    # own queue, not the shared asynchronous one); False: only one-at-a-time requests are
    direct: bool = False
    think_ms: float = 0.0
    host_us: float = 20.0        # completion-to-next-submit cost of the host (syscall, wakeup)
    region_gb: float = 0.0       # where the process's file starts
    span_gb: float = 1.0         # how big it is
    backward: bool = False       # seq going down
    count: int | None = None  # requests to issue; None: until the phase ends
    # > 0: a sequential reader through the page cache (BufferedReader): the process reads
    # size_kb at a time from memory, the kernel reads ahead readahead_kb per disk request
    readahead_kb: float = 0.0

    def __post_init__(self) -> None:
        if self.op not in ("read", "write", "mixed"):
            raise ValueError(f"process {self.name}: op {self.op!r} not read|write|mixed")
        if self.pattern not in ("seq", "rand"):
            raise ValueError(f"process {self.name}: pattern {self.pattern!r} not seq|rand")
        if self.size_kb <= 0 or self.span_gb <= 0 or self.depth < 1:
            raise ValueError(f"process {self.name}: size_kb, span_gb and depth must be positive")
        if self.readahead_kb > 0 and (self.op != "read" or self.pattern != "seq"
                                      or self.backward or self.readahead_kb < self.size_kb):
            raise ValueError(f"process {self.name}: readahead_kb needs a forward sequential "
                             "reader and at least size_kb")


@dataclass
class Phase:
    duration_s: float | None          # None: until every process has issued its count
    procs: list[ProcSpec] = field(default_factory=list)
    name: str = ""


@dataclass
class Workload:
    name: str
    phases: list[Phase]


class SimProcess:
    """What the engine keeps per pid: a workload's Process or a replayed trace's process."""

    __slots__ = ()
    pid: int
    spec: ProcSpec
    bytes: int

    def complete(self, rq: Request, now: float) -> None:
        raise NotImplementedError

    def stop(self, now: float) -> None:
        raise NotImplementedError

    @property
    def active_s(self) -> float:
        raise NotImplementedError


class Process(SimProcess):
    """A running ProcSpec. The engine calls start(), then complete() for each request."""

    __slots__ = (
        "_rid",
        "bytes",
        "delay",
        "done",
        "end_t",
        "getrandbits",
        "hi",
        "issued",
        "lat_max",
        "lat_sum",
        "lo",
        "nsec",
        "outstanding",
        "pid",
        "pos",
        "rand",
        "rand_k",
        "rand_n",
        "randbelow",
        "read_fraction",
        "rng",
        "sim",
        "spec",
        "start_t",
        "stop_at",
        "stopped",
        "sync",
        "write_fixed",
    )

    def __init__(self, pid: int, spec: ProcSpec, sim: Any, seed: int) -> None:
        self.pid = pid
        self.spec = spec
        self.sim = sim
        self.rng = random.Random(seed * 1000003 + pid)
        self.nsec = max(1, int(spec.size_kb * KIB))
        cap = sim.device.capacity_sectors
        span = max(self.nsec, int(spec.span_gb * GB))
        # the engine fits a phase's files to the device (fit_layout); this only guards a
        # process started on its own
        self.lo = min(int(spec.region_gb * GB), max(0, cap - span))
        self.hi = min(cap, self.lo + span)
        self.hi -= (self.hi - self.lo) % self.nsec
        self.pos = self.hi - self.nsec if spec.backward else self.lo
        self.issued = 0
        self.stopped = False
        self.outstanding = 0
        self.bytes = 0
        self.done = 0
        self.start_t = 0.0
        self.end_t = -1.0
        self.lat_sum = 0.0
        self.lat_max = 0.0
        self.delay = (spec.think_ms / 1e3) + spec.host_us / 1e6
        self.write_fixed: bool | None = None if spec.op == "mixed" else spec.op == "write"
        self._rid = 0
        # the spec's fields the hot path reads, held here
        self.rand = spec.pattern == "rand"
        # rng.randrange(n) for n >= 1 is rng._randbelow(n) after argument checks (CPython
        # 3.10-3.12); the same numbers without the checks, where the private name exists
        self.randbelow = getattr(self.rng, "_randbelow", self.rng.randrange)
        # a random position is lo + randbelow(rand_n) * nsec; where randbelow is CPython's
        # _randbelow_with_getrandbits, its loop runs inline (the same getrandbits calls)
        self.rand_n = (self.hi - self.lo) // self.nsec
        self.rand_k = self.rand_n.bit_length()
        self.getrandbits = (self.rng.getrandbits if getattr(
            type(self.rng), "_randbelow", None) is getattr(
            random.Random, "_randbelow_with_getrandbits", False) else None)
        self.read_fraction = spec.read_fraction
        self.sync = spec.sync or spec.direct

    def start(self, now: float) -> None:
        self.start_t = now
        n = 1 if self.spec.sync else self.spec.depth
        for _ in range(n):
            self.issue(now)

    def _next_sector(self) -> int:
        if self.spec.pattern == "rand":
            slots = (self.hi - self.lo) // self.nsec
            return self.lo + self.rng.randrange(slots) * self.nsec
        s = self.pos
        if self.spec.backward:
            self.pos = s - self.nsec if s - self.nsec >= self.lo else self.hi - self.nsec
        else:
            self.pos = s + self.nsec if s + 2 * self.nsec <= self.hi else self.lo
        return s

    def issue(self, now: float, _: Any = None) -> None:
        if self.stopped:
            return
        c = self.spec.count
        if c is not None and self.issued >= c:
            return
        self.issued += 1
        self.outstanding += 1
        w = self.write_fixed
        if w is None:
            w = self.rng.random() >= self.read_fraction
        self._rid += 1
        nsec = self.nsec
        if self.rand:
            n = self.rand_n
            gb = self.getrandbits
            if gb is not None:
                k = self.rand_k
                r = gb(k)
                while r >= n:
                    r = gb(k)
            else:
                r = self.randbelow(n)
            sector = self.lo + r * nsec
        elif not self.spec.backward:
            # _next_sector() going up, inline
            sector = self.pos
            self.pos = sector + nsec if sector + 2 * nsec <= self.hi else self.lo
        else:
            sector = self._next_sector()
        self.sim.submit(Request(self._rid, self.pid, sector, nsec, w, self.sync, now))

    def _issue_event(self, now: float, _: Any) -> None:
        self.issue(now)

    def complete(self, rq: Request, now: float) -> None:
        self.outstanding -= 1
        self.done += 1
        self.bytes += rq.nsec * SECTOR
        lat = now - rq.submit
        self.lat_sum += lat
        if lat > self.lat_max:
            self.lat_max = lat
        if self.stopped or (self.spec.count is not None and self.issued >= self.spec.count):
            if self.outstanding == 0 and self.end_t < 0:
                self.end_t = now
                self.sim.process_finished(self)
            return
        if self.delay > 0:
            # self.sim.at(now + self.delay, self.issue, None), inline
            sim = self.sim
            sim.seq += 1
            heappush(sim.heap, (now + self.delay, sim.seq, self.issue, None))
        else:
            self.issue(now)

    def stop(self, now: float) -> None:
        """End of the phase: issue nothing more (requests in flight still complete)."""
        self.stopped = True
        if self.end_t < 0:
            self.end_t = now
            if self.outstanding == 0:
                self.sim.process_finished(self)

    @property
    def active_s(self) -> float:
        end = self.end_t if self.end_t >= 0 else self.sim.now
        return max(1e-9, end - self.start_t)


class BufferedReader(Process):
    """A sequential reader through the page cache, after Linux read-ahead: a read that misses
    sends one synchronous disk request of readahead_kb from where it missed; once the data still
    ahead of the reader falls below half a window, the next window is read ahead
    asynchronously, one window at a time. The process's own reads (size_kb, think_ms apart) cost
    nothing when the data is there, so the disk sees large requests with gaps that grow with
    the think time: Xu & Jiang's quiet periods (3.3). Its throughput counts what it read, not
    what the disk moved."""

    __slots__ = ("ra", "ready_end", "asked_end", "waiting", "ra_inflight")

    def __init__(self, pid: int, spec: ProcSpec, sim: Any, seed: int) -> None:
        super().__init__(pid, spec, sim, seed)
        self.ra = max(self.nsec, int(spec.readahead_kb * KIB))
        self.ready_end = self.asked_end = self.lo   # data in memory / requested up to here
        self.waiting = False
        self.ra_inflight = False

    def start(self, now: float) -> None:
        self.start_t = now
        self._want(now)

    def _disk_read(self, sector: int, now: float) -> None:
        n = min(self.ra, self.hi - sector)
        self.asked_end = sector + n
        self.outstanding += 1
        self._rid += 1
        # reads are synchronous requests to the block layer, read-ahead ones too
        self.sim.submit(Request(self._rid, self.pid, sector, n, False, True, now))

    def _want(self, now: float) -> None:
        if self.stopped:
            return
        c = self.spec.count
        if c is not None and self.issued >= c:
            if self.outstanding == 0 and self.end_t < 0:
                self.end_t = now
                self.sim.process_finished(self)
            return
        end = self.pos + self.nsec
        if end > self.ready_end:
            self.waiting = True
            if self.asked_end <= self.pos:
                self._disk_read(self.pos, now)
            return
        # from the page cache
        self.issued += 1
        self.done += 1
        self.bytes += self.nsec * SECTOR
        self.pos = end if end + self.nsec <= self.hi else self.lo
        if self.pos == self.lo:
            self.ready_end = self.asked_end = self.lo  # a new pass over the file
        elif (not self.ra_inflight and self.asked_end < self.hi
              and self.asked_end - self.pos < self.ra // 2):
            self.ra_inflight = True
            self._disk_read(self.asked_end, now)
        self.sim.at(now + self.delay, self._want_event, None)

    def _want_event(self, now: float, _: Any) -> None:
        self._want(now)

    def complete(self, rq: Request, now: float) -> None:
        self.outstanding -= 1
        lat = now - rq.submit
        self.lat_sum += lat
        self.lat_max = max(self.lat_max, lat)
        if rq.sector == self.ready_end:
            self.ready_end = rq.sector + rq.nsec
        if rq.sector > self.pos:
            self.ra_inflight = False
        else:
            self.ra_inflight = self.asked_end > self.ready_end
        if self.stopped:
            return
        if self.waiting and self.pos + self.nsec <= self.ready_end:
            self.waiting = False
            self._want(now)


def make_process(pid: int, spec: ProcSpec, sim: Any, seed: int) -> Process:
    return (BufferedReader if spec.readahead_kb > 0 else Process)(pid, spec, sim, seed)


def fit_layout(starts_gb: Sequence[float], spans_gb: Sequence[float],
               cap_gb: float) -> list[float]:
    """Where files laid out for a bigger disk start on this one. When one would end past the
    disk, every start is scaled by one factor, the largest that brings them all inside, so
    the processes stay as far apart, for this disk, as the workload meant (50 GB apart on a
    500 GB disk: a tenth of it); unchanged when everything fits. Stacking the files that do
    not fit at the disk's end instead would make them share one file, another workload."""
    if all(s + w <= cap_gb for s, w in zip(starts_gb, spans_gb, strict=True)):
        return list(starts_gb)
    k = min(((cap_gb - w) / s for s, w in zip(starts_gb, spans_gb, strict=True) if s > 0),
            default=1.0)
    return [s * max(0.0, k) for s in starts_gb]


# --------------------------------------------------------------------------- named workloads

def ioaz_category(nproc: int, pattern: str, mode: str, duration_s: float = 20.0) -> Workload:
    """The IOAZ/IOZone categories (IOAZ sections 3.3-3.4): nproc processes, each on its own 1 GB
    file laid out one after the other. Reads are synchronous (a process waits for its data):
    128 KiB for sequential (what the page cache's read-ahead turns small reads into), 4 KiB
    random. Writes are write-back: asynchronous, 8 in flight per process, 128 KiB sequential or
    4 KiB random."""
    seq = pattern in ("seq", "sequential")
    write = mode == "write"
    procs = [ProcSpec(name=f"{'seq' if seq else 'rand'}-{mode}-{i}", op=mode,
                      pattern="seq" if seq else "rand", size_kb=128 if seq else 4,
                      sync=not write, depth=8 if write else 1,
                      region_gb=1.0 + 1.2 * i, span_gb=1.0)
             for i in range(nproc)]
    return Workload(f"ioaz-{nproc}-{'seq' if seq else 'rand'}-{mode}",
                    [Phase(duration_s, procs, name=f"{nproc} {pattern} {mode}")])


def par_read(duration_s: float = 20.0, think_ms: float = 0.0) -> Workload:
    """Xu & Jiang's par-read (section 3.3): four processes each reading its own 1 GB file
    with synchronous 4 KB requests, 50 GB between adjacent files, think time 0 by default."""
    procs = [ProcSpec(name=f"par-read-{i}", op="read", pattern="seq", size_kb=4, sync=True,
                      think_ms=think_ms, region_gb=10.0 + 50.0 * i, span_gb=1.0)
             for i in range(4)]
    return Workload("par-read", [Phase(duration_s, procs, name="par-read")])


def par_read_buffered(duration_s: float = 20.0, think_ms: float = 0.0,
                      readahead_kb: float = 128.0) -> Workload:
    """par-read through the page cache, as the paper ran it: each process reads 4 KB at a time
    from memory while the kernel reads ahead 128 KiB per disk request."""
    wl = par_read(duration_s, think_ms)
    procs = [replace(p, readahead_kb=readahead_kb) for p in wl.phases[0].procs]
    return Workload("par-read-buffered", [Phase(duration_s, procs, name="par-read-buffered")])


def phases_mix(phase_s: float = 10.0) -> Workload:
    """A phase-changing mix: par-read, then 16 random readers, then one sequential writer, then
    4 sequential readers."""
    parts = [par_read(phase_s), ioaz_category(16, "rand", "read", phase_s),
             ioaz_category(1, "seq", "write", phase_s), ioaz_category(4, "seq", "read", phase_s)]
    return Workload("phases", [replace(p.phases[0]) for p in parts])


def postmark(duration_s: float = 20.0) -> Workload:
    """A postmark-like small-file mix (Carroll 4.2.4, Xu & Jiang 3.3): four processes, each on
    its own file set 50 GB from the next, synchronous 0.5-10 KB accesses (here 4 KiB and
    8 KiB), half reads half writes, at random within a 500 MB set."""
    procs = [ProcSpec(name=f"postmark-{i}", op="mixed", read_fraction=0.5, pattern="rand",
                      size_kb=4 if i % 2 else 8, sync=True, region_gb=10.0 + 50.0 * i,
                      span_gb=0.5) for i in range(4)]
    return Workload("postmark", [Phase(duration_s, procs, name="postmark")])


def database(duration_s: float = 20.0) -> Workload:
    """A database-like mix: eight query processes reading 8 KiB pages at random over a 20 GB
    table space (synchronous), a log writer appending 64 KiB synchronously elsewhere, and a
    checkpointer writing 8 KiB pages back asynchronously."""
    procs = [ProcSpec(name=f"query-{i}", op="read", pattern="rand", size_kb=8,
                      region_gb=5.0, span_gb=20.0) for i in range(8)]
    procs.append(ProcSpec(name="wal", op="write", pattern="seq", size_kb=64, region_gb=100.0,
                          span_gb=2.0, think_ms=2.0))
    procs.append(ProcSpec(name="checkpoint", op="write", pattern="rand", size_kb=8, sync=False,
                          depth=16, region_gb=5.0, span_gb=20.0, think_ms=5.0))
    return Workload("database", [Phase(duration_s, procs, name="database")])


def zeroing(duration_s: float = 20.0) -> Workload:
    """Disk zeroing (dd if=/dev/zero): one process writing 1 MiB blocks from the start of the
    disk, write-back keeping four in flight."""
    return Workload("zeroing", [Phase(duration_s, [ProcSpec(
        name="zero", op="write", pattern="seq", size_kb=1024, sync=False, depth=4,
        region_gb=0.0, span_gb=10_000.0)], name="zeroing")])


def _named() -> dict[str, Callable[[float], Workload]]:
    out: dict[str, Callable[[float], Workload]] = {
        "par-read": par_read,
        "par-read-buffered": par_read_buffered,
        "phases": phases_mix,
        "postmark": postmark,
        "database": database,
        "zeroing": zeroing,
    }
    for n in (1, 4, 8, 16):
        for pat in ("seq", "rand"):
            for mode in ("read", "write"):
                out[f"ioaz-{n}-{pat}-{mode}"] = partial(ioaz_category, n, pat, mode)
    return out


NAMED = _named()


def workload_names() -> list[str]:
    return sorted(NAMED)


def named_workload(name: str, duration_s: float = 20.0) -> Workload:
    """A named workload; for "phases" the duration is per phase."""
    try:
        return NAMED[name](duration_s)
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; "
                         f"known: {', '.join(workload_names())}") from None
