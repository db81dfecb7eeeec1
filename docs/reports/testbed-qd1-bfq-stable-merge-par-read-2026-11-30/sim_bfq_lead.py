"""Where the simulator's merged bfq gains its 8-12% over deadline on par-read (docs/testbed.md,
fifty-seventh run): when bfq waits for a reader, in what order it serves the four readers
once they share a queue, and how often the drive model's read cache misses.

    PYTHONPATH=agent python3 sim_bfq_lead.py > sim_bfq_lead.txt
"""
from __future__ import annotations

import collections

from ioaz.sim.devices import load_device
from ioaz.sim.engine import Simulator
from ioaz.sim.schedulers import blk_mq_nr_requests
from ioaz.sim.workloads import par_read

SETTLED_S = 5.0   # after the merge (0.6 s) and its first seconds


def run(scheduler: str, tunables: dict[str, float] | None, seconds: float) -> str:
    # 32 tags as in the guest (bench.guest_tags): the bench's simulator column
    sim = Simulator(load_device("wd500", queue_depth=1), scheduler, par_read(seconds),
                    nr_requests=blk_mq_nr_requests(32),
                    **({"tunables": tunables} if tunables else {}))
    waits: collections.Counter[int] = collections.Counter()
    order: list[int] = []
    inner = sim.sched.dispatch

    def dispatch(now: float):  # type: ignore[no-untyped-def]
        r = inner(now)
        if isinstance(r, float):
            waits[int(now)] += 1          # the scheduler holds the disk idle until r
        elif r is not None and now > SETTLED_S:
            order.append(r.pid)
        return r

    sim.sched.dispatch = dispatch  # type: ignore[method-assign]
    sim.complete_log = []
    res = sim.run()
    settled = [r for r in sim.complete_log if r.issue > SETTLED_S]
    misses = sum(1 for r in settled if r.complete - r.issue > 0.001)
    turns = collections.Counter(tuple(order[i:i + 4]) for i in range(0, len(order) - 4, 4))
    return (f"{scheduler} {tunables or ''} {seconds:.0f} s: {res.throughput_mb_s:.2f} MB/s; "
            f"waits by second {dict(sorted(waits.items()))}; after {SETTLED_S:.0f} s "
            f"{len(settled)} requests, cache misses {misses} ({misses / len(settled):.2%}); "
            f"most common order of four {turns.most_common(1)}")


if __name__ == "__main__":
    for seconds in (20.0, 120.0):
        for sched, tun in (("deadline", None), ("bfq", None), ("bfq", {"slice_idle_ms": 0.0}),
                           ("bfq", {"stable_merge_after_ms": 1.0})):
            print(run(sched, tun, seconds), flush=True)
