"""The testbed bench's simulator twin (lab/testbench/bench_sim.py) with the VM path put in front
of the model disk, to see how much of the simulator-kernel disagreement at queue depth 1 is the
path. A diagnostic, not part of ioaz: it subclasses the simulator's Device, which the compiled
build does not allow, so run it on the interpreted simulator:

    IOAZ_SIM_INTERPRETED=1 .venv/bin/python docs/reports/sim-path-2026-11-27/twin_path.py \
        --path-us 388 --path128-us 462 --credit-us 350 --host-us 20 [--cpu-us 0]

--path-us/--path128-us: what the guest waits beyond the model's time for a 4 KiB / 128 KiB
request (the device side: a reply leaves the model disk `credit` early, but never before its
request came, and reaches the guest a path later); --host-us: each process's completion-to-next-
request time (the engine's ProcSpec.host_us); --cpu-us: that time spent on one guest CPU shared
by every process (TCG runs the guest's vCPUs on one host thread), 0 for none.
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from heapq import heappush
from typing import Any

import ioaz.sim.workloads as W
from ioaz.lab.testbench.bench_sim import STAND_IN, twins
from ioaz.sim.device_base import Device
from ioaz.sim.devices import load_device
from ioaz.sim.engine import simulate
from ioaz.sim.request import SECTOR
from ioaz.sim.schedulers import blk_mq_nr_requests

STREAM_TUNED = {"svc_min_us": 1088, "svc_max_us": 24921, "svc_full_sectors": 878790440}


class PathInFront(Device):
    """A device whose completions reach the host max(model time - credit, issue) + path later."""

    def __init__(self, inner: Device, p4_s: float, p128_s: float, credit_s: float) -> None:
        super().__init__()
        self.inner, self.name, self.queue_depth = inner, inner.name, inner.queue_depth
        self.p4, self.p128, self.credit = p4_s, p128_s, credit_s

    def bind(self, at: Any, done: Any) -> None:
        super().bind(at, done)
        self.inner.bind(at, self._model_done)

    @property
    def capacity_sectors(self) -> int:
        return self.inner.capacity_sectors

    def estimate(self, distance: int, nsec: int = 8) -> float:
        return self.inner.estimate(distance, nsec)

    def submit(self, rq: Any, now: float) -> None:
        self.inflight += 1
        self.inner.submit(rq, now)

    def _model_done(self, rq: Any, t: float) -> None:
        path = self.p4 + (self.p128 - self.p4) * (rq.nsec * SECTOR - 4096) / (124 * 1024)
        self._at(max(t - self.credit, rq.issue) + path, self._reach_host, rq)

    def _reach_host(self, t: float, rq: Any) -> None:
        self.inflight -= 1
        self._done(rq, t)


def share_one_cpu(cpu_s: float) -> None:
    """Each process's turn-around queues for one CPU shared by the whole simulation."""
    plain = W.Process.complete
    state: dict[str, Any] = {}

    def complete(self: Any, rq: Any, now: float) -> None:
        if self.stopped or self.spec.count is not None:
            return plain(self, rq, now)
        self.outstanding -= 1
        self.done += 1
        self.bytes += rq.nsec * SECTOR
        lat = now - rq.submit
        self.lat_sum += lat
        self.lat_max = max(self.lat_max, lat)
        if state.get("sim") is not self.sim:
            state["sim"], state["free"] = self.sim, 0.0
        state["free"] = max(now, state["free"]) + cpu_s
        self.sim.seq += 1
        heappush(self.sim.heap, (state["free"], self.sim.seq, self.issue, None))

    W.Process.complete = complete  # type: ignore[method-assign]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--path-us", type=float, default=0.0)
    p.add_argument("--path128-us", type=float, default=0.0)
    p.add_argument("--credit-us", type=float, default=0.0)
    p.add_argument("--host-us", type=float, default=20.0)
    p.add_argument("--cpu-us", type=float, default=0.0)
    a = p.parse_args()
    if a.cpu_us > 0:
        share_one_cpu(a.cpu_us / 1e6)
    for name, wl in twins(15, 10).items():
        wl = W.Workload(wl.name, [replace(ph, procs=[replace(pr, host_us=a.host_us)
                                                     for pr in ph.procs]) for ph in wl.phases])
        mb: dict[str, float] = {}
        for s in ("mq-deadline", "bfq", "stream", "stream-tuned"):
            dev: Device = load_device("wd500", queue_depth=1)
            if a.path_us > 0:
                dev = PathInFront(dev, a.path_us / 1e6, a.path128_us / 1e6, a.credit_us / 1e6)
            mb[s] = simulate(dev, STAND_IN.get(s, "stream-vr"), wl,
                             tunables=STREAM_TUNED if s == "stream-tuned" else {},
                             nr_requests=blk_mq_nr_requests(32)).throughput_mb_s
        best = max(mb.values())
        print(f"{name:20s} " + "  ".join(f"{s} {v:6.2f} ({v / best:.2f})" for s, v in mb.items()))


if __name__ == "__main__":
    main()
