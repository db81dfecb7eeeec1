"""Record every bio submitted to one disk, for replay in the simulator (`ioaz-lab record`).

bpf/record.bpf.c sends one event per bio through a ring buffer; this module drains it and
writes the simulator's trace CSV (`time_s,pid,sector,sectors,op,sync`, see ioaz/sim/trace.py).
Per-event traffic is acceptable here because recording is an experiment, not the daemon.
"""
from __future__ import annotations

import csv
import ctypes
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..sysblock import BlockSysfs
from . import libbpf
from .bpf_object import BpfObject, ProbeUnavailable, object_path

# struct ioaz_trace_event of bpf/record.h
EVENT = struct.Struct("<QQIIIBBH")
HEADER = ["time_s", "pid", "sector", "sectors", "op", "sync"]

_SAMPLE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


@dataclass
class RecordStats:
    events: int = 0
    dropped: int = 0
    seconds: float = 0.0


def _bind() -> ctypes.CDLL:
    L = libbpf.lib()
    L.ring_buffer__new.restype = ctypes.c_void_p
    L.ring_buffer__new.argtypes = [ctypes.c_int, _SAMPLE_FN, ctypes.c_void_p, ctypes.c_void_p]
    L.ring_buffer__poll.restype = ctypes.c_int
    L.ring_buffer__poll.argtypes = [ctypes.c_void_p, ctypes.c_int]
    L.ring_buffer__free.restype = None
    L.ring_buffer__free.argtypes = [ctypes.c_void_p]
    L.bpf_map_lookup_elem.restype = ctypes.c_int
    return L


def record(device: str, seconds: float, out: TextIO, obj_path: Path | None = None,
           sysfs: BlockSysfs | None = None) -> RecordStats:
    """Write `seconds` of `device`'s bios to `out` as trace CSV."""
    sysfs = sysfs or BlockSysfs()
    devt = sysfs.devt(device)
    if devt is None:
        raise ProbeUnavailable(f"no such block device {device!r} (see {sysfs.root / 'block'})")
    obj = BpfObject(obj_path or object_path("record.bpf.o", env="IOAZ_RECORD_OBJECT"),
                    {"target_dev": (devt[0] << 20) | devt[1]})
    obj.open()
    stats = RecordStats()
    writer = csv.writer(out)
    writer.writerow(HEADER)
    t0: list[int] = []

    def on_event(_ctx: int, data: int, size: int) -> int:
        ts, sector, nsec, tgid, _dev, write, sync, _ = EVENT.unpack(
            ctypes.string_at(data, EVENT.size))
        if not t0:
            t0.extend((ts, ts))
        # Two CPUs can commit to the ring buffer in the other order than they stamped their
        # events (microseconds apart): the trace keeps time non-decreasing for replay.
        t0[1] = max(t0[1], ts)
        writer.writerow([f"{(t0[1] - t0[0]) / 1e9:.9f}", tgid, sector, nsec,
                         "W" if write else "R", sync])
        stats.events += 1
        return 0

    cb = _SAMPLE_FN(on_event)  # keep a reference for as long as the ring buffer lives
    L = _bind()
    rb = None
    try:
        rb = libbpf.check_ptr(L.ring_buffer__new(obj.map_fd("events"), cb, None, None),
                              "ring buffer")
        start = time.monotonic()
        end = start + seconds
        while (now := time.monotonic()) < end:
            ret = L.ring_buffer__poll(rb, max(1, min(100, int((end - now) * 1000))))
            if ret < 0 and ret != -4:  # -EINTR: a signal; go on
                raise libbpf.LibbpfError(-ret, "ring buffer poll")
        L.ring_buffer__poll(rb, 0)  # what arrived in the last instant
        stats.seconds = time.monotonic() - start
        stats.dropped = _dropped(obj)
    finally:
        if rb:
            L.ring_buffer__free(rb)
        obj.close()
    return stats


def _dropped(obj: BpfObject) -> int:
    L = libbpf.lib()
    ncpu = L.libbpf_num_possible_cpus()
    key = ctypes.c_uint32(0)
    val = (ctypes.c_uint64 * ncpu)()
    if L.bpf_map_lookup_elem(obj.map_fd("dropped"), ctypes.byref(key), val) != 0:
        return 0
    return int(sum(val))
