"""Feature arithmetic from recorded snapshots: deltas, wraps, resets, histograms, classes."""
from __future__ import annotations

import pytest
from fake_sysfs import fake_disks
from ioaz.classify.classes import (
    Thresholds,
    ThresholdsError,
    classify,
    depth_per_process,
    load_thresholds,
    process_bucket,
)
from ioaz.classify.counters import delta, log2_percentile
from ioaz.classify.features import active_processes, compute_features
from ioaz.classify.types import WindowFeatures, WorkloadClass
from ioaz.observe import Observer
from ioaz.probe.diskstats_source import parse_diskstats
from ioaz.probe.layout import LAT_SLOTS, SIZE_SLOTS
from ioaz.probe.snapshot import DeviceSnapshot

S = 1_000_000_000


def snap(t_s: float, reads=0, writes=0, rbytes=0, wbytes=0, bios=0, seq=0, lat_sum=0,
         lat=None, procs=None, merges=0) -> DeviceSnapshot:
    hist = [0] * LAT_SLOTS
    for slot, n in (lat or {}).items():
        hist[slot] = n
    return DeviceSnapshot(name="sdx", major=8, minor=0, t_ns=int(t_s * S), source="bpf",
                          completed=[reads, writes, 0, 0, 0],
                          completed_bytes=[rbytes, wbytes, 0, 0, 0], bios=bios, bios_seq=seq,
                          bio_merges=merges, lat_sum_ns=lat_sum, lat_hist=hist,
                          size_hist=[0] * SIZE_SLOTS, procs=procs if procs is not None else {})


def test_delta_plain_wrap_and_reset():
    assert delta(150, 100) == 50
    # a 64-bit counter that wrapped: small modular difference
    assert delta(5, (1 << 64) - 10) == 15
    # a counter that went back (probe reloaded): counted from zero
    assert delta(7, 1_000_000) == 7
    assert delta(3, 2**32 - 2, bits=32) == 5


def test_percentiles_from_log2_buckets():
    assert log2_percentile([0] * 10, 0.5) is None
    # 100 values all in bucket 10: [1024, 2048)
    h = [0] * 20
    h[10] = 100
    assert 1024 <= log2_percentile(h, 0.5) <= 2048
    assert log2_percentile(h, 0.5) == pytest.approx(1536)
    # 99 fast (bucket 10), 1 slow (bucket 17): p50 fast, p99 at the top of the fast bucket
    h[10], h[17] = 99, 1
    assert log2_percentile(h, 0.5) < 2048
    assert log2_percentile(h, 0.999) >= 2**17


def test_features_from_two_snapshots():
    old = snap(10.0, reads=1000, writes=500, rbytes=4096 * 1000, wbytes=4096 * 500, bios=1500,
               seq=100, lat_sum=10 * S, procs={11: 700, 12: 800})
    new = snap(12.0, reads=3000, writes=1500, rbytes=4096 * 3000, wbytes=4096 * 1500,
               bios=4500, seq=2800, lat_sum=14 * S, lat={14: 3000},
               procs={11: 2200, 12: 2300, 13: 3})
    f = compute_features(old, new, min_process_share=0.01)
    assert f.window_s == pytest.approx(2.0)
    assert f.iops == pytest.approx(1500)           # 3000 requests in 2 s
    assert f.read_bytes_per_s == pytest.approx(4096 * 1000)
    assert f.write_bytes_per_s == pytest.approx(4096 * 500)
    assert f.read_ratio == pytest.approx(2 / 3)
    assert f.seq_ratio == pytest.approx(2700 / 3000)
    assert f.avg_depth == pytest.approx(2.0)       # 4 s in flight over a 2 s window
    assert f.mean_size_bytes == pytest.approx(4096)
    assert f.processes == 2                        # pid 13 did 3 of 3003 bios: under 1%
    assert 2**14 / 1e9 <= f.p50_latency_s < 2**15 / 1e9
    d = f.observe_dict()
    assert d["processes"] == 2 and d["source"] == "bpf"


def test_idle_window_has_no_ratios_and_no_class():
    a, b = snap(1.0), snap(2.0)
    f = compute_features(a, b)
    assert f.iops == 0 and f.read_ratio is None and f.seq_ratio is None
    assert f.p50_latency_s is None and f.mean_size_bytes is None
    assert classify(f, Thresholds()) is None


def test_reset_counters_do_not_give_huge_rates():
    old = snap(1.0, reads=10**9, bios=10**9, seq=10**9)
    new = snap(2.0, reads=100, bios=100, seq=100)   # probe reloaded between windows
    f = compute_features(old, new)
    assert f.iops == pytest.approx(100)


def test_process_share_and_lru_eviction():
    # tgid 5 was evicted from the LRU and came back with a smaller count: a reset, not negative
    assert active_processes({5: 10, 6: 1000}, {5: 900, 6: 500}, 0.01) == 2
    assert active_processes(None, None, 0.01) is None
    assert active_processes({}, {}, 0.01) == 0


def test_process_buckets():
    t = Thresholds()
    assert [process_bucket(n, t) for n in (1, 2, 3, 4, 5, 6, 8, 11, 12, 16, 40)] == \
        ["1", "1", "4", "4", "4", "8", "8", "8", "16+", "16+", "16+"]


def test_diskstats_parsing_and_fallback_features():
    line0 = "   7       0 loop0 100 10 800 50 200 20 1600 100 0 90 150 0 0 0 0 0 0"
    line1 = "   7       0 loop0 300 30 2400 150 600 60 4800 300 2 290 650 0 0 0 0 0 0"
    a = parse_diskstats(line0, 0)["loop0"]
    b = parse_diskstats(line1, 2 * S)["loop0"]
    f = compute_features(a, b)
    assert f.source == "diskstats"
    assert f.seq_ratio is None and f.processes is None
    assert f.iops == pytest.approx((200 + 400) / 2)
    assert f.read_ratio == pytest.approx(200 / 600)
    assert f.read_bytes_per_s == pytest.approx(1600 * 512 / 2)
    assert f.avg_depth == pytest.approx(500 / 2000)     # weighted ms / window ms
    assert f.merge_ratio == pytest.approx(60 / (60 + 600))
    assert f.p99_latency_s is None
    c = classify(f, Thresholds())
    assert c is not None and c.pattern == "random" and c.mode == "write"
    # diskstats has no processes: its process count is made from avg_depth, so it cannot
    # also tell depth per process, and says shallow
    assert depth_per_process(f, 1) is None and c.depth == "shallow"


def _window(avg_depth: float | None, merge_ratio: float | None, processes: int = 4,
            class_processes: int | None = None) -> WindowFeatures:
    return WindowFeatures(device="sdx", window_s=1.0, iops=1000.0, read_bytes_per_s=4e6,
                          write_bytes_per_s=0.0, read_ratio=1.0, seq_ratio=0.0,
                          processes=processes, avg_depth=avg_depth, mean_size_bytes=4096.0,
                          p50_latency_s=0.001, p99_latency_s=0.002, merge_ratio=merge_ratio,
                          requests=1000, class_processes=class_processes)


def test_depth_per_process_and_the_depth_axis():
    t = Thresholds()
    # 4 processes with about one request each in flight: shallow
    shallow = classify(_window(4.2, 0.0), t)
    assert shallow is not None and shallow.depth == "shallow"
    assert str(shallow) == "4/random/read" and shallow.key() == "4/random/read/shallow"
    assert shallow.as_dict() == {"processes": "4", "pattern": "random", "mode": "read"}
    assert shallow.axes()["depth"] == "shallow"
    # 4 processes with 8 requests each: deep
    assert classify(_window(32.0, 0.0), t).depth == "deep"
    # 8 adjacent bios per request (merge ratio 7/8): one request each in flight, still deep
    assert depth_per_process(_window(4.0, 0.875), 4) == pytest.approx(8.0)
    assert classify(_window(4.0, 0.875), t).depth == "deep"
    # a merge ratio of 1 does not divide by zero
    assert depth_per_process(_window(4.0, 1.0), 4) == pytest.approx(20.0)
    # the horizon's count divides, not the window's
    assert classify(_window(16.0, 0.0, processes=4, class_processes=16), t).depth == "shallow"
    # the threshold comes from thresholds.yaml
    assert classify(_window(12.0, 0.0), Thresholds(deep_min_depth_per_process=4.0)).depth \
        == "shallow"
    assert classify(_window(None, 0.0), t).depth == "shallow"
    with pytest.raises(ValueError, match="depth 'middling'"):
        WorkloadClass("4", "random", "read", "middling")


def _ratios(read: float, seq: float | None, merge: float | None = 0.0) -> WindowFeatures:
    f = _window(4.0, merge)
    f.read_ratio, f.seq_ratio = read, seq
    return f


def test_near_a_threshold_a_window_keeps_the_previous_side():
    t = Thresholds()   # thresholds 0.5 (read, sequential), 0.3 (merged), band 0.1
    was_read = WorkloadClass("4", "random", "read")
    was_write = WorkloadClass("4", "sequential", "write")
    # judged alone, 0.45 reads is write and 0.55 is read; within the band the side stays
    assert classify(_ratios(0.45, 0.0), t).mode == "write"
    assert classify(_ratios(0.45, 0.0), t, was_read).mode == "read"
    assert classify(_ratios(0.55, 0.0), t, was_write).mode == "write"
    # beyond the band the window decides, either way
    assert classify(_ratios(0.39, 0.0), t, was_read).mode == "write"
    assert classify(_ratios(0.61, 0.0), t, was_write).mode == "read"
    assert classify(_ratios(0.4, 0.0), t, was_read).mode == "write"   # the edge is outside
    # the pattern has the same band, on seq_ratio and, for diskstats, the merge ratio
    assert classify(_ratios(1.0, 0.42), t, was_write).pattern == "sequential"
    assert classify(_ratios(1.0, 0.58), t, was_read).pattern == "random"
    assert classify(_ratios(1.0, 0.42), t).pattern == "random"
    assert classify(_ratios(1.0, None, merge=0.25), t, was_write).pattern == "sequential"
    assert classify(_ratios(1.0, None, merge=0.15), t, was_write).pattern == "random"
    # the band is not on the process count or the depth: those change at once
    c = classify(_ratios(0.45, 0.0), t, WorkloadClass("16+", "random", "read", "deep"))
    assert (c.processes, c.depth) == ("4", "shallow")
    # what the band decided is kept for the explanation, and is not part of the class
    held = classify(_ratios(0.55, 0.42), t, was_write)
    assert held.held == ("pattern", "mode") and held == WorkloadClass("4", "sequential", "write")
    assert classify(_ratios(0.45, 0.0), t, was_read).held == ("mode",)
    assert classify(_ratios(0.55, 0.58), t, was_read).held == ("pattern",)
    assert classify(_ratios(0.55, 0.42), t, was_read).held == ()   # its own side anyway
    assert classify(_ratios(0.45, 0.0), t).held == ()
    # band 0: every window alone
    assert classify(_ratios(0.45, 0.0), Thresholds(boundary_band=0.0), was_read).mode == "write"


def test_a_band_no_ratio_could_leave_is_refused(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("sequential_min_merge_ratio: 0.3\nboundary_band: 0.3\n")
    with pytest.raises(ThresholdsError, match=r"t.yaml:2: boundary_band 0.3 must be below 0.3, "
                       r"the distance of sequential_min_merge_ratio \(0.3\) to 0"):
        load_thresholds(p)
    p.write_text("read_min_read_ratio: 0.9\nboundary_band: 0.15\n")
    with pytest.raises(ThresholdsError, match=r"t.yaml:2: .* below 0.1, the distance of "
                       r"read_min_read_ratio \(0.9\) to 1"):
        load_thresholds(p)
    p.write_text("boundary_band: 0\n")
    assert load_thresholds(p).boundary_band == 0.0
    assert load_thresholds().boundary_band == pytest.approx(0.1)   # the shipped file


def test_the_observer_classifies_each_device_against_its_own_last_class(tmp_path):
    """Two devices at 45% reads, one after a read window, one after a write window: each
    keeps its own side."""
    kernel = fake_disks(tmp_path, "sda", "sdb")

    def at(t, reads_a, reads_b):
        # 100 requests a second on each device; reads_x of them reads
        a = snap(t, reads=reads_a, writes=int(t * 100) - reads_a, bios=int(t * 100))
        b = snap(t, reads=reads_b, writes=int(t * 100) - reads_b, bios=int(t * 100))
        a.name, b.name = "sda", "sdb"
        return {"sda": a, "sdb": b}

    obs = Observer(FakeSource([at(1, 0, 0), at(2, 90, 10), at(3, 135, 55)]), Thresholds(),
                   ["sda", "sdb"], kernel)
    obs.start()
    first = {f.device: f.workload_class.mode for f in obs.step().features}
    assert first == {"sda": "read", "sdb": "write"}    # 90% and 10% reads
    second = {f.device: (f.read_ratio, f.workload_class.mode) for f in obs.step().features}
    assert second == {"sda": (pytest.approx(0.45), "read"), "sdb": (pytest.approx(0.45), "write")}


def test_diskstats_bad_line_names_the_line():
    with pytest.raises(ValueError, match=r"/proc/diskstats:2"):
        parse_diskstats("7 0 loop0 1 2 3 4 5 6 7 8 9 10 11\n7 1 loop1 x 2 3 4 5 6 7 8 9 10 11", 0)


def test_thresholds_errors_name_file_and_line(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("min_requests: 10\nread_min_read_ratio: 1.5\n")
    with pytest.raises(ThresholdsError, match=r"t.yaml:2: read_min_read_ratio .* 0 to 1"):
        load_thresholds(p)
    p.write_text("min_requests: 10\nbogus: 1\n")
    with pytest.raises(ThresholdsError, match=r"t.yaml:2: unknown setting 'bogus'"):
        load_thresholds(p)
    p.write_text("process_buckets: {\"1\": 2, \"4\": 1, \"8\": 11}\n")
    with pytest.raises(ThresholdsError, match=r"t.yaml:1: process_buckets bounds must increase"):
        load_thresholds(p)
    p.write_text("deep_min_depth_per_process: 0.5\n")
    with pytest.raises(ThresholdsError, match=r"t.yaml:1: deep_min_depth_per_process .* 1 to"):
        load_thresholds(p)
    p.write_text("min_requests: [1,\n")
    with pytest.raises(ThresholdsError, match=r"t.yaml:\d+: YAML syntax error"):
        load_thresholds(p)
    assert load_thresholds().min_requests >= 0   # the shipped file loads


def test_the_code_defaults_are_the_shipped_thresholds():
    """One value per concept: what the code falls back on (Thresholds(), and the process
    share compute_features and WindowFeatures default to) is thresholds.yaml's, never a
    second number."""
    import dataclasses
    import inspect
    shipped = load_thresholds()
    assert Thresholds() == shipped
    share = {f.name: f.default for f in dataclasses.fields(WindowFeatures)}["process_share"]
    assert share == shipped.min_process_share
    default = inspect.signature(compute_features).parameters["min_process_share"].default
    assert default == shipped.min_process_share


class FakeSource:
    name = "bpf"

    def __init__(self, snaps):
        self.snaps = list(snaps)
        self.asked = []

    def read(self, names=None):
        self.asked.append(sorted(names) if names is not None else None)
        return self.snaps.pop(0)

    def close(self):
        pass


def test_observer_reports_a_vanished_device_and_goes_on(tmp_path):
    kernel = fake_disks(tmp_path, "sda", "sdb")

    def both(t):
        s1, s2 = snap(t, reads=int(t * 100)), snap(t, writes=int(t * 50))
        s1.name, s2.name = "sda", "sdb"
        return {"sda": s1, "sdb": s2}

    obs = Observer(FakeSource([both(1), both(2), {"sda": both(3)["sda"]}]), Thresholds(),
                   ["sda", "sdb"], kernel)
    assert obs.start() == ["sda", "sdb"]
    w = obs.step()
    assert sorted(f.device for f in w.features) == ["sda", "sdb"]
    kernel.remove_device("sdb")
    w = obs.step()
    assert w.vanished == ["sdb"]
    assert [f.device for f in w.features] == ["sda"]
    assert w.features[0].iops == pytest.approx(100)
    # the source is asked for the window's disks only, not for every disk it could read
    assert obs.source.asked == [["sda", "sdb"], ["sda", "sdb"], ["sda"]]


def test_observer_sees_another_disk_take_a_name_between_two_windows(tmp_path):
    """sdb detached and another disk attached as sdb within one window: the window does not
    run on from the old disk's counters; the new disk is new (its first window the next)."""
    kernel = fake_disks(tmp_path, "sda", "sdb")

    def both(t):
        s1, s2 = snap(t, reads=int(t * 100)), snap(t, writes=int(t * 50))
        s1.name, s2.name = "sda", "sdb"
        return {"sda": s1, "sdb": s2}

    obs = Observer(FakeSource([both(1), both(2), both(3), both(4)]), Thresholds(),
                   ["sda", "sdb"], kernel)
    obs.start()
    assert sorted(f.device for f in obs.step().features) == ["sda", "sdb"]
    kernel.remove_device("sdb")
    kernel.add_device("sdb", dev="8:16")
    w = obs.step()
    assert w.vanished == ["sdb"] and w.appeared == ["sdb"]
    assert [f.device for f in w.features] == ["sda"]
    w = obs.step()
    assert sorted(f.device for f in w.features) == ["sda", "sdb"] and not w.vanished


def test_a_read_class_takes_the_reads_depth_not_the_write_backs():
    """Five synchronous readers beside a buffered writer: the write-back's requests wait deep
    in the scheduler (bfq holds them back for the readers), the readers hold about one each.
    The read class is shallow by the reads' depth; a write class takes the rest; a source
    that cannot split (the simulator, a dataset's row) keeps the whole depth as before."""
    t = Thresholds()
    f = _window(30.0, 0.0, processes=6)           # 30 in flight over 6 submitters: 5 each
    f.read_ratio = 0.8
    assert classify(f, t).depth == "deep"         # unsplit: the write-back counts
    f.read_depth = 5.5                            # of the 30, the readers' 5.5
    c = classify(f, t)
    assert c is not None and c.mode == "read" and c.depth == "shallow"
    assert depth_per_process(f, 6, read=True) == pytest.approx(5.5 / 6)
    assert depth_per_process(f, 6, read=False) == pytest.approx(24.5 / 6)
    assert depth_per_process(f, 6) == pytest.approx(5.0)   # no mode: the whole depth
    f.read_ratio = 0.2                            # a write class: the write-back's depth
    assert classify(f, t).depth == "deep"


def test_read_depth_from_diskstats_ms_spent_reading():
    """diskstats' ms spent reading over the window is the reads' depth, as its weighted ms
    in queue is the whole depth (Little's law, iostat's aqu-sz); both from the same source."""
    def line(rms: int, wms: int, weighted: int) -> str:
        return f"   8       0 sdx 100 0 800 {rms} 50 0 400 {wms} 0 0 {weighted} 0 0 0 0 0 0"
    old = parse_diskstats(line(1_000, 2_000, 3_000), 0)["sdx"]
    new = parse_diskstats(line(1_500, 12_000, 14_000), 1 * S)["sdx"]
    f = compute_features(old, new)
    assert f.avg_depth == pytest.approx(11.0)
    assert f.read_depth == pytest.approx(0.5)
    # a source without the split: no read depth, the class takes the whole
    new.lat_read_ns = old.lat_read_ns = None
    assert compute_features(old, new).read_depth is None
