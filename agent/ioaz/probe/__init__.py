"""Probe sources: each gives a cumulative Snapshot per device once a window.

open_source() prefers the eBPF probe (CO-RE through libbpf, else BCC against the kernel's
headers) and falls back to /proc/diskstats, saying why.
"""
from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Protocol

from ..sysblock import BlockSysfs
from .sampler import SamplePlan
from .snapshot import DeviceSnapshot, Snapshot

log = logging.getLogger("ioaz.probe")

# What a configuration or a command line may ask for (open_source's `prefer`).
PROBE_CHOICES = ("auto", "bpf", "bcc", "diskstats")


class Source(Protocol):
    name: str

    def read(self, names: Collection[str] | None = None) -> Snapshot:
        """Every device's cumulative counters; with `names`, at least those disks' (the
        window's own, so that a source need not read the others)."""
        ...

    def close(self) -> None: ...


def open_source(prefer: str = "auto", sample: SamplePlan | None = None,
                sysfs: BlockSysfs | None = None) -> tuple[Source, str | None]:
    """The best source available, and the reason for falling back to /proc/diskstats (None when
    a BPF probe loaded).

    prefer: "auto" (the CO-RE probe, else the BCC probe, else diskstats), "bpf" (the CO-RE
    probe, fail if unavailable), "bcc" (the BCC probe, fail if unavailable), "diskstats".
    sample: how the BPF probe samples (sampler.py); None: every request seen.
    sysfs: the block sysfs door the source names devices through (default: /sys).
    """
    from .bcc_object import unavailable_reason
    from .bpf_source import BpfSource, ProbeUnavailable
    from .diskstats_source import DiskstatsSource

    if prefer == "diskstats":
        return DiskstatsSource(sysfs=sysfs).open(), "diskstats requested"
    if prefer == "bcc":
        return BpfSource(sample=sample, sysfs=sysfs, loader="bcc").open(), None
    try:
        return BpfSource(sample=sample, sysfs=sysfs).open(), None
    except ProbeUnavailable as e:
        if prefer == "bpf":
            raise
        core = str(e)
    why_not_bcc = unavailable_reason()
    if why_not_bcc is None:
        log.warning("the CO-RE BPF probe is unavailable (%s); compiling the BCC probe against "
                    "the kernel's headers", core)
        try:
            return BpfSource(sample=sample, sysfs=sysfs, loader="bcc").open(), None
        except ProbeUnavailable as e:
            why_not_bcc = str(e)
    reason = f"BPF probe unavailable ({core}; BCC: {why_not_bcc}); using /proc/diskstats: " \
             "no seq_ratio, no processes, no latency percentiles"
    log.warning(reason)
    return DiskstatsSource(sysfs=sysfs).open(), reason

__all__ = ["PROBE_CHOICES", "DeviceSnapshot", "Snapshot", "Source", "open_source"]
