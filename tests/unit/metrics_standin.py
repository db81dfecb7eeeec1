"""A fake daemon state for the metrics tests, test_metrics_collector.py and
test_metrics_endpoint.py (and the endpoint's child process, which imports it by path).

The daemon's records are the real types (DeviceRecord, DeviceState, WindowFeatures,
DeviceSnapshot); only the daemon around them is a stand-in, so no kernel is needed.
"""
from __future__ import annotations

import threading
from types import SimpleNamespace

from ioaz.classify.types import WindowFeatures, WorkloadClass
from ioaz.daemon.records import DeviceRecord
from ioaz.daemon.rest import Rest
from ioaz.decide import DeviceInfo, initial_state
from ioaz.probe.layout import LAT_SLOTS, SIZE_SLOTS, size_slot
from ioaz.probe.snapshot import DeviceSnapshot

NOW = 1_000_000.0


def features(dev: str = "sdz", **over) -> WindowFeatures:
    f = {"device": dev, "window_s": 1.0, "iops": 250.0, "read_bytes_per_s": 1024000.0,
             "write_bytes_per_s": 0.0, "read_ratio": 1.0, "seq_ratio": 0.1, "processes": 8,
             "avg_depth": 7.5, "mean_size_bytes": 4096.0, "p50_latency_s": 0.004,
             "p99_latency_s": 0.02, "merge_ratio": 0.0, "source": "bpf",
             "workload_class": WorkloadClass("8", "random", "read")}
    f.update(over)
    return WindowFeatures(**f)


def snapshot(dev: str = "sdz") -> DeviceSnapshot:
    s = DeviceSnapshot(name=dev, major=8, minor=0, t_ns=0, source="bpf")
    s.lat_hist = [0] * LAT_SLOTS
    s.lat_hist[12] = 30     # 4096..8191 ns
    s.lat_hist[20] = 10     # ~1.05..2.1 ms
    s.lat_hist[3] = 2       # below the first exported bucket: folded into it
    s.lat_sum_ns = 30 * 6000 + 10 * 1_500_000 + 2 * 10
    s.size_hist = [0] * SIZE_SLOTS
    s.size_hist[size_slot(4096)] = 40    # 4 KiB requests
    s.size_hist[0] = 3      # 512 bytes: folded into the first exported bucket
    s.size_hist[size_slot(6 << 20)] = 1     # 6 MiB: above the last finite bucket
    s.completed_bytes = [40 * 4096 + 3 * 512 + (6 << 20), 0, 0, 0, 0]
    return s


def record(dev: str = "sdz", **over) -> DeviceRecord:
    st = initial_state(DeviceInfo(dev, rotational=True), ("mq-deadline", "bfq", "none"))
    rec = DeviceRecord(name=dev, state=st, scheduler="bfq",
                       available=("mq-deadline", "bfq", "none"), features=features(dev),
                       snapshot=snapshot(dev), decision_time=NOW - 2.5)
    rec.switches[("mq-deadline", "bfq", "matrix")] += 3
    rec.switches[("bfq", "none", "pin")] += 1
    for stall in (0.002, 0.010, 0.004, 0.7):
        rec.stalls.observe(stall)
    for k, v in over.items():
        setattr(rec, k, v)
    return rec


def fake_daemon(*records: DeviceRecord, **over) -> SimpleNamespace:
    d = SimpleNamespace(
        lock=threading.RLock(), devices={r.name: r for r in records},
        source=SimpleNamespace(name="bpf"), fallback_reason=None, collector_up=True,
        last_window_s=0.0031, window_cpu_s=0.25, windows=42, rest=Rest(1.0, 4.0),
        config=SimpleNamespace(window_s=1.0, dry_run=False, metrics_detail="full"),
        wall=lambda: NOW, state_set_aside=0)
    for k, v in over.items():
        setattr(d, k, v)
    return d
