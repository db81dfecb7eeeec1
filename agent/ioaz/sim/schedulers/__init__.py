"""The simulated I/O schedulers, by the names the papers and ioaz's policies use."""
from __future__ import annotations

from typing import Any

from ioaz.sim.schedulers.anticipatory import Anticipatory
from ioaz.sim.schedulers.base import Scheduler
from ioaz.sim.schedulers.cfq import CFQ
from ioaz.sim.schedulers.deadline import Deadline
from ioaz.sim.schedulers.fifo import Fifo, Noop
from ioaz.sim.schedulers.kyber import Kyber
from ioaz.sim.schedulers.stream import Stream
from ioaz.sim.schedulers.vr import VR

# name -> (class, preset tunables). sstf and scan are V(R) at its two ends (Carroll 3.2);
# fcfs is the IOAZ paper's name for Linux 2.6's noop (it merged), as is "none" for today's;
# fifo is Carroll's strict FIFO, which never merges.
SCHEDULERS: dict[str, tuple[type[Scheduler], dict[str, Any]]] = {
    "fifo": (Fifo, {}),
    "fcfs": (Noop, {}),
    "noop": (Noop, {}),
    "none": (Noop, {}),
    "deadline": (Deadline, {}),
    "vr": (VR, {}),
    "sstf": (VR, {"rev_penalty": 1}),
    "scan": (VR, {"rev_penalty": 0}),
    "anticipatory": (Anticipatory, {}),
    "as": (Anticipatory, {}),
    "cfq": (CFQ, {}),
    "bfq": (CFQ, {}),
    "stream": (Stream, {}),
    "kyber": (Kyber, {}),
    # the kernel module's flavour (kmod/ioaz_stream.c): V(R) underneath, its default curve
    "stream-vr": (Stream, {"base": "vr", "svc_min_us": 100, "svc_max_us": 12000,
                           "svc_full_sectors": 1 << 31}),
}


def make_scheduler(name: str, device: Any = None, **tunables: Any) -> Scheduler:
    try:
        cls, preset = SCHEDULERS[name]
    except KeyError:
        raise ValueError(f"unknown scheduler {name!r}; "
                         f"known: {', '.join(sorted(SCHEDULERS))}") from None
    sched = cls(device, **{**preset, **tunables})
    sched.name = name
    return sched


__all__ = ["SCHEDULERS", "Scheduler", "make_scheduler"]
