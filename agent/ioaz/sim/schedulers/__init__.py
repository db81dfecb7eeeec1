"""The simulated I/O schedulers, by the names the papers and ioaz's policies use."""
from __future__ import annotations

from collections.abc import Callable
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
    # the kernel's bfq: cfq with bfq's stable merging of queues created together
    "bfq": (CFQ, {"stable_merge": 1}),
    "stream": (Stream, {}),
    "kyber": (Kyber, {}),
    # the kernel module's flavour (kmod/ioaz_stream.c): V(R) underneath, its default curve
    "stream-vr": (Stream, {"base": "vr", "svc_min_us": 100, "svc_max_us": 12000,
                           "svc_full_sectors": 1 << 31}),
}


# The block layer's request limits since blk-mq (the kernels ioaz runs on; the papers' 2.6 had a
# queue of 128 per direction, which their workloads never filled): without a scheduler a queue
# holds no more requests than the device's tags, so nothing waits where a bio could merge into
# it; with one, queue/nr_requests = 2 x min(tags, BLKDEV_DEFAULT_RQ = 128) (blk_mq_init_sched).
# The simulated "noop" stands for none here, every other name for an elevator.
NO_ELEVATOR = frozenset({"noop", "none", "fcfs"})
BLKDEV_DEFAULT_RQ = 128


def blk_mq_nr_requests(tags: int) -> Callable[[str], int]:
    """queue/nr_requests under each scheduler name, for a device with `tags` command slots."""
    def of(name: str) -> int:
        return tags if name in NO_ELEVATOR else 2 * min(tags, BLKDEV_DEFAULT_RQ)
    return of


def make_scheduler(name: str, device: Any = None, **tunables: Any) -> Scheduler:
    try:
        cls, preset = SCHEDULERS[name]
    except KeyError:
        raise ValueError(f"unknown scheduler {name!r}; "
                         f"known: {', '.join(sorted(SCHEDULERS))}") from None
    sched = cls(device, **{**preset, **tunables})
    sched.name = name
    return sched


__all__ = ["SCHEDULERS", "Scheduler", "blk_mq_nr_requests", "make_scheduler"]
