"""The class counts submitters (threads where the probe tells them), and a window the probe saw
(almost) nothing of keeps the previous class."""
from __future__ import annotations

import pytest
from ioaz.classify.classes import Thresholds, classify, load_thresholds
from ioaz.classify.features import compute_features
from ioaz.classify.types import WorkloadClass
from ioaz.probe.layout import LAT_SLOTS, SIZE_SLOTS
from ioaz.probe.snapshot import DeviceSnapshot

S = 1_000_000_000


def snap(t_s: float, reads: int, bios: int, seq: int, procs: dict[int, int],
         threads: dict[int, int] | None) -> DeviceSnapshot:
    return DeviceSnapshot(name="sdx", major=8, minor=0, t_ns=int(t_s * S), source="bpf",
                          completed=[reads, 0, 0, 0, 0], completed_bytes=[reads * 4096, 0, 0,
                                                                           0, 0],
                          bios=bios, bios_seq=seq, lat_sum_ns=int(t_s * S),
                          lat_read_ns=int(t_s * S),
                          lat_hist=[0] * LAT_SLOTS, size_hist=[0] * SIZE_SLOTS, procs=procs,
                          threads=threads)


def sixteen_threads_of_one_process(bios_each: int) -> tuple[DeviceSnapshot, DeviceSnapshot]:
    old = snap(1.0, 0, 0, 0, {}, {})
    tids = range(501, 517)
    new = snap(2.0, 16 * bios_each, 16 * bios_each, 0, {500: 16 * bios_each},
               {t: bios_each for t in tids})
    return old, new


def test_sixteen_threads_of_one_process_are_sixteen_submitters():
    f = compute_features(*sixteen_threads_of_one_process(100), min_process_share=0.02)
    assert (f.processes, f.threads, f.submitters) == (1, 16, 16)
    c = classify(f, Thresholds())
    assert c is not None and (c.processes, c.pattern) == ("16+", "random")
    d = f.observe_dict()
    assert d["processes"] == 1 and d["threads"] == 16 and d["class_kept"] is None
    assert d["read_depth"] == pytest.approx(1.0)   # every request a read: all of the depth


def test_without_thread_counts_the_processes_are_the_submitters():
    old, new = sixteen_threads_of_one_process(100)
    old.threads = new.threads = None
    f = compute_features(old, new, min_process_share=0.02)
    assert (f.processes, f.threads, f.submitters) == (1, None, 1)
    c = classify(f, Thresholds())
    assert c is not None and c.processes == "1"


def test_an_empty_sample_keeps_the_previous_class_and_says_so():
    t = load_thresholds()
    old = snap(1.0, 0, 0, 0, {}, {})
    # 5000 requests done (diskstats' exact count) but the sample saw 3 bios: no judgement
    new = snap(2.0, 5000, 3, 0, {7: 3}, {7: 3})
    new.sampled = True
    f = compute_features(old, new)
    before = WorkloadClass("1", "sequential", "read")
    kept = classify(f, t, before)
    assert kept == before
    assert kept is not None and kept.kept is not None and "3 bios" in kept.kept
    assert classify(f, t, None) is None   # nothing judged before: no class, not a guess
    # enough bios: judged on the window itself
    new.bios, new.bios_seq = t.min_sampled_bios, 0
    judged = classify(compute_features(old, new), t, before)
    assert judged is not None and judged.pattern == "random" and judged.kept is None
