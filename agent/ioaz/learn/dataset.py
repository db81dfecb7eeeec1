"""The calibration dataset: one CSV row per (workload, candidate, repetition).

Columns: what ran (device, workload id, its built-as IOAZ class, candidate policy and how it was
realised), the features ioaz measured while it ran (`f_*`, the probe's meaning, the median of
the run's windows), and what the processes got: throughput, per-process MB/s (min, max, mean:
the IOAZ goals) and request latency p50/p99.

Writing is resumable: rows are appended and flushed one at a time; a calibration that starts on
an existing file skips the (workload, candidate, rep) keys already there, after cutting off a
last line an interruption left half written.
"""
from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..classify.classes import DEFAULT_THRESHOLDS, Thresholds, load_thresholds
from ..classify.types import WindowFeatures

# The numeric WindowFeatures fields a model may use: the `ioazctl observe --json` line.
FEATURES = ("iops", "read_bytes_per_s", "write_bytes_per_s", "read_ratio", "seq_ratio",
            "processes", "avg_depth", "mean_size_bytes", "p50_latency_s", "p99_latency_s",
            "merge_ratio")
# Read by ioaz's classifier (derive's classes); a model reads class_processes as its process
# count (model/features.py says why), and dirty_fill, the disk's dirty data (bdi.py). Optional
# in a file, as datasets written before them have no such column (read_depth: the class's depth
# axis then takes the whole depth, a model the run's own process count, as they did when those
# datasets were written; dirty_fill: missing, as the simulator's, which has no page cache).
CLASS_FEATURES = ("class_processes", "read_depth", "dirty_fill")
OUTCOMES = ("throughput_mb_s", "proc_min_mb_s", "proc_max_mb_s", "proc_mean_mb_s",
            "p50_latency_s", "p99_latency_s", "requests")
COLUMNS = (("device", "workload", "workload_class", "candidate", "policy", "scheduler", "knobs",
            "rep", "seconds") + tuple(f"f_{n}" for n in FEATURES) + OUTCOMES
           + tuple(f"f_{n}" for n in CLASS_FEATURES))
OPTIONAL_COLUMNS = tuple(f"f_{n}" for n in CLASS_FEATURES)

# goal -> (outcome column, True when higher is better)
GOAL_METRIC: dict[str, tuple[str, bool]] = {
    "min": ("proc_min_mb_s", True), "max": ("proc_max_mb_s", True),
    "mean": ("proc_mean_mb_s", True), "throughput": ("throughput_mb_s", True),
    "latency": ("p99_latency_s", False),
}


@dataclass
class Row:
    workload: str
    workload_class: str
    candidate: str          # a label unique per realisation (policy, or policy+knobs)
    policy: str             # the decision_matrices policy it stands for
    scheduler: str
    knobs: str              # "k=v;k=v"
    rep: int
    seconds: float
    features: dict[str, float | None]
    throughput_mb_s: float
    proc_min_mb_s: float
    proc_max_mb_s: float
    proc_mean_mb_s: float
    p50_latency_s: float | None
    p99_latency_s: float | None
    requests: int
    device: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.workload, self.candidate, self.rep)

    def to_csv(self) -> dict[str, str]:
        d: dict[str, object] = {
            "device": self.device, "workload": self.workload,
            "workload_class": self.workload_class, "candidate": self.candidate,
            "policy": self.policy, "scheduler": self.scheduler, "knobs": self.knobs,
            "rep": self.rep, "seconds": self.seconds,
            "throughput_mb_s": self.throughput_mb_s, "proc_min_mb_s": self.proc_min_mb_s,
            "proc_max_mb_s": self.proc_max_mb_s, "proc_mean_mb_s": self.proc_mean_mb_s,
            "p50_latency_s": self.p50_latency_s, "p99_latency_s": self.p99_latency_s,
            "requests": self.requests}
        for n in FEATURES + CLASS_FEATURES:
            d[f"f_{n}"] = self.features.get(n)
        return {k: _fmt(d[k]) for k in COLUMNS}

    def score(self, goal: str) -> float:
        """Higher is better for every goal (latency: 1/p99)."""
        col, higher = GOAL_METRIC[goal]
        v = getattr(self, col)
        if v is None or not math.isfinite(v):
            return 0.0
        if higher:
            return float(v)
        return 1.0 / v if v > 0 else 0.0

    def window(self) -> WindowFeatures:
        """The run's features as a WindowFeatures, so ioaz's classifier and a model read them
        exactly as the daemon would read a window."""
        f = self.features
        proc = f.get("processes")
        cproc = f.get("class_processes")
        return WindowFeatures(
            device=self.device or "dataset", window_s=1.0, iops=f.get("iops") or 0.0,
            read_bytes_per_s=f.get("read_bytes_per_s") or 0.0,
            write_bytes_per_s=f.get("write_bytes_per_s") or 0.0,
            read_ratio=f.get("read_ratio"), seq_ratio=f.get("seq_ratio"),
            processes=None if proc is None else int(round(proc)),
            avg_depth=f.get("avg_depth"), mean_size_bytes=f.get("mean_size_bytes"),
            p50_latency_s=f.get("p50_latency_s"), p99_latency_s=f.get("p99_latency_s"),
            merge_ratio=f.get("merge_ratio"), read_depth=f.get("read_depth"), source="dataset",
            requests=max(self.requests, int(f.get("iops") or 0.0)),
            class_processes=None if cproc is None else int(round(cproc)))


def _fmt(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _num(s: str) -> float | None:
    return None if s == "" else float(s)


def row_from_csv(d: dict[str, str]) -> Row:
    return Row(
        device=d["device"], workload=d["workload"], workload_class=d["workload_class"],
        candidate=d["candidate"], policy=d["policy"], scheduler=d["scheduler"],
        knobs=d["knobs"], rep=int(d["rep"]), seconds=float(d["seconds"]),
        features={n: _num(d.get(f"f_{n}") or "") for n in FEATURES + CLASS_FEATURES},
        throughput_mb_s=float(d["throughput_mb_s"]), proc_min_mb_s=float(d["proc_min_mb_s"]),
        proc_max_mb_s=float(d["proc_max_mb_s"]), proc_mean_mb_s=float(d["proc_mean_mb_s"]),
        p50_latency_s=_num(d["p50_latency_s"]), p99_latency_s=_num(d["p99_latency_s"]),
        requests=int(float(d["requests"] or 0)))


class DatasetError(ValueError):
    pass


def read_rows(path: str | Path) -> list[Row]:
    """Every complete row; a half-written last line (an interrupted run) is left out."""
    path = Path(path)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None:
            return []
        missing = [c for c in COLUMNS
                   if c not in reader.fieldnames and c not in OPTIONAL_COLUMNS]
        if missing:
            raise DatasetError(f"{path}: not an ioaz calibration dataset (missing columns "
                               f"{', '.join(missing)})")
        out = []
        for i, d in enumerate(reader, start=2):
            try:
                if None in d.values() or None in d:
                    raise ValueError("short or long line")
                out.append(row_from_csv(d))
            except (ValueError, KeyError) as e:
                # Only a final, half-written line is forgiven.
                rest = list(reader)
                if rest:
                    raise DatasetError(f"{path}:{i}: bad row ({e})") from e
    return out


class DatasetWriter:
    """Appends rows, one flushed line at a time; knows which keys are already done."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.done: set[tuple[str, str, int]] = set()
        if self.path.exists() and self.path.stat().st_size > 0:
            _cut_partial_line(self.path)
            self.done = {r.key for r in read_rows(self.path)}
            with open(self.path, newline="") as f:
                header = next(csv.reader(f))
            # appended rows keep the file's own columns (one written before an optional
            # column existed goes on without it)
            self.f = open(self.path, "a", newline="")
            self.w = csv.DictWriter(self.f, fieldnames=header, extrasaction="ignore")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.f = open(self.path, "w", newline="")
            self.w = csv.DictWriter(self.f, fieldnames=COLUMNS)
            self.w.writeheader()
            self.f.flush()

    def write(self, row: Row) -> None:
        self.w.writerow(row.to_csv())
        self.f.flush()
        os.fsync(self.f.fileno())
        self.done.add(row.key)

    def close(self) -> None:
        self.f.close()

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cut_partial_line(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


# ---------------------------------------------------------------------------- aggregation

@dataclass
class Outcome:
    """One workload under one candidate, averaged over its repetitions."""

    workload: str
    candidate: str
    policy: str
    rows: list[Row]

    def score(self, goal: str) -> float:
        return sum(r.score(goal) for r in self.rows) / len(self.rows)


def outcomes(rows: Iterable[Row]) -> dict[str, dict[str, Outcome]]:
    """workload -> candidate -> Outcome."""
    out: dict[str, dict[str, Outcome]] = {}
    for r in rows:
        per = out.setdefault(r.workload, {})
        o = per.get(r.candidate)
        if o is None:
            per[r.candidate] = Outcome(r.workload, r.candidate, r.policy, [r])
        else:
            o.rows.append(r)
    return out


def best_candidate(per: dict[str, Outcome], goal: str) -> tuple[str, float]:
    """The per-workload oracle: the candidate with the best score, and that score."""
    name = max(sorted(per), key=lambda c: per[c].score(goal))
    return name, per[name].score(goal)


def loss(per: dict[str, Outcome], chosen: str, goal: str) -> float:
    """The share of the per-workload best performance lost by running `chosen` (0..1)."""
    _, best = best_candidate(per, goal)
    if best <= 0:
        return 0.0
    got = per[chosen].score(goal) if chosen in per else 0.0
    return max(0.0, 1.0 - got / best)


def iter_rows_by_workload(rows: Iterable[Row]) -> Iterator[tuple[str, list[Row]]]:
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(r.workload, []).append(r)
    yield from groups.items()


def read_with_thresholds(dataset: Path, thresholds: str | None) -> tuple[list[Row], Thresholds]:
    """A calibration dataset and the class thresholds to judge it by (ioaz's when None), as
    derive and train read them; raises OSError, DatasetError or ThresholdsError."""
    rows = read_rows(dataset)
    return rows, load_thresholds(Path(thresholds) if thresholds else DEFAULT_THRESHOLDS)


def read_merged(datasets: list[Path], thresholds: str | None) -> tuple[list[Row], Thresholds]:
    """Several calibration datasets of one disk read as one (merged), and the class
    thresholds to judge them by, as derive and train take them; raises as
    read_with_thresholds."""
    rows = merged([read_rows(d) for d in datasets])
    return rows, load_thresholds(Path(thresholds) if thresholds else DEFAULT_THRESHOLDS)


def merged(sets: list[list[Row]]) -> list[Row]:
    """Several datasets' rows as one; a workload a later set measured again replaces its
    runs in the earlier ones (a calibration repeated with a new feature, say)."""
    out: dict[str, list[Row]] = {}
    for rows in sets:
        fresh: dict[str, list[Row]] = {}
        for r in rows:
            fresh.setdefault(r.workload, []).append(r)
        out.update(fresh)
    return [r for rows in out.values() for r in rows]


def with_direct_dirty_zero(rows: list[Row]) -> tuple[list[Row], int]:
    """Rows written before dirty_fill, of workloads that write nothing through the page cache,
    given dirty_fill 0, and how many: on the raw disk a calibration writes to, O_DIRECT
    leaves no dirty data (train --dirty-direct-zero; a real calibration's own O_DIRECT runs
    read 0, decision_matrices/kernel/README.md). Rows whose id does not parse keep theirs."""
    from .grid import WorkSpec
    n = 0
    for r in rows:
        if r.features.get("dirty_fill") is not None:
            continue
        try:
            w = WorkSpec.from_id(r.workload)
        except ValueError:
            continue
        if not w.buffered:
            r.features["dirty_fill"] = 0.0
            n += 1
    return rows, n


def without_candidates(rows: list[Row], spec: str,
                       dataset: Path) -> tuple[list[Row], tuple[str, ...]]:
    """The rows of every candidate but those named in `spec` ("fifo,vr"), and the names; a name
    the dataset does not have is a DatasetError (a typo would otherwise leave it in)."""
    excluded = tuple(x.strip() for x in spec.split(",") if x.strip())
    have = {r.candidate for r in rows}
    unknown = sorted(set(excluded) - have)
    if unknown:
        raise DatasetError(f"--exclude {','.join(unknown)}: no such candidate in {dataset} "
                           f"(it has {', '.join(sorted(have))})")
    return [r for r in rows if r.candidate not in excluded], excluded
