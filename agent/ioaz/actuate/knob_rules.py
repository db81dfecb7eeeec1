"""Knob values computed from what was measured and what the device is: pure functions, no I/O.

Each rule cites the finding it carries over, by section of A. Carroll, "I/O Scheduling on
RAID", UNSW thesis, 2008 (docs/references.md), or the measurement it rests on.

A rule returns only the knobs it has a reason to set; everything else stays at the kernel's
default. Knobs the administrator wrote into policies.yaml win over every rule (tune()).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ioaz.actuate.types import QueueSettings, Value
from ioaz.classify.types import WindowFeatures
from ioaz.device import DeviceInfo
from ioaz.realisation import Realisation

# mq-deadline's defaults (block/mq-deadline.c, also Carroll Table 2.2): reads expire after 500 ms,
# writes after 5 s. The rule keeps their 1:10 ratio when it scales them.
DEADLINE_READ_EXPIRE_MS = 500
DEADLINE_WRITE_TO_READ = 10
# Carroll 5.1.1: deadline's throughput starts to fall once the average latency reaches about half
# of read_expire (250 ms of 500 ms) and it has degenerated to FIFO when latency equals read_expire
# (500 ms). Keeping read_expire at twice the observed p99 keeps the device below that knee; p99
# rather than the mean makes the margin hold for the slow tail too.
EXPIRE_PER_P99 = 2.0
DEADLINE_READ_EXPIRE_MAX_MS = 30_000
# Carroll 5.4: over all RAID configurations a controller queue depth of 32 was best on average
# (3.78 TPS against 3.73 at 16 and 3.59 at 64); 6.2: slightly too deep costs little, too shallow
# costs much.
RAID_QUEUE_DEPTH = 32
# A window is "random" below this share of sequential requests (same threshold as classify's
# default split; the rule only needs to know random from sequential).
RANDOM_SEQ_RATIO = 0.5
# The settings of `writeback_throttling` in the daemon's config: `auto` turns the kernel's
# writeback throttling off on rotating disks unless the goal is latency; `kernel` leaves it
# as the kernel sets it (on under mq-deadline, kyber and ioaz's elevators, off under bfq).
WRITEBACK_THROTTLING = ("auto", "kernel")


@dataclass
class Tuning:
    knobs: dict[str, Value] = field(default_factory=dict)
    queue: QueueSettings = field(default_factory=QueueSettings)
    reasons: list[str] = field(default_factory=list)


def deadline_expiries(p99_latency_s: float | None,
                      floor_ms: int = DEADLINE_READ_EXPIRE_MS,
                      ceiling_ms: int = DEADLINE_READ_EXPIRE_MAX_MS) -> dict[str, int]:
    """mq-deadline read_expire/write_expire scaled to the observed p99 latency.

    Carroll 5.1.1 and 6.4: static expiries make deadline "avalanche" into FIFO once requests wait
    longer than read_expire, because then nearly every request is expired and served in arrival
    order; 6.4 proposes scaling the expiries with the latency. We set read_expire to twice the p99
    (see EXPIRE_PER_P99), never below `floor_ms` (the kernel default: the rule only loosens
    deadlines under load, tightening them is a separate choice the configuration can make by
    lowering the floor) and never above `ceiling_ms`. write_expire keeps the default 1:10 ratio.
    No latency measured (None, idle window): no opinion, {}.
    """
    if p99_latency_s is None or not math.isfinite(p99_latency_s) or p99_latency_s < 0:
        return {}
    read_ms = math.ceil(p99_latency_s * 1000.0 * EXPIRE_PER_P99)
    read_ms = min(max(read_ms, floor_ms), ceiling_ms)
    return {"read_expire": read_ms, "write_expire": read_ms * DEADLINE_WRITE_TO_READ}


def is_random(features: WindowFeatures) -> bool | None:
    """Random or sequential, from the class if classify gave one, else from seq_ratio."""
    if features.workload_class is not None:
        return features.workload_class.pattern == "random"
    if features.seq_ratio is None:
        return None
    return features.seq_ratio < RANDOM_SEQ_RATIO


def bfq_slice_idle(features: WindowFeatures, device: DeviceInfo) -> dict[str, int]:
    """bfq slice_idle=0 for random I/O on a device that queues commands.

    Carroll 5.1.1 and 6.4: CFQ idling for a process doing random I/O made it 2 to 15 times slower
    on RAID, and CFQ with slice_idle=0 beat the idling version in every benchmark; idling only pays
    when a process's next request is close by and the device serves one request at a time. bfq
    inherited CFQ's idle window and its slice_idle knob, so the finding carries over.
    Sequential I/O, or a device without command queueing: {} (keep idling, it is what bfq is for).
    """
    if is_random(features) and device.queues_commands:
        return {"slice_idle": 0}
    return {}


def raid_queue_depth(device: DeviceInfo) -> int | None:
    """32 as the starting queue depth of a RAID controller (Carroll 5.4, 6.2).

    Only for a device the configuration calls RAID and that has a device/queue_depth to set; the
    kernel's driver may clamp it (the actuator reports what took). Carroll found no model for the
    optimum, only that 32 was best on average and that too shallow hurts more than too deep.
    """
    if device.raid and device.queue_depth is not None:
        return RAID_QUEUE_DEPTH
    return None


def writeback_throttling(device: DeviceInfo, goal: str, mode: str = "auto") -> int | None:
    """queue/wbt_lat_usec for a disk ioazd manages: 0 (off) on a rotating disk unless the goal
    is latency, else None (the kernel's setting stays).

    Writeback throttling (blk-wbt) holds buffered write-back back while reads complete slower
    than its target, 75 ms on a rotating disk, and under a read load a rotating disk's reads
    are that slow: the writes wait in the page cache and are paid later, at an fsync, the dirty
    limit or a checkpoint, often all at once (docs/testbed.md, "Writeback throttling" and the
    thirty-sixth run). bfq turns throttling off for itself (Linux b5dc5d4d1f4f); off under
    every scheduler, ioazd's choice of scheduler is a choice of request order, not also of
    write-back policy. What it costs is the worst request (docs/limits.md), so for the latency
    goal throttling stays.
    """
    if mode != "auto" or goal == "latency" or not device.rotational:
        return None
    return 0


def kernel_writeback_throttling(scheduler: str) -> int:
    """queue/wbt_lat_usec as the kernel ties it to the scheduler on a fresh boot: bfq turns
    throttling off for itself, the others keep the kernel's target (-1 writes it). The kernel
    keeps that tie only until someone writes the file (ioazd does), so to reproduce it after
    that, write this with each scheduler."""
    return 0 if scheduler == "bfq" else -1


def tune(realisation: Realisation, features: WindowFeatures | None,
         device: DeviceInfo, queue: QueueSettings | None = None) -> Tuning:
    """The knobs and queue settings to apply with `realisation`, each rule's reason recorded.

    The realisation's own knobs (from policies.yaml) and the queue settings passed in are the
    administrator's word and override the rules.
    """
    queue = queue or QueueSettings()
    t = Tuning()
    if features is not None and features.p99_latency_s is not None \
            and realisation.scheduler == "mq-deadline":
        exp = deadline_expiries(features.p99_latency_s)
        if exp:
            t.knobs.update(exp)
            t.reasons.append(
                f"read_expire={exp['read_expire']} write_expire={exp['write_expire']}: "
                f"{EXPIRE_PER_P99:g}x p99 latency {features.p99_latency_s * 1000:.1f} ms, "
                f"so deadlines do not avalanche into FIFO (Carroll 5.1.1, 6.4)")
    if features is not None and realisation.scheduler == "bfq":
        idle = bfq_slice_idle(features, device)
        if idle:
            t.knobs.update(idle)
            t.reasons.append("slice_idle=0: random I/O on a device that queues commands "
                             "(Carroll 5.1.1, 6.4: idling on random I/O costs 2-15x on RAID)")
    depth = raid_queue_depth(device)
    qd = queue.queue_depth
    if qd is None and depth is not None:
        qd = depth
        t.reasons.append(f"queue_depth={depth}: RAID starting point (Carroll 5.4)")
    for k, v in realisation.knobs.items():
        if k in t.knobs and t.knobs[k] != v:
            t.reasons.append(f"{k}={v}: set by the policy, overrides the rule's {t.knobs[k]}")
        t.knobs[k] = v
    t.queue = replace(queue, queue_depth=qd)
    return t
