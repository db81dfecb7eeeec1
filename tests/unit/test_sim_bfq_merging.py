"""The simulator's bfq: cfq with the kernel bfq's stable merging (sim/schedulers/cfq.py). On the
testbed's kernel bfq merged par-read's four readers into one queue 0.6 s after they started
(docs/testbed.md, fifty-seventh run); the model must do the same, and leave alone the cases in
which the kernel does not merge."""
from __future__ import annotations

from ioaz.sim.devices import load_device
from ioaz.sim.engine import Simulator
from ioaz.sim.request import Request
from ioaz.sim.schedulers import make_scheduler
from ioaz.sim.workloads import par_read

GB = 2 * 1024 * 1024   # sectors


def rq(pid: int, at_gb: float, t: float, n: int = 0) -> Request:
    return Request(f"{pid}-{n}", pid, int(at_gb * GB) + 8 * n, 8, False, True, t)


def started(sched_name: str, starts: list[float], device: str = "wd500",
            check_at: float = 0.7) -> dict[int, object]:
    """Processes 1, 2, ... submit their first read at `starts`, and another at `check_at`
    (none dispatched, so every queue stays busy): who was merged into whom."""
    sched = make_scheduler(sched_name, load_device(device))
    for pid, t in enumerate(starts, 1):
        sched.add(rq(pid, 50 * pid, t), t)
    for pid, _ in enumerate(starts, 1):
        sched.add(rq(pid, 50 * pid, check_at, 1), check_at)
    return dict(sched.owner)


def test_processes_that_start_together_share_one_queue_for_good() -> None:
    assert started("bfq", [0.0, 0.001, 0.002, 0.003]) == {2: 1, 3: 1, 4: 1}
    assert started("cfq", [0.0, 0.001, 0.002, 0.003]) == {}


def test_not_before_600_ms() -> None:
    assert started("bfq", [0.0, 0.001, 0.002, 0.003], check_at=0.5) == {}


def test_a_process_that_starts_past_the_burst_interval_is_not_marked() -> None:
    """S's readers set before the run: another queue 0.3 s before them, which bfq keeps as its
    last created (under 600 ms old), and the readers too late to be marked with it."""
    assert started("bfq", [0.0, 0.3, 0.301, 0.302], check_at=1.0) == {}


def test_a_large_burst_is_not_raised_so_idling_keeps_the_queues_apart() -> None:
    """8 or more queues created together get no weight-raising (bfq_add_to_burst); on a disk
    without command queueing idling then raises throughput with no raised queue busy, and bfq
    merges none."""
    assert started("bfq", [0.001 * i for i in range(10)]) == {}
    assert started("bfq", [0.001 * i for i in range(8)]) == {}
    assert len(started("bfq", [0.001 * i for i in range(7)])) == 6


def test_flash_with_queueing_merges_at_once() -> None:
    assert started("bfq", [0.0, 0.001], device="ssd", check_at=0.01) == {2: 1}


def test_par_read_under_bfq_reads_as_one_sorted_queue() -> None:
    """The readers merged, bfq idles for none of them: par-read moves about what deadline
    moves (its first 0.6 s apart aside), far below cfq's, which idles for each reader."""
    mb = {}
    for s in ("bfq", "cfq", "deadline"):
        sim = Simulator(load_device("wd500"), s, par_read(10.0))
        mb[s] = sim.run().throughput_mb_s
        if s == "bfq":
            assert len(set(sim.sched.owner.values())) == 1 and len(sim.sched.owner) == 3
    assert mb["bfq"] < 0.6 * mb["cfq"], mb
    assert abs(mb["bfq"] / mb["deadline"] - 1) < 0.25, mb
