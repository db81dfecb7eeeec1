"""The IOAZ workload class of a window (Martens & Katchabaw, section 3.3), by thresholds.

The thresholds live in decision_matrices/thresholds.yaml, not in code.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..home import MATRICES
from ..located import ValidationError, load_file
from .types import DEFAULT_PROCESS_SHARE, PROCESS_BUCKETS, WindowFeatures, WorkloadClass

DEFAULT_THRESHOLDS = MATRICES / "thresholds.yaml"


class ThresholdsError(ValueError):
    """A thresholds file is wrong; the message names file:line and what was expected."""


@dataclass(frozen=True)
class Thresholds:
    min_process_share: float = DEFAULT_PROCESS_SHARE
    process_buckets: dict[str, int] = field(
        default_factory=lambda: {"1": 2, "4": 5, "8": 11})
    sequential_min_seq_ratio: float = 0.5
    sequential_min_merge_ratio: float = 0.3
    read_min_read_ratio: float = 0.5
    boundary_band: float = 0.1
    min_requests: int = 10
    # A window whose probe saw fewer bios (a sample that came back nearly empty under load)
    # keeps the previous class: its ratios would be noise, and with none a merge ratio.
    min_sampled_bios: int = 16
    process_horizon_s: float = 4.0
    process_membership_s: float = 10.0
    deep_min_depth_per_process: float = 3.0
    large_min_request_kb: float = 48.0


# numeric settings that are not ratios (0 to 1): their range and what they count
_RANGES: dict[str, tuple[int, int, str]] = {
    "process_horizon_s": (0, 3600, "a number of seconds"),
    "process_membership_s": (0, 3600, "a number of seconds"),
    "deep_min_depth_per_process": (1, 1024, "a number of requests"),
    "large_min_request_kb": (1, 1 << 20, "a number of KiB"),
}


def load_thresholds(path: Path | None = None) -> Thresholds:
    """Read and check a thresholds file; errors name the file, the line and the bad value
    (read through ioaz.located, as every file ioazd reads)."""
    path = Path(path or DEFAULT_THRESHOLDS)
    try:
        doc = load_file(path)
    except ValidationError as e:
        raise ThresholdsError(str(e)) from None
    if not isinstance(doc.data, dict):
        raise ThresholdsError(f"{path}:{doc.line(())}: expected a mapping of settings")
    defaults = Thresholds()
    values: dict[str, Any] = {}
    lines: dict[str, str] = {}
    for key, value in doc.data.items():
        where = lines[key] = f"{path}:{doc.line((key,))}"
        if not isinstance(key, str) or not hasattr(defaults, key):
            raise ThresholdsError(f"{path}:{doc.key_line((key,))}: unknown setting {key!r} "
                                  f"(expected one of {sorted(defaults.__dataclass_fields__)})")
        if key == "process_buckets":
            if not isinstance(value, dict) or set(value) != {"1", "4", "8"} or not all(
                    isinstance(v, int) and v > 0 for v in value.values()):
                raise ThresholdsError(f"{where}: process_buckets must map \"1\", \"4\", \"8\" "
                                      f"to positive whole numbers, got {value!r}")
            if not value["1"] < value["4"] < value["8"]:
                raise ThresholdsError(f"{where}: process_buckets bounds must increase, got "
                                      f"{value!r}")
        elif key in ("min_requests", "min_sampled_bios"):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ThresholdsError(f"{where}: {key} must be a whole number >= 0, "
                                      f"got {value!r}")
        else:
            lo, hi, what = _RANGES.get(key, (0, 1, "a number"))
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not lo <= value <= hi:
                raise ThresholdsError(f"{where}: {key} must be {what} from {lo} to {hi}, "
                                      f"got {value!r}")
            value = float(value)
        values[key] = value
    t = Thresholds(**values)
    # a band as wide as a threshold's distance to 0 or 1 would keep a class no ratio can leave
    for name in ("read_min_read_ratio", "sequential_min_seq_ratio",
                 "sequential_min_merge_ratio"):
        threshold = getattr(t, name)
        room = min(threshold, 1.0 - threshold)
        if t.boundary_band > 0 and t.boundary_band >= room:
            raise ThresholdsError(
                f"{lines.get('boundary_band', lines.get(name, str(path)))}: boundary_band "
                f"{t.boundary_band:g} must be below {room:g}, the distance of {name} "
                f"({threshold:g}) to {'0' if threshold <= 0.5 else '1'}: a window on the far "
                "side could never change the class")
    return t


def process_bucket(n: int, t: Thresholds) -> str:
    for bucket in PROCESS_BUCKETS[:-1]:
        if n <= t.process_buckets[bucket]:
            return bucket
    return PROCESS_BUCKETS[-1]


# a merge ratio this close to 1 says "nearly every bio merged", not a 1000-bio request
_MAX_MERGE_RATIO = 0.95


def depth_per_process(f: WindowFeatures, processes: int, read: bool | None = None
                      ) -> float | None:
    """Bios in flight per process, or None when the source cannot say.

    avg_depth counts requests in the block layer from submission to completion (Little's
    law, so under any scheduler a process that waits for each request holds about one);
    merged bios hide inside requests (8 adjacent 4 KiB write-backs become one request), so
    requests are scaled by bios per request, 1 / (1 - merge_ratio).

    `read` (the class's mode), where the source splits the depth (read_depth): only that
    direction's requests count. Sequential readers beside a buffered writer hold one read
    each, but the write-back's queue is deep, and deepest under the schedulers that hold it
    back for the readers (bfq): counted whole, it made the readers "deep" and moved the
    class off bfq to deadline's cell, 0.64x bfq on S's "5 5 seq" (docs/testbed.md,
    thirty-ninth run)."""
    if f.submitters is None:
        return None   # diskstats: no processes, and its process count is made from avg_depth
    bios = bios_in_flight(f, read)
    if bios is None:
        return None
    if f.held_bios is not None:   # requests the elevator held count (classify/held.py)
        bios = max(bios, f.held_bios)
    return bios / max(1, processes)


def bios_held_through(f: WindowFeatures, read: bool | None = None) -> float | None:
    """The bios of the requests in flight at both the window's ends (f.in_flight), of one
    direction (`read`) or of both: at least the depth of a class whose requests the elevator
    held through the window, however few of them completed in it (observe.py takes it where
    the elevator may hold a request longer than a window, as the depth over its expiry)."""
    if f.in_flight is None:
        return None
    requests = sum(f.in_flight) if read is None else f.in_flight[0 if read else 1]
    return requests * _bios_per_request(f)


def bios_in_flight(f: WindowFeatures, read: bool | None = None) -> float | None:
    """The window's bios in flight (requests scaled by bios per request), of one direction
    where the source splits them (`read`), else of both."""
    if f.avg_depth is None:
        return None
    depth = f.avg_depth
    if read is not None and f.read_depth is not None:
        depth = f.read_depth if read else max(0.0, f.avg_depth - f.read_depth)
    return depth * _bios_per_request(f)


def _bios_per_request(f: WindowFeatures) -> float:
    """The window's bios per request, 1 / (1 - merge_ratio): merged bios hide in requests."""
    return 1.0 / (1.0 - min(f.merge_ratio or 0.0, _MAX_MERGE_RATIO))


def _side(ratio: float, threshold: float, band: float,
          was_above: bool | None) -> tuple[bool, bool]:
    """(ratio >= threshold, False), except that a ratio within `band` of the threshold keeps
    the side the device's previous window was on (a Schmitt trigger), and says so when that
    is not the window's own side: a workload that sits at the boundary, half reads and half
    writes, would otherwise change class window by window."""
    alone = ratio >= threshold
    # the band is open: 0.4 is outside 0.5 +- 0.1 however the subtraction rounds
    if was_above is None or abs(ratio - threshold) >= band - 1e-9:
        return alone, False
    return was_above, was_above != alone


def classify(f: WindowFeatures, t: Thresholds,
             previous: WorkloadClass | None = None) -> WorkloadClass | None:
    """The IOAZ class of a window, or None when there is too little I/O to judge.

    `previous` is the same device's last class: near a ratio threshold the window keeps its
    side (Thresholds.boundary_band). None judges the window alone."""
    if f.requests < t.min_requests:
        return None
    if f.bios is not None and f.bios < t.min_sampled_bios:
        # the probe's source saw (almost) nothing of a busy window: judging it would fall
        # back to the merge ratio and a depth-made process count, so keep what was judged
        if previous is None:
            return None
        return replace(previous, held=(), kept=f"{f.bios} bios seen, fewer than "
                                               f"min_sampled_bios {t.min_sampled_bios}")
    if f.class_processes is not None:
        procs = f.class_processes   # over the class horizon (horizon.py says why)
    elif f.submitters is not None:
        procs = f.submitters
    else:
        # diskstats cannot see processes: a synchronous process keeps about one request in
        # flight, so the average depth stands in for the number of processes.
        procs = max(1, round(f.avg_depth or 1))
    was_seq = None if previous is None else previous.pattern == "sequential"
    was_read = None if previous is None else previous.mode == "read"
    if f.seq_ratio is not None:
        sequential, seq_held = _side(f.seq_ratio, t.sequential_min_seq_ratio,
                                     t.boundary_band, was_seq)
    else:
        sequential, seq_held = _side(f.merge_ratio or 0.0, t.sequential_min_merge_ratio,
                                     t.boundary_band, was_seq)
    read, read_held = _side(f.read_ratio if f.read_ratio is not None else 1.0,
                            t.read_min_read_ratio, t.boundary_band, was_read)
    # unknown depth (diskstats) is taken as shallow, the same assumption its process count makes
    depth = depth_per_process(f, procs, read)
    deep = depth is not None and depth >= t.deep_min_depth_per_process
    # the band, a fraction of the threshold: 48 KiB +- 10% keeps the previous window's side
    was_large = None if previous is None else previous.size == "large"
    large, size_held = _side((f.mean_size_bytes or 0.0) / 1024 / t.large_min_request_kb, 1.0,
                             t.boundary_band, was_large)
    return WorkloadClass(processes=process_bucket(procs, t),
                         pattern="sequential" if sequential else "random",
                         mode="read" if read else "write",
                         depth="deep" if deep else "shallow",
                         size="large" if large else "small",
                         held=(("pattern",) if seq_held else ()) + (("mode",) if read_held
                                                                    else ())
                         + (("size",) if size_held else ()))
