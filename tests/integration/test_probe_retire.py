"""The probe's `procs` map does not keep every process that ever did I/O: a process idle for
the retirement time leaves it (whole, from the kernel's map and from the reader), while one
still submitting stays and its count goes on (bpf_source.idle_processes)."""
from __future__ import annotations

import os
import subprocess
import time

from conftest import fio_args, need_root, need_tool
from ioaz.probe.bpf_source import BpfSource, pending_processes
from ioaz.probe.layout import DEV_VALUE_SIZE, PROC_KEY_SIZE, PROC_VAL_SIZE

SHORT = 20   # short-lived processes, each a few hundred reads


def _map_tgids(src: BpfSource) -> set[int]:
    """The processes in the kernel's map itself (not the reader's copy)."""
    rows = src._dump(src._fds["procs"], PROC_KEY_SIZE, PROC_VAL_SIZE * src._ncpu)
    return {int.from_bytes(k[4:8], "little") for k, _ in rows}


def _pending(src: BpfSource) -> set[int]:
    """Processes whose last bios wait in a CPU's slot of dev_stats: a CPU's last submitter
    stays there until another process submits on that CPU, and is kept till then."""
    return pending_processes(src._dump(src._fds["dev_stats"], 4, DEV_VALUE_SIZE * src._ncpu),
                             src._ncpu)


def test_idle_processes_leave_the_map_and_a_busy_one_stays(make_loop):
    need_root("loading BPF")
    need_tool("fio")
    dev = make_loop(256)
    cpus = sorted(os.sched_getaffinity(0))
    with BpfSource(retire_idle_s=1.0) as src:
        src.read()
        short = []
        for i in range(SHORT):
            cpu = cpus[i % len(cpus)]
            p = subprocess.Popen(["dd", f"if=/dev/{dev}", "of=/dev/null", "bs=4k", "count=300",
                                  f"skip={i * 300}", "iflag=direct", "status=none"],
                                 preexec_fn=lambda c=cpu: os.sched_setaffinity(0, {c}))
            assert p.wait(30) == 0
            short.append(p.pid)
        # one job submitting 100 reads a second for the whole test
        busy = subprocess.Popen(fio_args(dev, rw="randread", seconds=15,
                                         extra=("--rate_iops=100",)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            first = src.read()[dev].procs or {}
            assert all(first.get(pid, 0) >= 300 for pid in short), first
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.3)
                src.read()                    # each read retires what it may
                kept = set(short) & _map_tgids(src)
                if kept <= _pending(src):
                    break
            kept = set(short) & (_map_tgids(src) | set(src.read()[dev].procs or {}))
            # at most one pending process a CPU, and only a pending one is kept
            assert len(kept) <= len(cpus), (kept, _pending(src))
            assert kept <= _pending(src), (kept, _pending(src))
            before = src.read()[dev].procs or {}
            for _ in range(5):                # 1.5 s: longer than the retirement time
                time.sleep(0.3)
                after = src.read()[dev].procs or {}
            # fio's job counts on throughout, though its count may never reach the map (a
            # process alone on its CPU keeps it pending there)
            going_on = {t for t, n in after.items() if n > before.get(t, 0)}
            assert going_on, (before, after)
            assert not going_on & set(short)
        finally:
            busy.kill()
            busy.wait()
