"""What one testbed run measured, read from the files the guest left (guest_bench.py), and the
statistics over repeated runs.

Every run gives the application's own figure (the bytes of fio, sysbench, postmark or dbench,
dd's rate, pgbench's transactions) and the disk's: bytes moved over the run per the block layer's
stat file, which is how S measures its throughput tests (iostat) and the one figure every workload
has in common.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ioaz import quantile

SECTOR = 512
# Student's t at 0.975 for n-1 degrees of freedom (a two-sided 95% interval); beyond 30, ~normal.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


@dataclass(frozen=True)
class Measured:
    mb_s: float                    # the application's throughput, in its workload's unit
                                   # (MB/s, MB = 1e6 bytes; pgbench: transactions/s
                                   # to the end of its shutdown checkpoint)
    p99_ms: float | None           # the application's 99th percentile latency, when it has one
    disk_mb_s: float               # bytes the disk moved over the run's wall time
    phases: dict[str, float]       # a mix's per-phase MB/s
    phase_p99_ms: dict[str, float]  # and each phase's own p99 (the p99 above pools them all,
                                    # so on a mix it is mostly the slowest phase's)


def bins_percentile(bins: Mapping[int, int], q: float) -> float | None:
    """The q-quantile of a histogram {value: count} (fio's json+ clat bins)."""
    found = quantile.of_counts(sorted(bins.items()), q)
    return None if found is None else float(found[0])


def fio(text: str, stonewalled: bool = False
        ) -> tuple[float, float | None, dict[str, float], dict[str, float]]:
    """fio json+: MB/s summed over concurrent groups (stonewalled groups: their mean, each
    phase as long as the next), p99 completion latency from the merged bins, per-group MB/s and
    per-group p99 in ms (a group that completed nothing has none)."""
    j = json.loads(text[text.index("{"):])
    groups: dict[str, float] = {}
    bins: dict[str, dict[int, int]] = {}
    for job in j["jobs"]:
        name = job["jobname"]
        bw = sum(job[d]["bw_bytes"] for d in ("read", "write")) / 1e6
        groups[name] = groups.get(name, 0.0) + bw
        mine = bins.setdefault(name, {})
        for d in ("read", "write"):
            for k, v in (job[d]["clat_ns"].get("bins") or {}).items():
                mine[int(k)] = mine.get(int(k), 0) + v
    total = statistics.fmean(groups.values()) if stonewalled else sum(groups.values())
    merged: dict[int, int] = {}
    for b in bins.values():
        for k, v in b.items():
            merged[k] = merged.get(k, 0) + v
    p99 = bins_percentile(merged, 0.99)
    per_group = {name: q / 1e6 for name, b in bins.items()
                 if (q := bins_percentile(b, 0.99)) is not None}
    return total, (p99 / 1e6 if p99 is not None else None), groups, per_group


def dd(text: str) -> float:
    m = re.search(r"^(\d+) bytes .* copied, ([\d.]+) s", text, re.MULTILINE)
    if not m:
        raise ValueError(f"no dd summary in {text[-200:]!r}")
    return int(m.group(1)) / float(m.group(2)) / 1e6


def sysbench(text: str) -> tuple[float, float | None]:
    rd = re.search(r"read, MiB/s:\s+([\d.]+)", text)
    wr = re.search(r"written, MiB/s:\s+([\d.]+)", text)
    if not rd or not wr:
        raise ValueError(f"no sysbench throughput in {text[-300:]!r}")
    p = re.search(r"99th percentile:\s+([\d.]+)", text)
    return ((float(rd.group(1)) + float(wr.group(1))) * 1.048576,
            float(p.group(1)) if p else None)


def stamped_s(text: str, label: str, program: str) -> float:
    """Seconds between the two `date +%s.%N` stamps of the script's `LABEL T0 T1` line."""
    w = re.search(rf"^{label} ([\d.]+) ([\d.]+)$", text, re.MULTILINE)
    if not w:
        raise ValueError(f"no '{label}' line after {program}'s report in {text[-300:]!r}")
    return max(float(w.group(2)) - float(w.group(1)), 0.0)


def pgbench(text: str) -> float:
    """Transactions per second over the script's `wall T0 T1` line: from pgbench's start to the
    end of the server's shutdown checkpoint (workloads.py says why not pgbench's own tps)."""
    m = re.search(r"^number of transactions actually processed: (\d+)", text, re.MULTILINE)
    if not m:
        raise ValueError(f"no pgbench transaction count in {text[-300:]!r}")
    return int(m.group(1)) / max(stamped_s(text, "wall", "pgbench"), 1e-9)


def dbench(text: str) -> float:
    """dbench's throughput with the closing sync of what it left dirty, in its MB/sec: its own
    figure covers the run after its warm-up and none of the write-back still in the page cache
    when it ends, so the bytes it counted (its MB/sec over the run less the warm-up, both from
    its `Running for` line) are spread over that time and the script's `closing sync T0 T1`."""
    m = re.search(r"^Throughput ([\d.]+) MB/sec", text, re.MULTILINE)
    if not m:
        raise ValueError(f"no dbench throughput in {text[-300:]!r}")
    run = re.search(r"^Running for (\d+) seconds .* minimum warmup (\d+) secs", text, re.MULTILINE)
    if not run:
        raise ValueError(f"no dbench 'Running for' line in {text[:300]!r}")
    measured_s = max(int(run.group(1)) - int(run.group(2)), 1)
    return float(m.group(1)) * measured_s / (
        measured_s + stamped_s(text, "closing sync", "dbench"))


_POSTMARK_UNITS = {"bytes": 1, "kilobytes": 1024, "megabytes": 1024 ** 2, "gigabytes": 1024 ** 3}


def postmark(text: str) -> float:
    """MB/s: the bytes postmark read and wrote over the run's wall time (the script's `wall T0
    T1` line; postmark's own times are whole seconds)."""
    moved = 0.0
    for what in ("read", "written"):
        m = re.search(rf"^\s*([\d.]+) (bytes|kilobytes|megabytes|gigabytes) {what} \(",
                      text, re.MULTILINE)
        if not m:
            raise ValueError(f"no postmark bytes {what} in {text[-300:]!r}")
        moved += float(m.group(1)) * _POSTMARK_UNITS[m.group(2)]
    return moved / max(stamped_s(text, "wall", "postmark"), 1e-9) / 1e6


# bfq's messages as the blk tracer prints them (bench --trace bfq): time, "m N", the queue
# ("bfq<pid>S" a process's synchronous queue, "bfqSHARED-S" a merged one), the message
_BFQ_NOTE = re.compile(r"\s(\d+\.\d+):\s+\S+\s+\S+\s+m\s+N\s+bfq(\S*)\s+(.*)$")


def bfq_queues(text: str) -> dict[str, Any]:
    """From a bfq trace: the synchronous queues it created (pid, seconds from the first
    message), the merges (seconds, the queue merged, bfq's count of busy weight-raised queues
    then) and the splits of a merged queue. A merge never followed by a split is a stable one
    (bfq never splits those)."""
    created: list[tuple[str, float]] = []
    merged: list[tuple[float, str, int]] = []
    split: list[float] = []
    t0 = None
    pending = ""
    for line in text.splitlines():
        m = _BFQ_NOTE.search(line)
        if not m:
            continue
        t, queue, msg = float(m.group(1)), m.group(2), m.group(3)
        t0 = t if t0 is None else t0
        at = round(t - t0, 3)
        if msg == "allocated" and queue.endswith("S") and queue[:-1].isdigit():
            created.append((queue[:-1], at))
        elif msg.startswith("merging with queue"):
            pending = queue.removesuffix("S")
        elif msg.startswith("merge_bfqqs: wr_busy"):
            merged.append((at, pending, int(msg.split()[-1])))
        elif msg == "splitting queue":
            split.append(at)
    return {"created": created, "merged": merged, "split": split}


def disk_mb_s(before: Sequence[int], after: Sequence[int], wall_s: float) -> float:
    sectors = (after[2] - before[2]) + (after[6] - before[6])
    return sectors * SECTOR / max(wall_s, 1e-9) / 1e6


def disk_busy(before: Sequence[int], after: Sequence[int], wall_s: float) -> float:
    """The share of the run the disk had a request in flight (its stat's io_ticks, in ms): a
    workload that leaves the disk idle most of the run is bound elsewhere, and no scheduler
    can move it much."""
    return (after[9] - before[9]) / 1000 / max(wall_s, 1e-9)


def run(raw: Path, line: Mapping[str, Any], parser: str, disk: str,
        stonewalled: bool = False) -> Measured:
    """One line of runs.jsonl and its output file."""
    text = (raw / line["out"]).read_text(errors="replace")
    p99: float | None = None
    phases: dict[str, float] = {}
    phase_p99: dict[str, float] = {}
    if parser == "fio":
        mb_s, p99, phases, phase_p99 = fio(text, stonewalled)
    elif parser == "dd":
        mb_s = dd(text)
    elif parser == "sysbench":
        mb_s, p99 = sysbench(text)
    elif parser == "pgbench":
        mb_s = pgbench(text)
    elif parser == "dbench":
        mb_s = dbench(text)
    elif parser == "postmark":
        mb_s = postmark(text)
    else:
        raise ValueError(f"unknown parser {parser!r}")
    return Measured(mb_s, p99, disk_mb_s(line["stat_before"][disk], line["stat_after"][disk],
                                         line["wall_s"]), phases, phase_p99)


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    ci95: float                    # half-width of the 95% interval of the mean (0 when n < 2)

    def __str__(self) -> str:
        return f"{self.mean:.2f} ± {self.ci95:.2f}" if self.n > 1 else f"{self.mean:.2f}"


def t975(dof: int) -> float:
    if dof in _T975:
        return _T975[dof]
    below = [k for k in _T975 if k < dof]
    return _T975[max(below)] if dof < 30 else 1.96


def summarize(xs: Sequence[float]) -> Summary:
    n = len(xs)
    if not n:
        return Summary(0, math.nan, math.nan)
    m = statistics.fmean(xs)
    if n < 2:
        return Summary(1, m, 0.0)
    return Summary(n, m, t975(n - 1) * statistics.stdev(xs) / math.sqrt(n))


def ratio_ci(num: Sequence[float], den: Sequence[float]) -> Summary:
    """The ratio of two contenders over paired rounds (same round, run one after the other):
    the mean of the per-round ratios and its interval, so the drift between rounds cancels."""
    pairs = [a / b for a, b in zip(num, den, strict=False) if b > 0]
    return summarize(pairs)
