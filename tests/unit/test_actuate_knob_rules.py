"""The knob rules from Carroll's thesis, as pure functions of features and device."""
from __future__ import annotations

import pytest
from ioaz.actuate.knob_rules import (
    DeviceInfo,
    bfq_slice_idle,
    deadline_expiries,
    raid_queue_depth,
    tune,
    writeback_throttling,
)
from ioaz.actuate.types import QueueSettings
from ioaz.classify.types import WindowFeatures, WorkloadClass
from ioaz.realisation import Realisation


def features(p99: float | None = 0.004, seq: float | None = 0.1,
             cls: WorkloadClass | None = None) -> WindowFeatures:
    return WindowFeatures(device="sdb", window_s=1.0, iops=500.0, read_bytes_per_s=2e6,
                          write_bytes_per_s=0.0, read_ratio=1.0, seq_ratio=seq, processes=8,
                          avg_depth=8.0, mean_size_bytes=4096.0, p50_latency_s=p99 and p99 / 4,
                          p99_latency_s=p99, merge_ratio=0.0, workload_class=cls)


RAID = DeviceInfo("sdb", rotational=True, queue_depth=64, raid=True)
SINGLE_DISK = DeviceInfo("sda", rotational=True, queue_depth=1, hw_tags=1)


def test_light_load_keeps_the_kernel_default_expiries() -> None:
    assert deadline_expiries(0.004) == {"read_expire": 500, "write_expire": 5000}


def test_expiries_grow_with_latency_so_they_stay_above_it() -> None:
    # Carroll 5.1.1: at 250 ms average latency deadline starts to avalanche with 500 ms expiry.
    exp = deadline_expiries(0.400)
    assert exp == {"read_expire": 800, "write_expire": 8000}
    assert exp["read_expire"] >= 2 * 400


def test_expiries_are_capped_and_silent_without_a_measurement() -> None:
    assert deadline_expiries(120.0)["read_expire"] == 30_000
    assert deadline_expiries(None) == {}
    assert deadline_expiries(float("nan")) == {}


def test_slice_idle_zero_only_for_random_io_on_a_queueing_device() -> None:
    assert bfq_slice_idle(features(seq=0.1), RAID) == {"slice_idle": 0}
    assert bfq_slice_idle(features(seq=0.9), RAID) == {}
    assert bfq_slice_idle(features(seq=0.1), SINGLE_DISK) == {}
    assert bfq_slice_idle(features(seq=None), RAID) == {}


def test_the_class_wins_over_seq_ratio() -> None:
    rnd = WorkloadClass("8", "random", "read")
    assert bfq_slice_idle(features(seq=0.9, cls=rnd), RAID) == {"slice_idle": 0}


def test_queue_depth_32_only_for_raid_with_a_queue_depth_file() -> None:
    assert raid_queue_depth(RAID) == 32
    assert raid_queue_depth(DeviceInfo("sdc", queue_depth=64)) is None
    assert raid_queue_depth(DeviceInfo("loop0", hw_tags=128, raid=True)) is None


def test_tune_mq_deadline_under_load_cites_carroll() -> None:
    t = tune(Realisation("mq-deadline"), features(p99=0.6), RAID)
    assert t.knobs == {"read_expire": 1200, "write_expire": 12000}
    assert t.queue.queue_depth == 32
    assert any("Carroll 5.1.1" in r for r in t.reasons)
    assert any("Carroll 5.4" in r for r in t.reasons)


def test_policy_knobs_and_settings_override_the_rules() -> None:
    t = tune(Realisation("bfq", {"slice_idle": 4}), features(seq=0.0), RAID,
             QueueSettings(queue_depth=16, nr_requests=64))
    assert t.knobs == {"slice_idle": 4}
    assert t.queue == QueueSettings(nr_requests=64, read_ahead_kb=None, queue_depth=16)
    assert any("overrides" in r for r in t.reasons)


@pytest.mark.parametrize("sched", ["none", "kyber"])
def test_no_rule_for_other_schedulers(sched: str) -> None:
    t = tune(Realisation(sched), features(p99=2.0, seq=0.0), SINGLE_DISK)
    assert t.knobs == {} and t.reasons == []


@pytest.mark.parametrize("device,goal,mode,wanted", [
    (SINGLE_DISK, "mean", "auto", 0),            # a rotating disk: off, as bfq sets it
    (SINGLE_DISK, "throughput", "auto", 0),
    (SINGLE_DISK, "latency", "auto", None),      # what throttling is for: the kernel's stays
    (SINGLE_DISK, "mean", "kernel", None),       # the administrator's choice
    (DeviceInfo("nvme0n1", rotational=False), "mean", "auto", None),
    (DeviceInfo("sdx"), "mean", "auto", None),   # rotation unknown: left alone
])
def test_writeback_throttling_is_off_on_rotating_disks_but_for_latency(
        device: DeviceInfo, goal: str, mode: str, wanted: int | None) -> None:
    assert writeback_throttling(device, goal, mode) == wanted


def test_tune_passes_the_queue_settings_through() -> None:
    t = tune(Realisation("mq-deadline"), None, RAID, QueueSettings(wbt_lat_usec=0))
    assert t.queue == QueueSettings(queue_depth=32, wbt_lat_usec=0)
