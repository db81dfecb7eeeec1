"""The sampled probe's pieces without a kernel: the plan's checks, the periods the sampler runs
(against a recording stand-in for the BPF object), and the exact counts put into a sample.
The real thing against fio: tests/integration/test_probe_fio.py and test_probe_sampled.py."""
from __future__ import annotations

import threading
import time

import pytest
from ioaz.probe.bpf_source import with_exact_counts
from ioaz.probe.diskstats_source import parse_diskstats
from ioaz.probe.sampler import BIO_SIDE, U64_MAX, SamplePlan, Sampler
from ioaz.probe.snapshot import DeviceSnapshot


class FakeObject:
    """Records attach/detach and global stores, as BpfObject would apply them."""

    def __init__(self, fail_after: int | None = None, failures: int = 1 << 30):
        self.failures = failures   # how many attaches fail from fail_after on
        self.attached: set[str] = {"on_rq_complete"}
        self.globals: dict[tuple[str, int], int] = {("counting", 0): 1}
        self.log: list[tuple] = []
        self.lock = threading.Lock()
        self.fail_after = fail_after

    def program_names(self) -> list[str]:
        return ["on_rq_complete", "on_getrq", *BIO_SIDE]


    def attach(self, names) -> None:
        with self.lock:
            if self.fail_after is not None and len(self.log) >= self.fail_after \
                    and self.failures > 0:
                self.failures -= 1
                raise OSError("attach failed")
            for n in names:
                if n not in self.attached:
                    self.attached.add(n)
                    self.log.append(("attach", n))

    def detach(self, names) -> None:
        with self.lock:
            for n in names:
                if n in self.attached:
                    self.attached.discard(n)
                    self.log.append(("detach", n))

    def set_global(self, name: str, value: int, index: int = 0) -> None:
        with self.lock:
            self.globals[(name, index)] = value
            self.log.append(("set", name, index, value))


class FakeSlots:
    """Every sampled period's requests done at once (a fast device), or never (a stuck one)."""

    def __init__(self, drains: bool = True):
        self.drains = drains
        self.resets: list[int] = []

    def reset(self, slot: int) -> None:
        self.resets.append(slot)

    def drained(self, slot: int) -> bool:
        return self.drains


def test_plan_checks_its_numbers():
    with pytest.raises(ValueError, match="fraction"):
        SamplePlan(0)
    with pytest.raises(ValueError, match="fraction"):
        SamplePlan(1.5)
    with pytest.raises(ValueError, match="does not fit"):
        SamplePlan(0.99, period_s=1.0, warmup_s=0.05)
    assert not SamplePlan(1.0).sampled
    short = SamplePlan.per_window(0.5, 0.1)
    assert short.warmup_s == pytest.approx(0.025) and short.counted_s == pytest.approx(0.05)


def run_sampler(obj: FakeObject, plan: SamplePlan, seconds: float, rate: float,
                slots: FakeSlots | None = None) -> Sampler:
    """Runs a sampler for `seconds` with the disks completing `rate` requests a second."""
    t0 = time.monotonic()
    s = Sampler(obj, plan,  # type: ignore[arg-type]
                requests=lambda: int((time.monotonic() - t0) * rate),
                slots=slots or FakeSlots()).start()  # type: ignore[arg-type]
    time.sleep(seconds)
    s.stop()
    return s


def test_busy_disks_are_sampled_each_period():
    obj = FakeObject()
    plan = SamplePlan(0.3, period_s=0.2, warmup_s=0.04, full_below_iops=1000)
    s = run_sampler(obj, plan, 1.05, rate=1e6)
    assert s.error is None
    assert 4 <= s.periods <= 6 and s.full_periods == 0
    attaches = [e for e in obj.log if e == ("attach", "on_bio_queue")]
    detaches = [e for e in obj.log if e == ("detach", "on_bio_queue")]
    assert len(attaches) == s.periods and len(detaches) >= s.periods - 1
    # Counting opens only while the bio-side programs are attached, once a period.
    state: set[str] = set()
    opened = 0
    for e in obj.log:
        if e[0] == "attach":
            state.add(e[1])
        elif e[0] == "detach":
            state.discard(e[1])
        elif e[:2] == ("set", "counting") and e[3] == 1:
            assert "on_bio_queue" in state, "counting with the bio program detached"
            opened += 1
    assert opened == s.periods
    # Latency windows alternate between the two slots and are closed with a real time.
    closes = [e for e in obj.log if e[:2] == ("set", "lat_until") and e[3] not in (0, U64_MAX)]
    assert {e[2] for e in closes} == {0, 1}
    assert obj.globals[("counting", 0)] == 0
    # Once both slots' requests are done, block_rq_complete rests until the next period,
    # from the first period on (the slot before it holds nothing); only the period stop()
    # cut short may not have rested.
    rests = [e for e in obj.log if e == ("detach", "on_rq_complete")]
    assert s.drained_periods == len(rests) >= s.periods - 1
    first_rest = obj.log.index(("detach", "on_rq_complete"))
    assert sum(e == ("detach", "on_bio_queue") for e in obj.log[:first_rest]) == 1
    assert ("attach", "on_getrq") in obj.log


def test_requests_in_flight_keep_the_completion_program():
    obj = FakeObject()
    plan = SamplePlan(0.3, period_s=0.2, warmup_s=0.04, full_below_iops=1000)
    s = run_sampler(obj, plan, 0.85, rate=1e6, slots=FakeSlots(drains=False))
    assert s.error is None and s.periods >= 3
    assert s.drained_periods == 0 and ("detach", "on_rq_complete") not in obj.log


def test_quiet_disks_are_seen_whole():
    obj = FakeObject()
    plan = SamplePlan(0.3, period_s=0.2, warmup_s=0.04, full_below_iops=1000)
    s = run_sampler(obj, plan, 1.05, rate=10)
    assert s.error is None
    # The first period is sampled (no rate yet); after that every one is full, so the
    # programs stay attached and the counting never stops in between.
    assert s.full_periods >= s.periods - 2 >= 2
    bio_events = [e for e in obj.log if e[0] in ("attach", "detach") and e[1] == "on_bio_queue"]
    # Attached for the sampled first period, then once for all the full ones until stop().
    assert [e[0] for e in bio_events] == ["attach", "detach", "attach", "detach"], bio_events


def test_a_failing_sampler_falls_back_to_always_on():
    obj = FakeObject(fail_after=len(BIO_SIDE) + 8)
    s = run_sampler(obj, SamplePlan(0.3, period_s=0.1, warmup_s=0.02), 0.5, rate=1e6)
    assert s.error and "attach failed" in s.error
    assert obj.globals[("counting", 0)] == 1
    assert obj.globals[("lat_from", 0)] == 0 and obj.globals[("lat_until", 0)] == U64_MAX


DISKSTATS = """\
   7       0 loop0 100 2 800 50 40 1 320 20 0 70 75 0 0 0 0 0 0
   7       1 loop1 5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0
"""


def test_exact_counts_replace_the_sample():
    exact = parse_diskstats(DISKSTATS, 5_000)
    sampled = {"loop0": DeviceSnapshot(name="loop0", major=7, minor=0, t_ns=5_000, source="bpf",
                                       completed=[20, 8, 0, 0, 0],
                                       completed_bytes=[20 * 4096, 8 * 4096, 0, 0, 0],
                                       bios=30, bios_seq=12, procs={42: 30})}
    out = with_exact_counts(sampled, exact, {"loop0", "loop1", "sda"})
    assert set(out) == {"loop0", "loop1"}  # sda is not in diskstats: nothing to say
    a = out["loop0"]
    assert a.completed[:2] == [100, 40] and a.completed_bytes[:2] == [800 * 512, 320 * 512]
    assert a.time_in_queue_ms == 75
    assert a.lat_read_ns == 50 * 1_000_000   # the reads' part of it, by the same clock
    assert (a.bios, a.bios_seq, a.procs) == (30, 12, {42: 30})  # the sample's own
    b = out["loop1"]  # not sampled yet: counts, and empty sampled fields (not None)
    assert b.completed[0] == 5 and b.bios == 0 and b.procs == {} and b.source == "bpf"


def test_completed_requests_sums_the_whole_disks_reads_and_writes(tmp_path):
    """The sampler's rate: reads and writes completed of each disk /sys/block lists, once
    (a partition's are inside its disk's); a line it cannot read is named by file and line."""
    from fake_sysfs import FakeKernel
    from ioaz.probe.sampler import completed_requests

    kernel = FakeKernel(tmp_path / "sys")
    kernel.add_device("sda", dev="8:0", rotational=True)
    kernel.add_device("sdb", dev="8:16", rotational=True)
    stats = tmp_path / "diskstats"
    stats.write_text(
        "   7       0 loop0 5 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"     # not in /sys/block
        "   8       0 sda 100 3 800 40 50 2 400 50 0 90 90 7 0 9 0 4 1\n"
        "   8       1 sda1 99 0 790 0 49 0 390 0 0 0 0 0 0 0 0 0 0\n"
        "   8      16 sdb 20 0 160 5 1 0 8 1 0 6 6\n")                # a 4.18 kernel's line
    assert completed_requests(str(stats), kernel) == 150 + 21
    stats.write_text("   8       0 sda 100 3 800 40 fifty 2 400 50 0 90 90 0 0 0 0 0 0\n")
    with pytest.raises(ValueError, match=r"diskstats:1: unreadable line"):
        completed_requests(str(stats), kernel)


def test_requests_in_flight_are_counted_in_full_periods_only():
    """Counted only while every request is seen: the completion program attached before the
    count starts, the epoch odd while it runs and moved on before it stops (in_flight.py)."""
    obj = FakeObject()
    plan = SamplePlan(0.3, period_s=0.2, warmup_s=0.04, full_below_iops=1000)
    s = run_sampler(obj, plan, 1.05, rate=10)
    starts = [i for i, e in enumerate(obj.log) if e == ("set", "track_made", 0, 1)]
    assert len(starts) == 1, "counted from the first full period to stop(), without a break"
    before = obj.log[:starts[0]]
    for name in ("on_rq_complete", "on_getrq", "on_rq_merge"):
        assert name in obj.attached or ("detach", name) in obj.log[starts[0]:]
        assert ("attach", name) in before or name == "on_rq_complete", name
    assert obj.globals[("track_made", 0)] == 0 and s.made_epoch == 2, "stop() ends the count"
    busy = run_sampler(FakeObject(), plan, 0.65, rate=1e6)
    assert busy.made_epoch == 0, "sampled periods count no requests in flight"


def test_a_sampler_that_falls_back_counts_requests_in_flight_anew():
    obj = FakeObject(fail_after=len(BIO_SIDE) + 8, failures=1)
    s = run_sampler(obj, SamplePlan(0.3, period_s=0.1, warmup_s=0.02), 0.5, rate=1e6)
    assert s.error and obj.globals[("track_made", 0)] == 1
    assert s.made_epoch == 1 and {"on_getrq", "on_rq_merge"} <= obj.attached
    # a fallback that failed too counts nothing
    obj = FakeObject(fail_after=len(BIO_SIDE) + 8)
    s = run_sampler(obj, SamplePlan(0.3, period_s=0.1, warmup_s=0.02), 0.5, rate=1e6)
    assert s.error and obj.globals.get(("track_made", 0)) == 0 and s.made_epoch % 2 == 0
