"""Calibration on a simulator device model: every workload of the grid under every candidate
policy, features from the simulator's windows (the probe's meaning), results per process."""
from __future__ import annotations

import statistics
from typing import Any

from ..classify.classes import Thresholds
from ..classify.horizon import fill_class_processes
from ..classify.types import WindowFeatures
from ..sim.devices import Device, load_device
from ..sim.engine import simulate
from ..sim.schedulers import blk_mq_nr_requests
from ..sim.workloads import Phase, ProcSpec, Workload
from .dataset import CLASS_FEATURES, FEATURES, Row
from .grid import WorkSpec

# Every policy of decision_matrices/policies.yaml the simulator implements, and its scheduler
# there (the papers' fcfs was 2.6's noop, as today's none is). Carroll's strict fifo is left out:
# a baseline that never merges, not a choice to make for a workload.
SIM_CANDIDATES: dict[str, str] = {
    "fcfs": "noop", "none": "noop", "deadline": "deadline", "anticipatory": "anticipatory",
    "cfq": "cfq", "vr": "vr", "sstf": "sstf", "scan": "scan", "stream": "stream",
    "kyber": "kyber",
}


def sim_workload(w: WorkSpec, seconds: float, host_us: float | None = None) -> Workload:
    """The workload's processes, all started at once and measured from the start: a
    staggered or warmed-up workload (stagger_ms, warmup_s) runs as if neither, because no
    scheduler of the simulator treats a queue by when it started (bfq's stable merging and
    weight raising, which those are there for). The simulator has no page cache: a buffered
    writer runs as its write-back writers do (ioaz_category: asynchronous, 8 in flight), a
    cached reader as a synchronous reader of its request size (no read-ahead). Nor a file
    system: a workload on files runs on the raw device's layout (file_gb). `host_us` is each
    process's time from a completion to its next request (ProcSpec's default when None).
    The kernel's runs are O_DIRECT but for buffered processes, so the elevators see their
    requests as synchronous at any depth (ProcSpec.direct)."""
    extra: dict[str, Any] = {} if host_us is None else {"host_us": host_us}
    procs = []
    for i in range(w.nproc):
        depth = max(w.depth, 8) if w.proc_buffered(i) else w.depth
        procs.append(ProcSpec(name=f"{w.id}-{i}", op=w.proc_op(i), read_fraction=0.7,
                              pattern=w.pattern, size_kb=w.size_kb, sync=depth == 1,
                              direct=not w.proc_buffered(i), depth=depth,
                              think_ms=w.think_ms, region_gb=w.file_gb(i),
                              span_gb=w.span_gb, **extra))
    return Workload(w.id, [Phase(seconds, procs, name=w.id)])


def summarize_windows(windows: list[WindowFeatures]) -> dict[str, float | None]:
    """One value per feature for a run: the median over its windows, the first one left out
    (it holds the start-up transient) when there are more than two. Also the class's process
    count over the horizon and the reads' depth (CLASS_FEATURES), which ioaz's classifier
    reads, not a model."""
    fill_class_processes(windows, Thresholds())
    ws = windows[1:] if len(windows) > 2 else windows
    # windows where nothing completed say nothing about the workload (a stalled scheduler:
    # the sim's kyber on one 8-deep sequential reader completes 16 requests, then none)
    ws = [w for w in ws if w.requests > 0] or [w for w in windows if w.requests > 0] or ws
    out: dict[str, float | None] = {}
    for name in FEATURES + CLASS_FEATURES:
        vals = [getattr(w, name) for w in ws]
        vals = [float(v) for v in vals if v is not None]
        out[name] = statistics.median(vals) if vals else None
    return out


def run_one(device_model: str, w: WorkSpec, candidate: str, seconds: float, rep: int,
            window_s: float, device: Device | None = None,
            queue_depth: int | None = None, blk_mq: bool = False,
            tags: int | None = None, scheduler: str | None = None,
            tunables: dict[str, Any] | None = None, host_us: float | None = None) -> Row:
    """One simulated run; queue_depth overrides the model's command queue (the testbed
    serves the same model at the guest's NCQ depth, 32); blk_mq holds the queue to today's
    request limits (schedulers.blk_mq_nr_requests), fcfs being `none`, sized for `tags`
    command slots (default the drive's queue depth: the kernel sizes them when the disk
    is probed, and a depth set lower later, as the testbed's 1, leaves them as they were).
    `scheduler` is the simulator's scheduler to run for the candidate policy, in place of
    SIM_CANDIDATES's (the bench's stand-ins for the kernel's: bfq for anticipatory), with
    `tunables` over its preset ones; `host_us` as sim_workload's."""
    sched = scheduler or SIM_CANDIDATES[candidate]
    dev = device or load_device(device_model, **(
        {"queue_depth": queue_depth} if queue_depth else {}))
    res = simulate(dev, sched, sim_workload(w, seconds, host_us), seed=1 + rep,
                   window_s=window_s, device_name="sim0", tunables=tunables,
                   nr_requests=blk_mq_nr_requests(tags or dev.queue_depth) if blk_mq else None)
    feats = summarize_windows(res.windows)
    return Row(workload=w.id, workload_class=w.ioaz_class, candidate=candidate,
               policy=candidate, scheduler=sched,
               knobs=",".join(f"{k}={v}" for k, v in (tunables or {}).items()), rep=rep,
               seconds=res.sim_s, features=feats,
               throughput_mb_s=res.throughput_mb_s, proc_min_mb_s=res.proc_min_mb_s,
               proc_max_mb_s=res.proc_max_mb_s, proc_mean_mb_s=res.proc_mean_mb_s,
               p50_latency_s=res.p50_latency_s, p99_latency_s=res.p99_latency_s,
               requests=res.requests)


def model_info(device_model: str) -> dict[str, Any]:
    d = load_device(device_model)
    return {"name": d.name, "capacity_sectors": d.capacity_sectors}
