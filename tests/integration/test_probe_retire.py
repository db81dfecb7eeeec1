"""The probe's `procs` map does not keep every process that ever did I/O: a process idle for
the retirement time leaves it (whole, from the kernel's map and from the reader), while one
still submitting stays and its count goes on (bpf_source.idle_processes)."""
from __future__ import annotations

import subprocess
import time

from conftest import fio_args, need_root, need_tool
from ioaz.probe.bpf_source import BpfSource
from ioaz.probe.layout import PROC_KEY_SIZE, PROC_VAL_SIZE


def _map_tgids(src: BpfSource) -> set[int]:
    """The processes in the kernel's map itself (not the reader's copy)."""
    rows = src._dump(src._fds["procs"], PROC_KEY_SIZE, PROC_VAL_SIZE * src._ncpu)
    return {int.from_bytes(k[4:8], "little") for k, _ in rows}


def test_an_idle_process_leaves_the_map_and_a_busy_one_stays(make_loop):
    need_root("loading BPF")
    need_tool("fio")
    dev = make_loop(256)
    with BpfSource(retire_idle_s=1.0) as src:
        src.read()
        short = subprocess.Popen(["dd", f"if=/dev/{dev}", "of=/dev/null", "bs=4k",
                                  "count=2000", "iflag=direct", "status=none"])
        assert short.wait(30) == 0
        # one job submitting 100 reads a second for the whole test
        busy = subprocess.Popen(fio_args(dev, rw="randread", seconds=15,
                                         extra=("--rate_iops=100",)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            first = src.read()[dev].procs or {}
            assert first.get(short.pid, 0) >= 2000, first
            # dd's count may still be pending on its CPU (flushed into the map when another
            # process submits there): it is kept until then, and retired after
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.3)
                procs = src.read()[dev].procs or {}     # each read retires what it may
                if short.pid not in procs and short.pid not in _map_tgids(src):
                    break
            assert short.pid not in _map_tgids(src), "idle for 10 s and still in the map"
            before = src.read()[dev].procs or {}
            for _ in range(5):                # 1.5 s: longer than the retirement time
                time.sleep(0.3)
                after = src.read()[dev].procs or {}
            assert short.pid not in before and short.pid not in after
            # fio's job counts on throughout, though its count may never reach the map (a
            # process alone on its CPU keeps it pending there)
            going_on = {t for t, n in after.items() if n > before.get(t, 0)}
            assert going_on, (before, after)
        finally:
            busy.kill()
            busy.wait()
