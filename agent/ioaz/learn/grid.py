"""The workloads a calibration runs: the IOAZ categories and more (sizes, mixes, think times,
queue depths, how far apart the processes' files are, how far apart the processes start),
each with a stable id.

The id names the workload in the dataset: a resumed calibration skips (id, candidate, rep)
rows already written, and train.py splits held-out data by id, never by row.
"""
from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass, replace

from ..classify.classes import Thresholds

NPROCS = (1, 2, 4, 8, 16)
FIRST_GB = 1.0        # where the first process's file starts on the disk (decimal GB)
FILE_GB = 1.0         # each process's file
PATTERNS = ("seq", "rand")
OPS = ("read", "write", "mixed")


@dataclass(frozen=True)
class WorkSpec:
    """One workload: nproc identical processes, each on its own file."""

    nproc: int
    pattern: str          # seq | rand
    op: str               # read | write | mixed (70% reads)
    size_kb: int
    think_ms: float = 0.0
    depth: int = 1        # 1: synchronous (one request at a time); >1: async, that many in flight
    gap_gb: float = 1.2   # distance between the processes' files (1 GB files)
    # process i starts i * stagger_ms after the first. bfq takes processes that start within
    # its burst interval (180 ms) as cooperators and merges their queues (stable merging), so
    # to bfq together and apart are two workloads; servers see both kinds of start
    # (docs/testbed.md, "Started apart again, with and without ioaz's probe")
    stagger_ms: float = 0.0
    # the processes run warmup_s after the last one started before the measured seconds
    # begin: bfq weight-raises a queue that starts on its own for its first 3-13 s, and its
    # high level for a few readers started apart, when it comes, comes 7-9 s in
    warmup_s: float = 0.0
    # the writes go through the page cache and the kernel's write-back sends them to the disk
    # (fsync at the end, counted in the run's time), as dd of a partition or a log writer
    # does; otherwise O_DIRECT. The disk sees the flusher's requests, not the program's:
    # larger, sorted, many in flight, and a scheduler that wins one kind need not win the
    # other (docs/testbed.md, "Write-back writers"). A buffered mix (op mixed) is readers
    # beside write-back writers: see proc_op
    buffered: bool = False
    # the readers read through the page cache, with the kernel's read-ahead, as a program
    # reading its files does (fio drops the device's cache before each run, so they read the
    # disk); otherwise O_DIRECT. The disk then sees read-ahead's requests, and how large they
    # grow depends on the scheduler the readers started under (docs/testbed.md, "Forty-first
    # run")
    cached: bool = False
    # the processes' files are files of an ext4 file system made on the disk, as a program's
    # files are, not regions of the raw device: the file system's allocation, its journal
    # and its delayed allocation shape what the disk sees and when (S "5 5 seq" under bfq
    # reads about 80 MB/s and writes about 6 on files where the same mix on the raw device's
    # page cache read 9-25 and wrote 10-20: docs/testbed.md, eighty-seventh run). gap_gb
    # does not apply: the file system places the files
    files: bool = False
    # each process's file in MiB where it is not FILE_GB (0), on files only: a program's
    # files small against the page cache, read and rewritten over and over through a run
    # (S's 256 MB files: time_based fio wraps round them) meet the cache and the flusher as
    # files larger than memory do not (docs/testbed.md, "Files small against the page cache")
    file_mb: int = 0

    def __post_init__(self) -> None:
        for name in ("stagger_ms", "warmup_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} {getattr(self, name):g}: expected 0 or more")
        if (self.stagger_ms or self.warmup_s) and self.cached:
            # both are fio's ramp_time; after a 10 s ramp, cached readers beside writers on
            # small files read faster than the disk delivered (fio 100-110 MB/s where the
            # probe saw the disk read nothing in most windows): the page cache, not the disk,
            # was measured (docs/testbed.md, "Files small against the page cache")
            raise ValueError(f"{'stagger' if self.stagger_ms else 'warm-up'} with cached "
                             "readers: after fio's ramp the calibration measured the page "
                             "cache; run them from the start")
        if self.file_mb < 0 or (self.file_mb and not self.files):
            raise ValueError(f"file size {self.file_mb} MiB: expected a positive size, and on "
                             "files (-f) only (the raw device's workloads lie on 1 GB regions "
                             "gap_gb apart)")
        if self.buffered and self.op == "read":
            raise ValueError(f"buffered {self.op}: only writers go through the page cache "
                             "here (a buffered reader reads the cache, not the disk)")
        if self.cached and not (self.op == "read" or (self.op == "mixed" and self.buffered)):
            raise ValueError(f"cached {self.op}{' (not buffered)' if self.op == 'mixed' else ''}"
                             ": only readers read through the page cache, alone or beside "
                             "buffered writers")
        if self.buffered and self.op == "mixed" and self.nproc < 2:
            raise ValueError(f"buffered mixed with {self.nproc} process: a buffered mix is "
                             "readers beside writers, two processes at least")

    def proc_op(self, i: int) -> str:
        """What process i does: `op`, except in a buffered mix, where the even processes read
        (synchronously; O_DIRECT as the grid's readers, unless `cached`) and the odd ones
        write through the page cache. A process that mixes reads with buffered writes is not
        what servers run; queries beside a loader or a log writer are, and the scheduler then
        sees the readers' own requests beside the flusher's (bfq, for one, keeps the two apart
        and idles for the readers)."""
        if self.op == "mixed" and self.buffered:
            return "read" if i % 2 == 0 else "write"
        return self.op

    def proc_buffered(self, i: int) -> bool:
        """Whether process i writes through the page cache."""
        return self.buffered and self.proc_op(i) == "write"

    def proc_direct(self, i: int) -> bool:
        """Whether process i bypasses the page cache (O_DIRECT)."""
        return not (self.cached if self.proc_op(i) == "read" else self.proc_buffered(i))

    def file_gb(self, i: int) -> float:
        """Where process i's file starts, in GB: FIRST_GB, then gap_gb further for each
        process. A file past the disk's end is put back inside it by whoever lays it out
        (the simulator's device, or the real calibration's job file)."""
        return FIRST_GB + self.gap_gb * i

    @property
    def span_gb(self) -> float:
        """Each process's file, in GB: file_mb where set, FILE_GB otherwise."""
        return self.file_mb * (1 << 20) / 1e9 if self.file_mb else FILE_GB

    @property
    def id(self) -> str:
        think = f"{self.think_ms:g}".replace(".", "_")
        gap = f"{self.gap_gb:g}".replace(".", "_")
        # no suffix when the processes start together, so older datasets' ids stay valid
        stagger = f"-s{self.stagger_ms:g}".replace(".", "_") if self.stagger_ms else ""
        warm = f"-w{self.warmup_s:g}".replace(".", "_") if self.warmup_s else ""
        cache = ("-c" if self.cached else "") + ("-b" if self.buffered else "") + \
            ("-f" if self.files else "") + (f"-m{self.file_mb}" if self.file_mb else "")
        return (f"{self.nproc}p-{self.pattern}-{self.op}-{self.size_kb}k-t{think}"
                f"-d{self.depth}-g{gap}{stagger}{warm}{cache}")

    @classmethod
    def from_id(cls, wid: str) -> WorkSpec:
        """The workload an id names (the inverse of .id); ValueError names what is wrong."""
        m = _ID.fullmatch(wid)
        if not m:
            raise ValueError(f"{wid!r}: not a workload id (expected e.g. "
                             f"{WorkSpec(4, 'seq', 'read', 128).id}, "
                             "optionally -sMS, -wS, -c, -b, -f and -mMIB)")
        num = lambda g: float((m.group(g) or "0").replace("_", "."))  # noqa: E731
        return cls(int(m.group("n")), m.group("pat"), m.group("op"), int(m.group("size")),
                   num("think"), int(m.group("depth")), num("gap"), num("stagger"),
                   num("warmup"), bool(m.group("buffered")), bool(m.group("cached")),
                   bool(m.group("files")), int(m.group("file_mb") or 0))

    @property
    def ioaz_class(self) -> str:
        """The IOAZ category the workload was built as (the classifier may see it otherwise)."""
        bucket = "1" if self.nproc <= 1 else "4" if self.nproc <= 4 else \
            "8" if self.nproc <= 8 else "16+"
        pattern = "sequential" if self.pattern == "seq" else "random"
        mode = "write" if self.op == "write" else "read"
        return f"{bucket}/{pattern}/{mode}"

    @property
    def cell(self) -> str:
        """The matrix cell on ioaz's four axes the workload was built for: an asynchronous
        workload keeps `depth` requests in flight per process (deep), a synchronous one one
        (shallow); a buffered writer is deep whatever its own depth, since the flusher keeps
        the queue full. Again the classifier may see it otherwise."""
        deep = self.depth > 1 or self.buffered
        return f"{self.ioaz_class}/{'deep' if deep else 'shallow'}"

    @property
    def sized_cell(self) -> str:
        """The cell with the size axis: a request of 48 KiB or more is large (the classifier's
        default threshold). Merging moves the measured size but not across it on the grid's
        sizes: 4 KiB writes merge to at most 32 KiB, 64 and 128 KiB ones only grow."""
        large = self.size_kb >= Thresholds().large_min_request_kb
        return f"{self.cell}/{'large' if large else 'small'}"


_NUM = r"\d+(?:_\d+)?"
_ID = re.compile(rf"(?P<n>[1-9]\d*)p-(?P<pat>seq|rand)-(?P<op>read|write|mixed)-(?P<size>[1-9]\d*)k"
                 rf"-t(?P<think>{_NUM})-d(?P<depth>[1-9]\d*)-g(?P<gap>{_NUM})"
                 rf"(?:-s(?P<stagger>{_NUM}))?(?:-w(?P<warmup>{_NUM}))?(?P<cached>-c)?(?P<buffered>-b)?"
                 r"(?P<files>-f)?(?:-m(?P<file_mb>[1-9]\d*))?")


def staggered(w: WorkSpec, ms: float) -> WorkSpec:
    """The same workload with its processes started ms apart (one process: unchanged)."""
    return replace(w, stagger_ms=ms if w.nproc > 1 else 0.0)


def warmed(w: WorkSpec, s: float) -> WorkSpec:
    """The same workload measured after its processes ran s seconds."""
    return replace(w, warmup_s=s)


def ioaz_categories() -> list[WorkSpec]:
    """IOAZ 3.3's sixteen categories, shaped as ioaz.sim.workloads.ioaz_category builds them:
    synchronous reads (128 KiB sequential, 4 KiB random), write-back writes 8 deep."""
    out = []
    for n in (1, 4, 8, 16):
        for pat in PATTERNS:
            for op in ("read", "write"):
                out.append(WorkSpec(n, pat, op, 128 if pat == "seq" else 4,
                                    depth=8 if op == "write" else 1))
    return out


def _valid(w: WorkSpec) -> bool:
    # A think time on an asynchronous writer is not a thing the page cache does.
    return not (w.think_ms and w.depth > 1)


def full_grid() -> list[WorkSpec]:
    grid = []
    for n, pat, op in itertools.product(NPROCS, PATTERNS, OPS):
        sizes = (4, 128) if pat == "seq" else (4, 64)
        for size, think, depth, gap in itertools.product(sizes, (0.0, 3.0), (1, 8),
                                                         (1.2, 40.0)):
            w = WorkSpec(n, pat, op, size, think, depth, gap)
            if _valid(w):
                grid.append(w)
    return grid


def sample(n: int, seed: int = 7, include_ioaz: bool = True) -> list[WorkSpec]:
    """The IOAZ categories (when asked) plus a seeded sample of the full grid, n in all."""
    base = ioaz_categories() if include_ioaz else []
    seen = {w.id for w in base}
    rest = [w for w in full_grid() if w.id not in seen]
    random.Random(seed).shuffle(rest)
    out = base[:n] + rest[:max(0, n - len(base))]
    return out


def quick(n: int = 16, seed: int = 7) -> list[WorkSpec]:
    """Test-sized: a balanced handful across process counts, patterns and modes."""
    rng = random.Random(seed)
    grid = full_grid()
    rng.shuffle(grid)
    out: list[WorkSpec] = []
    seen: set[tuple[int, str, str]] = set()
    for w in grid:            # first one of each (nproc, pattern, op) ...
        key = (w.nproc, w.pattern, w.op)
        if key not in seen:
            seen.add(key)
            out.append(w)
    return out[:n]


def for_cells(cells: list[str], per_cell: int = 1, seed: int = 7,
              exclude: frozenset[str] = frozenset()) -> list[WorkSpec]:
    """`per_cell` workloads of the full grid built for each of these cells, a seeded choice
    among those whose id is not in `exclude` (a dataset's workloads: one already measured
    that landed in another cell is not tried again). A cell of five axes names the size too
    (4/random/read/deep/large). A cell the grid builds nothing new for is named in the
    ValueError."""
    pool = full_grid()
    random.Random(seed).shuffle(pool)
    out: list[WorkSpec] = []
    short = []
    for cell in cells:
        sized = cell.count("/") == 4
        fits = [w for w in pool if (w.sized_cell if sized else w.cell) == cell
                and w.id not in exclude][:per_cell]
        if not fits:
            short.append(cell)
        out.extend(fits)
    if short:
        raise ValueError(f"the grid has no workload (not already measured) built for "
                         f"{', '.join(short)}")
    return out
