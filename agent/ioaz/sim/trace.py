"""Trace replay: requests submitted at the times a trace recorded, read lazily from the file so a
one-hour trace costs the memory of the requests in flight, not of the trace.

Two formats, told apart by the first line:
- CSV with the header `time_s,pid,sector,sectors,op[,sync]` (op `R`/`W` or `read`/`write`,
  sync 0/1, default 1 for reads and 0 for writes): the simulator's own format;
- the text blkparse prints by default (`maj,min cpu seq time pid action rwbs sector + n
  [comm]`): the `Q` (queued) events become arrivals, `S` in rwbs marks sync, other events and
  non-read/write (discard, flush) are skipped.
Replay is open loop: a request arrives when the trace says, whether the device kept up or not.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ioaz.sim.request import SECTOR, Request
from ioaz.sim.workloads import ProcSpec, SimProcess

_BLKPARSE = re.compile(
    r"^\s*\d+,\d+\s+\d+\s+\d+\s+(?P<t>\d+\.\d+)\s+(?P<pid>\d+)\s+(?P<act>\S+)\s+(?P<rwbs>\S+)"
    r"\s+(?P<sector>\d+)\s+\+\s+(?P<n>\d+)")


@dataclass(frozen=True)
class TraceRecord:
    t: float        # seconds from the start of the trace
    pid: int
    sector: int
    nsec: int
    write: bool
    sync: bool


def _csv_records(f: IO[str], name: str) -> Iterator[TraceRecord]:
    rows = csv.DictReader(f)
    need = {"time_s", "pid", "sector", "sectors", "op"}
    if not rows.fieldnames or not need <= set(rows.fieldnames):
        raise ValueError(f"{name}:1: expected a header with {sorted(need)} (and optional sync)")
    t0 = None
    for lineno, row in enumerate(rows, start=2):
        try:
            t = float(row["time_s"])
            op = row["op"].strip().lower()
            if op not in ("r", "w", "read", "write"):
                raise ValueError(f"op {row['op']!r} not R/W/read/write")
            write = op in ("w", "write")
            sync_s = (row.get("sync") or "").strip()
            sync = (sync_s == "1") if sync_s else not write
            rec = TraceRecord(t, int(row["pid"]), int(row["sector"]), int(row["sectors"]),
                              write, sync)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{name}:{lineno}: {e}") from None
        if rec.nsec <= 0:
            continue
        t0 = rec.t if t0 is None else t0
        yield TraceRecord(rec.t - t0, rec.pid, rec.sector, rec.nsec, rec.write, rec.sync)


def _blkparse_records(lines: Iterator[str]) -> Iterator[TraceRecord]:
    t0 = None
    for line in lines:
        m = _BLKPARSE.match(line)
        if not m or m["act"] != "Q":
            continue
        rwbs = m["rwbs"]
        if "D" in rwbs or "F" in rwbs or not ("R" in rwbs or "W" in rwbs):
            continue  # discard, flush, other
        write = "W" in rwbs
        t = float(m["t"])
        t0 = t if t0 is None else t0
        yield TraceRecord(t - t0, int(m["pid"]), int(m["sector"]), int(m["n"]), write,
                          "S" in rwbs or not write)


def read_trace(path: str | Path) -> Iterator[TraceRecord]:
    """Records of a trace file, in file order (which must be time order)."""
    p = Path(path)
    with p.open() as f:
        first = f.readline()
        f.seek(0)
        if first.lstrip().startswith("time_s"):
            yield from _csv_records(f, str(p))
        else:
            yield from _blkparse_records(iter(f))


def write_trace_csv(path: str | Path, records: list[TraceRecord]) -> None:
    with Path(path).open("w") as f:
        f.write("time_s,pid,sector,sectors,op,sync\n")
        for r in records:  # (a loop: mypyc would build a generator's whole list first)
            f.write(f"{r.t:.9f},{r.pid},{r.sector},{r.nsec},{'W' if r.write else 'R'},"
                    f"{int(r.sync)}\n")


class TraceProcess(SimProcess):
    """Per-pid accounting for a replayed trace (what a Process keeps for the run's result);
    of its spec only the name means anything."""

    def __init__(self, pid: int, t: float) -> None:
        self.pid = pid
        self.spec = ProcSpec(name=f"trace-{pid}")
        self.start_t = t
        self.end_t = t
        self.bytes = 0
        self.done = 0

    def complete(self, rq: Request, now: float) -> None:
        self.bytes += rq.nsec * SECTOR
        self.done += 1
        self.end_t = now

    @property
    def active_s(self) -> float:
        return max(1e-9, self.end_t - self.start_t)

    def stop(self, now: float) -> None:
        """A phase ended: a traced process is not the workload's to stop."""


class TraceFeeder:
    """Feeds a trace into a Simulator one record ahead: only the next arrival is an event."""

    def __init__(self, sim: Any, records: Iterator[TraceRecord]) -> None:
        self.sim = sim
        self.records = records
        self.n = 0
        sim.feeders += 1
        self._next(0.0)

    def _next(self, now: float) -> None:
        rec = next(self.records, None)
        if rec is None:
            self.sim.feeders -= 1
            self.sim.check_idle(now)
            return
        self.sim.at(rec.t, self._fire, rec)

    def _fire(self, now: float, rec: TraceRecord) -> None:
        self.n += 1
        sim = self.sim
        p = sim.procs.get(rec.pid)
        if p is None:
            p = sim.procs[rec.pid] = TraceProcess(rec.pid, now)
            sim.all_procs.append(p)
        sim.submit(Request(self.n, rec.pid, rec.sector, rec.nsec, rec.write, rec.sync, now))
        self._next(now)
