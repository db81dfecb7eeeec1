"""Cumulative counters of one device at one instant, whatever the source.

A Snapshot is what a probe source returns once a window; the classify package turns two of them
into WindowFeatures. Fields a source cannot measure are None.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .layout import LAT_SLOTS, N_DIRS, SIZE_SLOTS


def _zeros(n: int) -> list[int]:
    return [0] * n


@dataclass
class DeviceSnapshot:
    name: str                       # whole-disk name, e.g. "loop0", "vda"
    major: int
    minor: int
    t_ns: int                       # CLOCK_MONOTONIC when read
    source: str                     # "bpf" (the eBPF probe, by libbpf or BCC) | "diskstats"
    completed: list[int] = field(default_factory=lambda: _zeros(N_DIRS))
    completed_bytes: list[int] = field(default_factory=lambda: _zeros(N_DIRS))
    bios: int | None = None
    bios_seq: int | None = None
    bio_merges: int = 0
    rq_merges: int = 0
    time_in_queue_ms: int | None = None   # diskstats: weighted ms doing I/O
    # Latency is submit-to-complete (what the submitter waits); lat_sum_ns is also the
    # time-integral of the requests in the block layer.
    lat_sum_ns: int = 0
    lat_untimed: int = 0                     # completions the kernel had not timestamped
    # Of lat_sum_ns, the reads': the reads in flight apart from the writes (a write-back
    # queued behind synchronous readers is not their depth). None: the source cannot split.
    lat_read_ns: int | None = None
    lat_hist: list[int] = field(default_factory=lambda: _zeros(LAT_SLOTS))
    # Service time (issue-to-complete), only on queues whose kernel stamps the issue.
    svc_count: int = 0
    svc_sum_ns: int = 0
    svc_hist: list[int] = field(default_factory=lambda: _zeros(LAT_SLOTS))
    size_hist: list[int] = field(default_factory=lambda: _zeros(SIZE_SLOTS))
    # Read and write requests in flight at t_ns, those the elevator holds among them: the
    # probe's counts as read (summed over CPUs, not yet wrapped), then as in_flight.py makes
    # them. None: the source cannot count them (diskstats; the sampled probe's sampled periods).
    in_flight: list[int] | None = None
    # Bytes of the requests in size_hist: the completed bytes, unless the counts were replaced
    # by the kernel's exact ones while the histograms are a sample (bpf_source.py).
    hist_bytes: int | None = None
    # Sampled probe: sequentiality, processes and histograms are a sample, the counts (requests,
    # bytes, merges, time in queue) the kernel's exact ones.
    sampled: bool = False
    procs: dict[int, int] | None = None   # tgid -> cumulative bios submitted
    # tid -> cumulative bios: the submitters the schedulers see apart (a thread has its own
    # I/O context unless made with CLONE_IO); None where the source cannot tell threads
    threads: dict[int, int] | None = None

    def add(self, other: DeviceSnapshot) -> None:
        """Fold another snapshot (a partition of this disk) into this one."""
        for name in ("completed", "completed_bytes", "lat_hist", "svc_hist", "size_hist"):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, [a + b for a, b in zip(mine, theirs, strict=True)])
        for name in ("bios", "bios_seq"):
            a, b = getattr(self, name), getattr(other, name)
            if b is not None:
                setattr(self, name, (a or 0) + b)
        self.bio_merges += other.bio_merges
        self.rq_merges += other.rq_merges
        self.lat_sum_ns += other.lat_sum_ns
        self.lat_untimed += other.lat_untimed
        if other.lat_read_ns is not None:
            self.lat_read_ns = (self.lat_read_ns or 0) + other.lat_read_ns
        if other.in_flight is not None:
            self.in_flight = [a + b for a, b in zip(self.in_flight or [0, 0], other.in_flight,
                                                    strict=True)]
        self.svc_count += other.svc_count
        self.svc_sum_ns += other.svc_sum_ns
        if other.hist_bytes is not None:
            self.hist_bytes = (self.hist_bytes or 0) + other.hist_bytes
        self.procs = _add_counts(self.procs, other.procs)
        self.threads = _add_counts(self.threads, other.threads)


def _add_counts(mine: dict[int, int] | None, theirs: dict[int, int] | None
                ) -> dict[int, int] | None:
    """Per-id counts of a disk and one of its partitions, added."""
    if not theirs:
        return mine
    out = mine if mine is not None else {}
    for k, n in theirs.items():
        out[k] = out.get(k, 0) + n
    return out


Snapshot = dict[str, DeviceSnapshot]
