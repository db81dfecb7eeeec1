"""What a run counts and returns: one window's counters, the run's latency histogram and
SimResult. The engine updates the counters on its hot path, so this module is compiled with it
(ioaz.sim.MODULES).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ioaz import quantile
from ioaz.classify.types import WindowFeatures

HIST_PER_OCTAVE = 8      # run-wide latency histogram resolution (~9%)
_log2 = math.log2


class LatencyHistogram:
    """Log-spaced latency counts: a percentile to within HIST_PER_OCTAVE, constant memory."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.n = 0

    def add(self, seconds: float) -> None:
        b = int(_log2(seconds * 1e9 if seconds > 1e-9 else 1.0) * HIST_PER_OCTAVE)
        c = self.counts
        c[b] = c.get(b, 0) + 1
        self.n += 1

    def percentile(self, q: float) -> float | None:
        found = quantile.of_counts(sorted(self.counts.items()), q)
        if found is None:
            return None
        return 2 ** ((found[0] + 0.5) / HIST_PER_OCTAVE) / 1e9  # the bucket's middle


class WindowCounts:
    """One window's counters, from which Simulator.features builds its WindowFeatures."""

    __slots__ = (
        "bios",
        "done",
        "lat",
        "lat_hist",
        "merges",
        "pids",
        "rbytes",
        "read_lat",
        "reads",
        "seq",
        "size_hist",
        "wbytes",
    )

    def __init__(self) -> None:
        self.bios = self.seq = self.merges = self.done = self.reads = 0
        self.rbytes = self.wbytes = 0
        self.read_lat = 0.0   # the reads' summed submit-to-complete time (their depth)
        self.pids: dict[int, int] = {}   # pid -> bios submitted this window
        self.lat: list[float] = []
        self.lat_hist: dict[int, int] = {}
        self.size_hist: dict[int, int] = {}


@dataclass
class SimResult:
    workload: str
    device: str
    scheduler: str               # the starting scheduler (or "adaptive")
    sim_s: float
    requests: int
    bytes: int
    throughput_mb_s: float
    iops: float
    proc_mb_s: dict[str, float]  # per process
    proc_min_mb_s: float
    proc_max_mb_s: float
    proc_mean_mb_s: float
    p50_latency_s: float | None   # submit to complete, what the process waits
    p99_latency_s: float | None
    merges: int
    wall_s: float
    requests_per_wall_s: float
    cpu_s: float = 0.0           # CPU time of the run: the speed on one core, whatever the load
    switches: list[dict[str, Any]] = field(default_factory=list)
    windows: list[WindowFeatures] = field(default_factory=list)
    scheduler_time_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self, windows: bool = True) -> dict[str, Any]:
        d = asdict(self)
        d["windows"] = [w.observe_dict() for w in self.windows] if windows else len(self.windows)
        return d
