"""Probe sources: each gives a cumulative Snapshot per device once a window.

open_source() prefers the eBPF probe and falls back to /proc/diskstats, saying why.
"""
from __future__ import annotations

import logging
from typing import Protocol

from ..sysblock import BlockSysfs
from .sampler import SamplePlan
from .snapshot import DeviceSnapshot, Snapshot

log = logging.getLogger("ioaz.probe")


class Source(Protocol):
    name: str

    def read(self) -> Snapshot: ...

    def close(self) -> None: ...


def open_source(prefer: str = "auto", sample: SamplePlan | None = None,
                sysfs: BlockSysfs | None = None) -> tuple[Source, str | None]:
    """The best source available, and the reason for falling back (None when BPF loaded).

    prefer: "auto" (bpf, else diskstats), "bpf" (fail if unavailable), "diskstats".
    sample: how the BPF probe samples (sampler.py); None: every request seen.
    sysfs: the block sysfs door the source names devices through (default: /sys).
    """
    from .bpf_source import BpfSource, ProbeUnavailable
    from .diskstats_source import DiskstatsSource

    if prefer == "diskstats":
        return DiskstatsSource(sysfs=sysfs).open(), "diskstats requested"
    try:
        return BpfSource(sample=sample, sysfs=sysfs).open(), None
    except ProbeUnavailable as e:
        if prefer == "bpf":
            raise
        reason = f"BPF probe unavailable ({e}); using /proc/diskstats: no seq_ratio, " \
                 "no processes, no latency percentiles"
        log.warning(reason)
        return DiskstatsSource(sysfs=sysfs).open(), reason


__all__ = ["DeviceSnapshot", "Snapshot", "Source", "open_source"]
