"""Scheduler invariants in the simulator: every request is served exactly once, in one piece or
merged, and the deadlines a scheduler promises are kept; plus each scheduler's signature
behaviour."""
from __future__ import annotations

import random

import pytest
from ioaz.sim.devices import FixedDevice, FixedParams, load_device
from ioaz.sim.engine import Simulator
from ioaz.sim.request import Request
from ioaz.sim.schedulers import SCHEDULERS, make_scheduler
from ioaz.sim.workloads import Phase, ProcSpec, Workload

ALL = sorted(SCHEDULERS)


def mixed_workload(count: int = 150) -> Workload:
    procs = [
        ProcSpec(name="seqr", op="read", pattern="seq", size_kb=4, count=count, region_gb=1),
        ProcSpec(name="randr", op="read", pattern="rand", size_kb=4, count=count, region_gb=20,
                 span_gb=50, think_ms=1),
        ProcSpec(name="seqw", op="write", pattern="seq", size_kb=4, sync=False, depth=8,
                 count=count, region_gb=100),
        ProcSpec(name="mix", op="mixed", pattern="rand", size_kb=16, sync=False, depth=4,
                 count=count, region_gb=5, span_gb=2),
    ]
    return Workload("mixed", [Phase(None, procs)])


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("device", ["wd500", "raid5-carroll"])
def test_every_request_served_exactly_once(name: str, device: str) -> None:
    sim = Simulator(load_device(device), name, mixed_workload(), window_s=0.5)
    sim.complete_log = []
    res = sim.run(max_s=600)
    assert sim.finished, f"{name} on {device} did not finish the workload"
    ids = [(rq.pid, rq.id) for rq in sim.complete_log]
    assert len(ids) == 4 * 150 == len(set(ids))
    assert res.requests == 600
    assert all(rq.complete >= rq.submit or rq.merged is None for rq in sim.complete_log)
    assert len(sim.sched) == 0 and sim.device.inflight == 0


def starvation_run(scheduler: str, **tunables: object) -> tuple[float, float]:
    """A far request z at t=0 against a sync reader that keeps the head busy right next to
    where it is: returns (z's wait before dispatch, the promised expiry)."""
    dev = FixedDevice(FixedParams(service_ms=1.0))
    hog = ProcSpec(name="hog", op="read", pattern="seq", size_kb=4, sync=False, depth=2,
                   region_gb=0, span_gb=1, count=3000)
    sim = Simulator(dev, scheduler, Workload("hog", [Phase(None, [hog])]), tunables=dict(tunables))
    z = Request("z", 1, dev.capacity_sectors - 8, 8, False, True, 0.0005)
    sim.inject(z)
    sim.run(max_s=3.5)
    assert z.issue >= 0, f"{scheduler}: z never dispatched"
    return z.issue - z.submit, 0.0


def test_sstf_without_deadlines_starves_a_far_request() -> None:
    """The check below can fail: with deadlines off, V(1) serves the hog until it is done."""
    wait, _ = starvation_run("vr", rev_penalty=1, deadlines=0)
    assert wait > 2.5


@pytest.mark.parametrize("name,tun,expire_s", [
    ("vr", {"rev_penalty": 1, "sync_expire_ms": 100.0, "fifo_batch": 16}, 0.100),
    ("deadline", {"read_expire_ms": 100.0, "fifo_batch": 16}, 0.100),
    ("stream", {"read_expire_ms": 100.0, "fifo_batch": 16}, 0.100),
    # AS looks at expiries of the batch's own direction: a sync request waits out the running
    # async batch (write_batch_expire 125 ms) first
    ("anticipatory", {"read_expire_ms": 100.0}, 0.125),
    ("cfq", {"fifo_expire_sync_ms": 100.0}, 0.100),
])
def test_deadline_honoured_within_one_batch(name: str, tun: dict, expire_s: float) -> None:
    wait, _ = starvation_run(name, **tun)
    # expiry is looked at between batches: at most fifo_batch (16) more 1 ms services, plus
    # the running slice for cfq (slice_sync 100 ms: the far request waits its queue's turn)
    slack = 0.016 + (0.100 if name == "cfq" else 0.0) + 0.002
    assert wait <= expire_s + slack, f"{name}: far request waited {wait * 1e3:.1f} ms"


def test_fifo_keeps_arrival_order_and_never_merges() -> None:
    dev = FixedDevice(FixedParams(service_ms=1.0))
    sim = Simulator(dev, "fifo", Workload("x", [Phase(None, [])]))
    sim.issue_log = []
    rng = random.Random(3)
    reqs = [Request(i, 1, rng.randrange(0, 10**6) * 8, 8, False, True, 0.0001 * i)
            for i in range(200)]
    reqs += [Request("adj", 1, reqs[-1].sector + 8, 8, False, True, 0.0201)]
    for r in reqs:
        sim.inject(r)
    sim.run(max_s=1.0)
    assert [r.id for r in sim.issue_log] == [r.id for r in reqs]
    assert sim.total_merges == 0


def test_noop_and_deadline_merge_contiguous_async_writes() -> None:
    for name in ("noop", "deadline", "vr"):
        w = ProcSpec(name="w", op="write", pattern="seq", size_kb=4, sync=False, depth=32,
                     count=2000)
        sim = Simulator(load_device("wd500"), name, Workload("w", [Phase(None, [w])]))
        res = sim.run(max_s=60)
        assert res.merges > 500, name
        assert res.requests == 2000


def test_vr_r1_and_r0_are_sstf_and_scan() -> None:
    s1 = make_scheduler("sstf")
    s0 = make_scheduler("scan")
    assert s1.t["rev_penalty"] == 1 and s0.t["rev_penalty"] == 0


def test_cfq_idles_for_a_thinking_process_but_not_with_slice_idle_0() -> None:
    """Two sync sequential readers far apart: CFQ's idling keeps each on its own region for a
    slice (few long seeks), slice_idle=0 makes it alternate every request."""
    procs = [ProcSpec(name=f"r{i}", op="read", pattern="seq", size_kb=4, region_gb=10 + 200 * i,
                      think_ms=0.5)
             for i in range(2)]
    wl = Workload("two", [Phase(2.0, procs)])
    idle = Simulator(load_device("carroll-hp72", cache_segments=0), "cfq", wl).run()
    no_idle = Simulator(load_device("carroll-hp72", cache_segments=0), "cfq", wl,
                        tunables={"slice_idle_ms": 0.0}).run()
    assert idle.throughput_mb_s > 3 * no_idle.throughput_mb_s


def test_anticipatory_waits_for_the_same_process() -> None:
    procs = [ProcSpec(name=f"r{i}", op="read", pattern="seq", size_kb=4, region_gb=10 + 200 * i)
             for i in range(2)]
    wl = Workload("two", [Phase(2.0, procs)])
    dev = "carroll-hp72"
    as_ = Simulator(load_device(dev, cache_segments=0), "anticipatory", wl).run()
    dl = Simulator(load_device(dev, cache_segments=0), "deadline", wl).run()
    off = Simulator(load_device(dev, cache_segments=0), "anticipatory", wl,
                    tunables={"antic_expire_ms": 0.0}).run()
    assert as_.throughput_mb_s > 3 * dl.throughput_mb_s
    assert off.throughput_mb_s < as_.throughput_mb_s / 3


def test_unknown_scheduler_and_tunable_fail() -> None:
    with pytest.raises(ValueError, match="unknown scheduler"):
        make_scheduler("elevator9000")
    with pytest.raises(ValueError, match="unknown tunable"):
        make_scheduler("vr", rev_penaltyy=3)


def test_stream_vr_curve_is_the_kernel_modules() -> None:
    """kmod/ioaz_stream_detect.c: min + (max-min) * isqrt((d << 20) / full) / 1024 microseconds,
    backward seeks at backseek_penalty percent. A quarter of full: isqrt(2**18) = 512, so
    100 + 11900 * 512 / 1024 = 6050 us; backward 6050 * 1.5 = 9075 us."""
    s = make_scheduler("stream-vr")
    full = 1 << 31
    assert s.service(1000, 1000) == pytest.approx(100e-6)
    assert s.service(0, full // 4) == pytest.approx(6050e-6)
    assert s.service(full // 4, 0) == pytest.approx(9075e-6)
    assert s.service(0, 2 * full) == pytest.approx(12000e-6)


def test_stream_idles_for_an_established_stream_only() -> None:
    """Two sync sequential readers far apart on a fixed-latency device: once a stream of 4 is
    established the scheduler waits for its child instead of alternating."""
    procs = [ProcSpec(name=f"r{i}", op="read", pattern="seq", size_kb=4, region_gb=10 + 200 * i,
                      count=200)
             for i in range(2)]
    wl = Workload("two", [Phase(None, procs)])
    sim = Simulator(load_device("carroll-hp72", cache_segments=0), "stream", wl)
    sim.issue_log = []
    sim.run(max_s=60)
    pids = [r.pid for r in sim.issue_log]
    switches = sum(1 for a, b in zip(pids, pids[1:], strict=False) if a != b)
    assert switches < 40                       # long runs of one reader, not 400 alternations
    assert sim.sched.waits_paid > 300          # type: ignore[attr-defined]
    off = Simulator(load_device("carroll-hp72", cache_segments=0), "stream", wl,
                    tunables={"stream_idle": 0})
    off.issue_log = []
    off.run(max_s=60)
    pids = [r.pid for r in off.issue_log]
    assert sum(1 for a, b in zip(pids, pids[1:], strict=False) if a != b) > 300


def test_kyber_throttles_writes_when_reads_miss_their_target() -> None:
    """A sync reader against 64-deep async writes on the SSD: kyber cuts the write depth so
    the reads' latency falls, noop does not."""
    procs = [ProcSpec(name="r", op="read", pattern="rand", size_kb=4, region_gb=1),
             ProcSpec(name="w", op="write", pattern="rand", size_kb=256, sync=False, depth=64,
                      region_gb=100, span_gb=50)]
    wl = Workload("rw", [Phase(2.0, procs)])
    k = Simulator(load_device("ssd"), "kyber", wl)
    res_k = k.run()
    res_n = Simulator(load_device("ssd"), "noop", wl).run()
    assert k.sched.depth[1] < 128  # type: ignore[attr-defined]
    read_k = next(v for n, v in res_k.proc_mb_s.items() if n.endswith(":r"))
    read_n = next(v for n, v in res_n.proc_mb_s.items() if n.endswith(":r"))
    assert read_k > 1.5 * read_n


def test_deadline_batches_and_writes_starved() -> None:
    """mq-deadline: batches of fifo_batch in one direction, in ascending sector order, and a
    write batch after writes_starved read batches (Carroll Table 2.2)."""
    dev = FixedDevice(FixedParams(service_ms=1.0))
    sim = Simulator(dev, "deadline", Workload("x", [Phase(None, [])]),
                    tunables={"fifo_batch": 4, "writes_starved": 2})
    sim.issue_log = []
    # r0 arrives first and starts batch 1 alone on the disk (no write pending yet: starved
    # stays 0); then two more read batches (starved 1, 2), a write batch, two read batches, a
    # write batch, and the rest of the writes
    for i in range(20):
        sim.inject(Request(f"r{i}", 1, 1_000_000 + (i * 7 % 20) * 1000, 8, False, True, 0.0))
    for i in range(12):
        sim.inject(Request(f"w{i}", 2, 2_000_000 + i * 1000, 8, True, False, 0.0))
    sim.run(max_s=1.0)
    kinds = "".join(str(r.id)[0] for r in sim.issue_log)
    assert kinds == "r" * 12 + "w" * 4 + "r" * 8 + "w" * 8
    # within a batch the elevator goes up; a new batch starts at the next sector above the
    # last one, or wraps to the oldest request (the FIFO head)
    second = [r.sector for r in sim.issue_log[4:8]]
    assert second == sorted(second)
