"""The requests in flight from the probe's counters (agent/ioaz/probe/in_flight.py), and what
the class makes of them (classify/features.py, classes.py). The real thing on a real device:
tests/integration/test_probe_in_flight.py."""
from __future__ import annotations

from dataclasses import replace

from ioaz.classify.classes import bios_held_through, classify, depth_per_process, load_thresholds
from ioaz.classify.features import compute_features
from ioaz.probe.in_flight import U64, InFlight
from ioaz.probe.layout import split_dev_stats
from ioaz.probe.snapshot import DeviceSnapshot


def snap(t_s: float, raw: list[int] | None, minor: int = 0, **kw) -> DeviceSnapshot:
    return DeviceSnapshot(name="sda", major=8, minor=minor, t_ns=int(t_s * 1e9), source="bpf",
                          in_flight=None if raw is None else list(raw), **kw)


def counted(c: InFlight, t_s: float, raw: list[int] | None, epoch: object = 1,
            minor: int = 0) -> list[int] | None:
    s = snap(t_s, raw, minor)
    c.count({"sda": s}, epoch)
    return s.in_flight


def test_the_count_is_the_sum_less_the_least_read_in_the_horizon():
    c = InFlight(horizon_s=10)
    assert counted(c, 0, [5, 7]) is None, "nothing to count from at the first read"
    assert counted(c, 1, [9, 7]) == [4, 0]
    assert counted(c, 2, [5, 30]) == [0, 23]


def test_requests_in_flight_when_counting_began_read_low_until_the_disk_is_idle():
    # 6 reads in flight at the first read: their completions take the sum below it, and
    # from the first idle read the count is exact
    c = InFlight(horizon_s=10)
    counted(c, 0, [0, 0])
    assert counted(c, 1, [-2, 0]) == [0, 0]     # 4 of them still in flight: low, never high
    assert counted(c, 2, [-6, 0]) == [0, 0]     # idle
    assert counted(c, 3, [4, 0]) == [10, 0]     # exact from here on


def test_a_lost_completion_is_forgotten_after_the_horizon():
    c = InFlight(horizon_s=10)
    counted(c, 0, [0, 0])
    assert counted(c, 1, [0, 8]) == [0, 8]
    assert counted(c, 2, [0, 1]) == [0, 1], "idle, but one completion went uncounted"
    assert counted(c, 11, [0, 1]) == [0, 0], "the read before it has left the horizon"
    assert counted(c, 12, [0, 9]) == [0, 8]


def test_completions_the_kernel_counted_and_the_probe_missed_are_taken_off():
    c = InFlight(horizon_s=10)

    def read(t_s, raw, probe_done, kernel_done):
        s = snap(t_s, raw, completed=[probe_done[0], probe_done[1], 0, 0, 0])
        k = snap(t_s, None, completed=[kernel_done[0], kernel_done[1], 0, 0, 0])
        c.count({"sda": s}, 1, {"sda": k})
        return s.in_flight

    read(0, [0, 0], (100, 100), (130, 100))        # the kernel counted 30 reads before
    assert read(1, [0, 16], (100, 200), (130, 200)) == [0, 16]
    # 16 writes complete, the probe sees 13: three stay in its sum, the kernel says they went
    assert read(2, [0, 3], (100, 213), (130, 216)) == [0, 0]
    assert read(3, [0, 19], (100, 213), (130, 216)) == [0, 16]
    # 16 more made and 16 completed, one seen twice (the flush machinery): it cancels one
    # of the three missed, and the count stays right
    assert read(4, [0, 18], (100, 230), (130, 232)) == [0, 16]
    # seen twice with none missed, the probe's completions run ahead: the count reads low,
    # never taken up (as with queue/iostats 0, where the kernel counts none)
    c = InFlight(horizon_s=10)
    read(0, [0, 0], (0, 0), (0, 0))
    assert read(1, [0, 7], (0, 9), (0, 8)) == [0, 7]
    c = InFlight(horizon_s=10)
    read(0, [0, 0], (0, 0), (0, 0))
    assert read(1, [0, 7], (0, 9), (0, 0)) == [0, 7]


def test_a_device_made_again_under_the_same_number_counts_anew():
    # the probe's counters of 7:0 go on from the old loop0; the kernel's start again
    c = InFlight(horizon_s=10)

    def read(t_s, raw, probe_done, kernel_done):
        s = snap(t_s, raw, completed=[probe_done, 0, 0, 0, 0])
        c.count({"sda": s}, 1, {"sda": snap(t_s, None, completed=[kernel_done, 0, 0, 0, 0])})
        return s.in_flight

    read(0, [0, 0], 100, 100)
    assert read(1, [0, 0], 200, 230) == [0, 0]     # 30 missed and taken off
    assert read(2, [0, 0], 210, 10) is None, "made again: a new base"
    assert read(3, [4, 0], 220, 20) == [4, 0], "the old device's misses are not the new one's"


def test_per_cpu_sums_wrap_modulo_2_64():
    # a CPU that completed more than it made holds a wrapped u64; summed, they are the count
    c = InFlight()
    counted(c, 0, [(U64 - 3) + 3, 0])
    assert counted(c, 1, [(U64 - 10) + 22, U64 - 1 + 1]) == [12, 0]


def test_a_new_epoch_or_device_starts_the_count_again():
    c = InFlight()
    counted(c, 0, [0, 0])
    assert counted(c, 1, [3, 3]) == [3, 3]
    assert counted(c, 2, [90, 3], epoch=3) is None, "counting stopped and started: anew"
    assert counted(c, 3, [95, 3], epoch=3) == [5, 0]
    assert counted(c, 4, [95, 3], epoch=None) is None, "off, or changed during the read"
    assert counted(c, 5, [96, 3], epoch=3) is None
    counted(c, 6, [0, 0], epoch=5)
    assert counted(c, 7, [1, 1], epoch=5, minor=16) is None, "another disk of the same name"


def test_the_layout_carries_the_counts():
    fields = split_dev_stats(list(range(200)))
    assert isinstance(fields["in_flight"], list) and len(fields["in_flight"]) == 2


def test_partitions_add_their_counts():
    disk, part = snap(0, [1, 2]), snap(0, [3, 4], minor=1)
    disk.add(part)
    assert disk.in_flight == [4, 6]
    bare = snap(0, None)
    bare.add(part)
    assert bare.in_flight == [3, 4]


def writers_window(old_flight, new_flight):
    """A window of 16 sequential 128 KiB writers under mq-deadline: the elevator held their
    requests, one writer's completed (8 of 4,000 requests in flight throughout)."""
    kw = dict(completed=[0, 0, 0, 0, 0], completed_bytes=[0] * 5, bios=0, bios_seq=0,
              lat_read_ns=0, procs={}, threads={})
    old = snap(0.0, old_flight, **kw)
    new = snap(2.0, new_flight, **{**kw, "completed": [0, 40, 0, 0, 0],
                                   "completed_bytes": [0, 40 * 131072, 0, 0, 0],
                                   "bios": 40, "bios_seq": 40, "lat_sum_ns": int(2e9),
                                   "procs": {p: 40 // 16 for p in range(100, 116)},
                                   "threads": {p: 40 // 16 for p in range(100, 116)}})
    return compute_features(old, new, min_process_share=0.01)


def test_the_fewer_of_the_two_ends_is_the_windows():
    f = writers_window([0, 128], [3, 120])
    assert f.in_flight == (0, 120)
    assert writers_window(None, [3, 120]).in_flight is None
    assert f.observe_dict()["in_flight"] == [0, 120]


def test_requests_held_through_the_window_are_a_bound_of_the_class_depth():
    # (observe.py takes it where the elevator holds a request past a window:
    # test_classify_held.py runs the observer through a switch to mq-deadline)
    held = writers_window([0, 128], [0, 120])
    assert held.processes == 16
    # Little's law alone: one request in flight in the window, shallow
    assert depth_per_process(held, 16, read=False) < 1
    assert bios_held_through(held, read=False) == 120
    assert bios_held_through(held) == 120
    c = classify(replace(held, held_bios=bios_held_through(held, read=False)), load_thresholds())
    assert c is not None and (c.mode, c.depth) == ("write", "deep")
    # the reads held say nothing of the writers
    assert bios_held_through(replace(held, in_flight=(120, 0)), read=False) == 0
    # a burst at one end only is not a queue the window had
    assert bios_held_through(writers_window([0, 0], [0, 120]), read=False) == 0
    assert bios_held_through(writers_window(None, [0, 120]), read=False) is None
