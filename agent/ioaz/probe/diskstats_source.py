"""The fallback source: /proc/diskstats, when BPF cannot be loaded (no root, no BTF).

It has no per-request view: no sequentiality (seq_ratio is null), no submitting processes
(processes is null), no latency distribution (only the mean). Counts are of completions.
"""
from __future__ import annotations

import time
from collections.abc import Collection

from ..sysblock import BlockSysfs
from .layout import LAT_SLOTS, SIZE_SLOTS
from .snapshot import DeviceSnapshot, Snapshot

SECTOR = 512


def read_diskstats(path: str, names: set[str]) -> dict[str, tuple[int, int, int]]:
    """(requests, reads, bytes) completed so far of each named disk in /proc/diskstats: the
    few fields the sampler's rate and ioazd's pulse at rest read, without whole snapshots."""
    out = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split(None, 10)
            if len(parts) > 9 and parts[2] in names:
                try:
                    reads, writes = int(parts[3]), int(parts[7])
                    out[parts[2]] = (reads + writes, reads,
                                     (int(parts[5]) + int(parts[9])) * SECTOR)
                except ValueError as e:
                    raise ValueError(f"{path}:{lineno}: unreadable line {line!r}") from e
    return out


def parse_diskstats(text: str, t_ns: int, names: set[str] | None = None) -> Snapshot:
    """Whole disks of /proc/diskstats text (partitions are already counted in their disk)."""
    out: Snapshot = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if len(parts) < 14:
            continue
        name = parts[2]
        if names is not None and name not in names:
            continue
        try:
            f = [int(x) for x in parts[3:]]
            major, minor = int(parts[0]), int(parts[1])
        except ValueError as e:
            raise ValueError(f"/proc/diskstats:{lineno}: unreadable line {line!r}") from e
        f += [0] * (17 - len(f))  # discard (4.18) and flush (5.5) fields may be missing
        reads, rmerge, rsect, rms = f[0], f[1], f[2], f[3]
        writes, wmerge, wsect, wms = f[4], f[5], f[6], f[7]
        weighted_ms = f[10]
        discards, dmerge, dsect, dms = f[11], f[12], f[13], f[14]
        flushes, fms = f[15], f[16]
        completed = [reads, writes, discards, flushes, 0]
        out[name] = DeviceSnapshot(
            name=name, major=major, minor=minor, t_ns=t_ns, source="diskstats",
            completed=completed,
            completed_bytes=[rsect * SECTOR, wsect * SECTOR, dsect * SECTOR, 0, 0],
            bios=None, bios_seq=None, bio_merges=rmerge + wmerge + dmerge, rq_merges=0,
            time_in_queue_ms=weighted_ms,
            lat_sum_ns=(rms + wms + dms + fms) * 1_000_000, lat_read_ns=rms * 1_000_000,
            lat_hist=[0] * LAT_SLOTS, size_hist=[0] * SIZE_SLOTS, procs=None)
    return out


class DiskstatsSource:
    name = "diskstats"

    def __init__(self, path: str = "/proc/diskstats", sysfs: BlockSysfs | None = None):
        self.path = path
        self.sysfs = sysfs or BlockSysfs()

    def open(self) -> DiskstatsSource:
        with open(self.path):
            pass
        return self

    def close(self) -> None:
        pass

    def read(self, names: Collection[str] | None = None) -> Snapshot:
        with open(self.path) as f:
            text = f.read()
        wanted = set(self.sysfs.scheduled_disks() if names is None else names)
        return parse_diskstats(text, time.monotonic_ns(), wanted)
