"""What ran on the host beside a testbed bench: the CPU time of every process that is not the
bench itself or one of its descendants (qemu, the model disk servers), sampled from /proc.

Why: the host is a shared 2-core machine, and the guest's disks are served by processes on it,
so a busy neighbour slows the model disks and the guest's TCG. A results document must say
what ran beside the experiment; `--beside` says what the operator knew of, this says what the
kernel counted.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

PERIOD_S = 5.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
PROC = Path("/proc")


def read_cpu_busy_s(proc: Path = PROC) -> tuple[float, int]:
    """The host's CPU time not idle nor waiting for a disk, summed over its CPUs, in seconds,
    and the number of CPUs."""
    busy, cpus = 0.0, 0
    for line in (proc / "stat").read_text().splitlines():
        name, *vals = line.split()
        if name == "cpu":
            v = [int(x) for x in vals]
            busy = (sum(v[:8]) - v[3] - v[4]) / CLK_TCK   # user..steal less idle, iowait
        elif name.startswith("cpu"):
            cpus += 1
    return busy, cpus


Process = tuple[str, int, float, int]   # command name, parent pid, CPU seconds, start time


def read_processes(proc: Path = PROC) -> dict[int, Process]:
    """pid -> (command name, parent pid, CPU seconds, start time in ticks since boot) of every
    process. Its CPU seconds are its user and system time and those of the children it has
    waited for, so a short-lived child's time is seen in its parent once it is gone. A kernel
    worker's name says what it works on, and changes with it: they are all `kworker`."""
    out: dict[int, Process] = {}
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            text = (d / "stat").read_text()
        except OSError:
            continue   # gone since the listing
        # the command name is in parentheses and may itself hold spaces and parentheses
        comm = text[text.index("(") + 1:text.rindex(")")]
        f = text[text.rindex(")") + 2:].split()
        if comm.startswith("kworker/"):
            comm = "kworker"
        out[int(d.name)] = (comm, int(f[1]), sum(int(x) for x in f[11:15]) / CLK_TCK,
                            int(f[19]))
    return out


def descendants(procs: dict[int, Process], root: int) -> set[int]:
    """root and every process below it."""
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, ()))
    return out


def sample_between(old: dict[int, Process], new: dict[int, Process], ours: set[int]
                   ) -> tuple[float, dict[str, float]]:
    """The CPU seconds our processes and the others (by command name) took between two reads.
    A process new since the old read counts from its start. One gone since counts again in its
    parent's children's time: what the old read had already counted of it is taken off there."""
    counted: defaultdict[int, float] = defaultdict(float)
    for pid, (_, ppid, cpu, started) in old.items():
        if pid not in new or new[pid][3] != started:
            counted[ppid] += cpu
    mine, beside = 0.0, defaultdict[str, float](float)
    for pid, (comm, _, cpu, started) in new.items():
        prev = old.get(pid)
        used = (cpu - prev[2] if prev and prev[3] == started else cpu) - counted[pid]
        if used <= 0:
            continue
        if pid in ours:
            mine += used
        else:
            beside[comm] += used
    return mine, beside


class HostLoad:
    """Samples the host every period_s in a thread, from start() to stop(), into a JSON-lines
    file: t (wall clock), dt, cpus, busy_s (the whole host), ours_s, beside {comm: s}."""

    def __init__(self, out: Path, root: int | None = None, period_s: float = PERIOD_S,
                 proc: Path = PROC) -> None:
        self.out, self.root, self.period_s, self.proc = out, root or os.getpid(), period_s, proc
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="host-load", daemon=True)

    def start(self) -> HostLoad:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        t, (busy, cpus), procs = time.time(), read_cpu_busy_s(self.proc), read_processes(self.proc)
        with open(self.out, "w") as f:
            while True:
                stopping = self._stop.wait(self.period_s)
                t2, (busy2, _), procs2 = (time.time(), read_cpu_busy_s(self.proc),
                                          read_processes(self.proc))
                mine, beside = sample_between(procs, procs2, descendants(procs2, self.root))
                f.write(json.dumps({"t": round(t2, 2), "dt": round(t2 - t, 2), "cpus": cpus,
                                    "busy_s": round(busy2 - busy, 2), "ours_s": round(mine, 2),
                                    # the host's busy time less ours: the others and the kernel's
                                    # own threads and interrupts, which no process is charged
                                    "others_s": round(max(0.0, busy2 - busy - mine), 2),
                                    "beside": {k: round(v, 2) for k, v in beside.items()
                                               if v >= 0.01}}) + "\n")
                f.flush()
                t, busy, procs = t2, busy2, procs2
                if stopping:
                    return


def read_samples(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    except (OSError, ValueError):
        return []


def summary(samples: list[dict[str, Any]], start: float | None = None,
            end: float | None = None, top: int = 4) -> dict[str, Any] | None:
    """Over the samples in [start, end] (every one by default): the share of the host's
    CPUs the host as a whole, the bench and the rest took, and the other processes' busiest
    command names with their CPU seconds. None without a sample."""
    # a sample is the span's when most of it is: its middle is within
    chosen = [s for s in samples if (start is None or s["t"] - s["dt"] / 2 >= start)
              and (end is None or s["t"] - s["dt"] / 2 <= end)]
    if not chosen:
        return None
    span = sum(s["dt"] for s in chosen) * chosen[0]["cpus"]
    beside: Counter[str] = Counter()
    for s in chosen:
        beside.update(s["beside"])
    return {"seconds": round(sum(s["dt"] for s in chosen), 1), "cpus": chosen[0]["cpus"],
            "busy": sum(s["busy_s"] for s in chosen) / span,
            "ours": sum(s["ours_s"] for s in chosen) / span,
            "others": sum(s["others_s"] for s in chosen) / span,
            "top": [(k, round(v, 1)) for k, v in beside.most_common(top)]}


def describe(s: dict[str, Any] | None) -> str:
    """One sentence for a report."""
    if s is None:
        return "not measured"
    top = ", ".join(f"{k} {v:.0f} s" for k, v in s["top"] if v >= 0.5) or "nothing over 0.5 s"
    return (f"measured, the rest of the host took {100 * s['others']:.1f}% of its "
            f"{s['cpus']} CPUs over {s['seconds'] / 60:.0f} min (the testbed itself "
            f"{100 * s['ours']:.0f}%; the busiest other processes: {top})")
