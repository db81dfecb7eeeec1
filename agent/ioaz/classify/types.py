"""The measured workload of one device in one window, and its IOAZ class.

These are the names of DESIGN.md: every other part of ioaz (decide, metrics, sim, lab) speaks
in these two types, so their fields are the `ioazctl observe --json` contract.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROCESS_BUCKETS = ("1", "4", "8", "16+")
# A process (or thread) counts when it submitted at least this share of the window's bios; the
# one default of thresholds.yaml's min_process_share, which the daemon and observe read.
DEFAULT_PROCESS_SHARE = 0.02
PATTERNS = ("sequential", "random")
MODES = ("read", "write")
# Requests in flight per process (ours, not IOAZ's): "shallow" ~1, a process that waits for
# each request (synchronous reads); "deep" several, write-back, AIO, io_uring. Idling
# schedulers (stream, cfq, anticipatory) help the first and only delay the second.
DEPTHS = ("shallow", "deep")
# The window's mean request size (ours, not IOAZ's): "small" requests cost a rotating disk
# mostly positioning, so the scheduler that saves seeks wins by far; "large" ones carry enough
# data that keeping a stream's requests together matters more. On the testbed's kernel 16
# writers 8 deep went 3.7x faster under bfq with 4 KiB writes, 1.2x under mq-deadline with
# 128 KiB ones (docs/testbed.md, "The request size").
SIZES = ("small", "large")


@dataclass(frozen=True)
class WorkloadClass:
    """IOAZ section 3.3: processes 1|4|8|16+ x sequential|random x read|write, plus how deep
    each process's queue runs (shallow|deep) and how large its requests are (small|large),
    which IOAZ's categories did not vary.

    str() and as_dict() are the IOAZ class (the `ioazctl observe` contract of DESIGN.md);
    key() adds the depth, axes() and full_key() the depth and the size, for matrices whose
    axes include them."""

    processes: str
    pattern: str
    mode: str
    depth: str = "shallow"
    size: str = "small"
    # the axes whose side the boundary band kept from the previous window, where this window
    # alone would say the other (for the explanation; not part of the class's identity)
    held: tuple[str, ...] = field(default=(), compare=False)
    # why the whole class is the previous window's, when the window had too little to judge
    # by (classes.classify); None for a class judged on the window itself
    kept: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.processes not in PROCESS_BUCKETS:
            raise ValueError(f"processes bucket {self.processes!r} not one of {PROCESS_BUCKETS}")
        if self.pattern not in PATTERNS:
            raise ValueError(f"pattern {self.pattern!r} not one of {PATTERNS}")
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r} not one of {MODES}")
        if self.depth not in DEPTHS:
            raise ValueError(f"depth {self.depth!r} not one of {DEPTHS}")
        if self.size not in SIZES:
            raise ValueError(f"size {self.size!r} not one of {SIZES}")

    def as_dict(self) -> dict[str, str]:
        return {"processes": self.processes, "pattern": self.pattern, "mode": self.mode}

    def axes(self) -> dict[str, str]:
        """Every axis a matrix may use, the depth and the size included."""
        return {**self.as_dict(), "depth": self.depth, "size": self.size}

    def key(self) -> str:
        return f"{self}/{self.depth}"

    def full_key(self) -> str:
        """Every axis: what tells two workloads apart to a matrix of any axes."""
        return f"{self.key()}/{self.size}"

    def __str__(self) -> str:
        return f"{self.processes}/{self.pattern}/{self.mode}"


@dataclass
class WindowFeatures:
    """Rates and ratios of one device over one window (the delta of two cumulative snapshots).

    Ratios are 0..1; None means "not measurable by this source" (diskstats has no seq_ratio or
    processes) or "nothing happened" (no requests: no latency percentile).
    """

    device: str
    window_s: float
    iops: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    read_ratio: float | None
    seq_ratio: float | None
    processes: int | None   # processes (TGIDs) over the share cut
    avg_depth: float | None
    mean_size_bytes: float | None
    p50_latency_s: float | None
    p99_latency_s: float | None
    merge_ratio: float | None
    source: str = "bpf"
    # Of avg_depth, the reads in flight: what the class's depth axis takes for a read class,
    # and avg_depth less it for a write class (classes.depth_per_process). None: the source
    # cannot split them (the simulator, a dataset's row).
    read_depth: float | None = None
    # The class's direction's bios in flight over the elevator's longest expiry, or held
    # through the window (in_flight), the larger, where the expiry is longer than the window
    # (classify/held.py): a request it holds counts only when it completes. None: the
    # window's own depth is the class's.
    held_bios: float | None = None
    # Read and write requests in flight at both the window's start and its end (features.py),
    # the requests an elevator held through it among them. None: the source cannot count them.
    in_flight: tuple[int, int] | None = None
    workload_class: WorkloadClass | None = None
    # Not part of the observe line, but kept for metrics and the simulator:
    requests: int = 0
    # The processes of the class: those that drove the device over the class horizon
    # (classify/horizon.py), None when only this window's `processes` is known.
    class_processes: int | None = None
    process_bios: dict[int, int] = field(default_factory=dict)  # this window's bios per pid
    # Threads over the share cut: the submitters the schedulers see apart (bfq queues per I/O
    # context, one per thread unless made with CLONE_IO). None where the source cannot tell
    # threads (diskstats, the simulator, whose processes are its submitters).
    threads: int | None = None
    thread_bios: dict[int, int] = field(default_factory=dict)   # this window's bios per tid
    bios: int | None = None   # bios the probe saw this window (a sample when sampled)
    process_share: float = DEFAULT_PROCESS_SHARE   # the cut `processes` and `threads` used
    # The disk's dirty data over its dirty threshold at the window's end (bdi.py): writers
    # through the page cache the scheduler holds back show here, not in the requests. None
    # where it cannot be read (no debugfs, the simulator)
    dirty_fill: float | None = None
    latency_hist: dict[int, int] = field(default_factory=dict)  # log2 ns bucket -> count
    size_hist: dict[int, int] = field(default_factory=dict)     # probe.layout.size_slot -> count

    @property
    def submitters(self) -> int | None:
        """The class's count of this window alone: threads where the source tells them."""
        return self.threads if self.threads is not None else self.processes

    OBSERVE_FIELDS = (
        "device", "window_s", "iops", "read_bytes_per_s", "write_bytes_per_s", "read_ratio",
        "seq_ratio", "processes", "avg_depth", "mean_size_bytes", "p50_latency_s",
        "p99_latency_s", "merge_ratio",
    )

    def observe_dict(self) -> dict[str, Any]:
        """The JSON line of `ioazctl observe --json`: the DESIGN.md fields, then the threads
        beside the processes and why a class was kept (None when judged)."""
        # Not asdict(): it deep-copies the histograms, and this runs for every device every
        # window (the decision carries it); the fields named are all scalars.
        out: dict[str, Any] = {k: getattr(self, k) for k in self.OBSERVE_FIELDS}
        out["class"] = self.workload_class.as_dict() if self.workload_class else None
        out["source"] = self.source
        # added after the first contract, at the end so its order stays
        out["threads"] = self.threads
        out["class_kept"] = self.workload_class.kept if self.workload_class else None
        out["read_depth"] = self.read_depth   # the reads' part of avg_depth (the depth axis)
        out["class_processes"] = self.class_processes   # the class's count, over its horizon
        out["dirty_fill"] = self.dirty_fill   # dirty data over the disk's threshold (bdi.py)
        out["in_flight"] = None if self.in_flight is None else list(self.in_flight)
        return out
