"""Diagnostics a bench run can record in the guest beside its workload (`--trace`), for a loss
whose cause the throughput alone does not show.

- `vm`: once a second, the page cache's dirty and write-back data, the kernel's dirty limits and
  the disk's read and written bytes (raw/TAG.vm.tsv): whether a workload's write-back settles
  differently under one scheduler than another.
- `bfq`: bfq's own log messages (the kernel's blk tracer, notes only) for the first seconds
  after bfq is set on the file system's disk (raw/TAG.bfq.txt.gz): its queue merges, bursts
  and weight-raising, which sysfs does not show.

Both cost CPU in the guest, so a run with them is a diagnostic, not a measurement to compare
with runs without them.
"""
from __future__ import annotations

import gzip
import subprocess
import threading
import time
from pathlib import Path

from ioaz.sysblock import BlockSysfs

TRACING = Path("/sys/kernel/tracing")
MEMINFO_KEYS = ("Dirty", "Writeback")
VMSTAT_KEYS = ("nr_dirty_threshold", "nr_dirty_background_threshold")
SECTOR = 512


def mount_tracefs() -> None:
    if not (TRACING / "trace").exists():
        subprocess.run(["mount", "-t", "tracefs", "tracefs", str(TRACING)],
                       capture_output=True, check=False)


def _fields(path: Path, keys: tuple[str, ...]) -> list[int]:
    found = {}
    for line in path.read_text().splitlines():
        name, _, rest = line.partition(":") if ":" in line else line.partition(" ")
        if name in keys:
            found[name] = int(rest.split()[0])
    return [found.get(k, -1) for k in keys]


class VmSampler:
    """Samples once a second on a thread until stop(); writes a TSV with a header."""

    COLUMNS = ("t_s", "dirty_kb", "writeback_kb", "dirty_thresh_pages",
               "bg_thresh_pages", "read_mb", "written_mb")

    def __init__(self, sysfs: BlockSysfs, dev: str, out: Path, interval_s: float = 1.0) -> None:
        self.sysfs, self.dev, self.out, self.interval_s = sysfs, dev, out, interval_s
        self.done = threading.Event()
        self.rows: list[tuple[float, ...]] = []
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self) -> tuple[float, ...]:
        stat = [int(x) for x in self.sysfs.read(self.dev, "stat").split()]
        return (round(time.monotonic() - self.t0, 2),
                *_fields(Path("/proc/meminfo"), MEMINFO_KEYS),
                *_fields(Path("/proc/vmstat"), VMSTAT_KEYS),
                round(stat[2] * SECTOR / 1e6, 1), round(stat[6] * SECTOR / 1e6, 1))

    def _run(self) -> None:
        while not self.done.wait(self.interval_s):
            self.rows.append(self._sample())

    def stop(self) -> None:
        self.done.set()
        self.thread.join(5)
        self.out.write_text("\t".join(self.COLUMNS) + "\n"
                            + "".join("\t".join(map(str, r)) + "\n" for r in self.rows))


class BfqTrace:
    """bfq's messages on `dev` for `seconds` from start(), then written gzipped to `out`."""

    def __init__(self, sysfs: BlockSysfs, dev: str, seconds: float, out: Path) -> None:
        self.sysfs, self.dev, self.seconds, self.out = sysfs, dev, seconds, out
        self.timer: threading.Timer | None = None
        self.lock = threading.Lock()
        self.started = self.stopped = False

    def _w(self, rel: str, value: str) -> None:
        (TRACING / rel).write_text(value)

    def start(self) -> None:
        with self.lock:
            if self.started:
                return
            self.started = True
            self._w("tracing_on", "0")
            self._w("current_tracer", "blk")
            # 16 MiB a CPU, taken from the workload's memory; when full, later messages are
            # dropped, not the first ones: the first seconds are what the trace is for
            self._w("buffer_size_kb", "16384")
            self._w("options/overwrite", "0")
            self._w("trace", "")
            # notes only: bfq's messages, not every request's queue/dispatch/complete
            self.sysfs.write(self.dev, "trace/act_mask", "notify")
            self.sysfs.write(self.dev, "trace/enable", "1")
            self._w("tracing_on", "1")
            self.timer = threading.Timer(self.seconds, self.stop)
            self.timer.start()

    def stop(self) -> None:
        with self.lock:
            if not self.started or self.stopped:
                return
            self.stopped = True
            self._w("tracing_on", "0")
            with open(TRACING / "trace", "rb") as src, gzip.open(self.out, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            self.sysfs.write(self.dev, "trace/enable", "0")
            self._w("current_tracer", "nop")

    def cancel(self) -> None:
        if self.timer:
            self.timer.cancel()
        self.stop()
