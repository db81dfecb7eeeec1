"""What the probe gets right that simpler detectors do not, with real fio on loop devices (root):
random reads packed in a few MiB are random, sequential streams interleaved by 16 threads of one
process are sequential, those threads are 16 submitters, and a window whose sample saw (almost)
no bios keeps the previous class instead of guessing one from the merge ratio."""
from __future__ import annotations

import statistics

import pytest
from conftest import fio_args, need_root, need_tool
from ioaz.classify.classes import load_thresholds
from ioaz.probe.bpf_source import BpfSource
from ioaz.probe.sampler import SamplePlan
from test_probe_fio import SIZE_MB, observe_during, probe  # noqa: F401 - the fixture

pytestmark = pytest.mark.root


@pytest.mark.parametrize("region_mb", [1, 4, 16])
def test_random_reads_in_a_small_region_are_random(probe, make_loop, region_mb):  # noqa: F811
    """fio's own truth: about 1 in region/4 KiB of these reads follows the one before."""
    dev = make_loop(SIZE_MB)
    cmd = fio_args(dev, rw="randread", seconds=3.5, size_mb=region_mb)
    feats, _ = observe_during(probe, dev, cmd, windows=3)
    judged = [f for f in feats if f.workload_class is not None and f.workload_class.kept is None]
    assert len(judged) >= 2, [(f.bios, f.workload_class) for f in feats]
    seq = [f.seq_ratio for f in judged]
    assert all(s is not None and s < 0.1 for s in seq), f"{region_mb} MiB: seq {seq}"
    assert all(f.workload_class.pattern == "random" for f in judged)  # type: ignore[union-attr]


def test_sixteen_threads_interleaving_sequential_streams(probe, make_loop):  # noqa: F811
    """16 reader threads of one process (fio --thread), each sequential in its own region: the
    device sees 16 interleaved streams from 16 submitters of one process."""
    dev = make_loop(SIZE_MB)
    cmd = fio_args(dev, rw="read", jobs=16, seconds=3.5, size_mb=SIZE_MB, extra=("--thread",))
    feats, _ = observe_during(probe, dev, cmd, windows=3)
    judged = [f for f in feats if f.workload_class is not None and f.workload_class.kept is None]
    assert len(judged) >= 2, [(f.bios, f.workload_class) for f in feats]
    seq = [f.seq_ratio or 0.0 for f in judged]
    # the claim is the typical window above 0.9; one window of a loaded machine may dip
    assert statistics.median(seq) > 0.9 and min(seq) > 0.8, seq
    assert all((f.processes, f.threads) == (1, 16) for f in judged), \
        [(f.processes, f.threads) for f in judged]
    assert all(str(f.workload_class) == "16+/sequential/read" for f in judged), \
        [str(f.workload_class) for f in judged]


def test_a_window_without_enough_sampled_bios_keeps_the_class(make_loop):
    """A sequential reader, fast for 2 s then at 50 requests/s, sampled 10 ms a second always
    (as if the machine were busy): the slow windows' samples hold a bio or two while
    /proc/diskstats counts 50 requests. Judged, those windows would read the merge ratio (no
    merges: "random"); they keep 1/sequential/read and say why."""
    need_root("loading BPF")
    need_tool("fio")
    dev = make_loop(SIZE_MB)
    base = fio_args(dev, rw="read", seconds=2, size_mb=SIZE_MB)
    slow = ["--name=slow", "--stonewall", f"--filename=/dev/{dev}", "--direct=1",
            "--ioengine=psync", "--rw=read", "--bs=4k", "--size=256m", "--offset=256m",
            "--rate_iops=50", "--runtime=3.5", "--time_based"]
    plan = SamplePlan(0.01, period_s=1.0, warmup_s=0.05, full_below_iops=0)
    with BpfSource(sample=plan) as src:
        feats, _ = observe_during(src, dev, base + slow, windows=5)
        assert src.sampler is not None and src.sampler.error is None
    t = load_thresholds()
    classes = [(str(f.workload_class), f.bios, f.requests,
                f.workload_class.kept if f.workload_class else None) for f in feats]
    fast = [f for f in feats[:2] if f.workload_class and f.workload_class.kept is None]
    assert fast and all(str(f.workload_class) == "1/sequential/read" for f in fast), classes
    slow_w = [f for f in feats[3:] if f.requests >= t.min_requests]
    assert slow_w, classes
    for f in slow_w:
        assert f.bios is not None and f.bios < t.min_sampled_bios, classes
        assert str(f.workload_class) == "1/sequential/read", classes
        assert f.workload_class is not None and f.workload_class.kept, classes
        assert f.observe_dict()["class_kept"], classes
