"""The size axis: a window's mean request size makes its class small or large; derive splits a
class by size only where its calibration measured both sizes; a matrix on these axes looks the
size up."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ioaz.classify.classes import Thresholds, ThresholdsError, classify, load_thresholds
from ioaz.classify.types import WindowFeatures, WorkloadClass
from ioaz.decide import load_matrix, validate_file
from ioaz.home import MATRICES
from ioaz.lab.main import main as lab_main
from ioaz.learn.dataset import DatasetWriter, Row
from ioaz.learn.derive import AXES, SIZE_AXES, derive_table, matrix_doc, write_matrix

KIB = 1024.0


def window(size_kib: float | None) -> WindowFeatures:
    return WindowFeatures(device="sdx", window_s=1.0, iops=100.0, read_bytes_per_s=0.0,
                          write_bytes_per_s=4e6, read_ratio=0.0, seq_ratio=1.0, processes=16,
                          avg_depth=128.0, mean_size_bytes=None if size_kib is None
                          else size_kib * KIB, p50_latency_s=0.01, p99_latency_s=0.1,
                          merge_ratio=0.0, requests=100)


def test_the_mean_request_size_makes_the_class_small_or_large():
    t = Thresholds()   # 48 KiB, band 0.1 of it
    assert t.large_min_request_kb == 48.0
    assert classify(window(4), t).size == "small"
    assert classify(window(32), t).size == "small"
    large = classify(window(512), t)
    assert large.size == "large" and large.axes()["size"] == "large"
    # the IOAZ class and its depth key are the same at either size; the full key is not
    small = classify(window(4), t)
    assert str(small) == str(large) == "16+/sequential/write"
    assert small.key() == large.key() == "16+/sequential/write/deep"
    assert (small.full_key(), large.full_key()) == ("16+/sequential/write/deep/small",
                                                    "16+/sequential/write/deep/large")
    assert small != large
    # no size to read (no requests): small, as the built classes are taken
    assert classify(window(None), t).size == "small"
    with pytest.raises(ValueError, match="size 'huge'"):
        WorkloadClass("4", "random", "read", "shallow", "huge")


def test_near_the_size_threshold_a_window_keeps_the_previous_side():
    t = Thresholds()
    was_small = WorkloadClass("16+", "sequential", "write", "deep", "small")
    was_large = WorkloadClass("16+", "sequential", "write", "deep", "large")
    # judged alone 45 KiB is small and 50 large; within 10% of 48 the previous side stays
    assert classify(window(45), t).size == "small"
    assert classify(window(45), t, was_large).size == "large"
    assert classify(window(45), t, was_large).held == ("size",)
    assert classify(window(50), t, was_small).size == "small"
    # beyond the band (43.2-52.8 KiB) the window decides
    assert classify(window(43), t, was_large).size == "small"
    assert classify(window(53), t, was_small).size == "large"
    assert classify(window(50), Thresholds(boundary_band=0.0), was_small).size == "large"


def test_the_size_threshold_is_read_from_the_thresholds_file(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("large_min_request_kb: 128\n")
    t = load_thresholds(p)
    assert t.large_min_request_kb == 128.0 and classify(window(64), t).size == "small"
    p.write_text("min_requests: 10\nlarge_min_request_kb: 0\n")
    with pytest.raises(ThresholdsError, match=r"t.yaml:2: large_min_request_kb must be a "
                                              r"number of KiB from 1 to"):
        load_thresholds(p)


def row(workload: str, cand: str, mb_s: float, size_kib: float, *, procs: int = 16) -> Row:
    """A deep sequential writer workload of `procs` processes at this request size."""
    feats = {"iops": 200.0, "read_bytes_per_s": 0.0, "write_bytes_per_s": 1e6,
             "read_ratio": 0.0, "seq_ratio": 1.0, "processes": float(procs),
             "avg_depth": 8.0 * procs, "mean_size_bytes": size_kib * KIB,
             "p50_latency_s": 0.004, "p99_latency_s": 0.02, "merge_ratio": 0.0}
    return Row(workload=workload, workload_class="16+/sequential/write", candidate=cand,
               policy=cand, scheduler=cand, knobs="", rep=0, seconds=2.0, features=feats,
               throughput_mb_s=mb_s, proc_min_mb_s=mb_s / procs, proc_max_mb_s=mb_s / procs,
               proc_mean_mb_s=mb_s / procs, p50_latency_s=0.004, p99_latency_s=0.02,
               requests=400, device="testdisk")


def calibration() -> list[Row]:
    """The testbed's 16 writers 8 deep: 128 KiB writes (deadline 88, anticipatory 74) and
    4 KiB writes 40 GB apart (anticipatory 18.7, deadline 3.2); and 4 writers of 128 KiB
    only (deadline ahead)."""
    return [row("w128", "deadline", 88.3, 480), row("w128", "anticipatory", 73.9, 480),
            row("w4", "deadline", 3.2, 23), row("w4", "anticipatory", 18.7, 23),
            row("four", "deadline", 60.0, 480, procs=4),
            row("four", "anticipatory", 50.0, 480, procs=4)]


def test_derive_splits_a_class_by_size_only_where_both_sizes_were_measured(tmp_path):
    t = Thresholds()
    pooled = derive_table(calibration(), "mean", t, axes=AXES)
    # pooled, the 4 KiB writers' 5.8x decides the cell (mean shares 0.92 against 0.59)
    assert pooled["16+/sequential/write/deep"].policy == "anticipatory"
    split = derive_table(calibration(), "mean", t, axes=SIZE_AXES)
    assert len(split) == 2 * len(pooled)
    large, small = (split[f"16+/sequential/write/deep/{s}"] for s in ("large", "small"))
    assert (large.policy, large.workloads, large.clear) == ("deadline", 1, True)
    assert (small.policy, small.workloads, small.clear) == ("anticipatory", 1, True)
    assert large.sizes_of is None and "no calibration workload of this size" not in \
        large.note()
    # 4 writers were measured at one size: the other size takes the cell of both sizes
    assert split["4/sequential/write/deep/large"].policy == "deadline"
    other = split["4/sequential/write/deep/small"]
    assert other.policy == "deadline" and other.sizes_of == "4/sequential/write/deep"
    assert other.note().startswith("no calibration workload of this size: as "
                                   "4/sequential/write/deep, both sizes, won by")
    # a class measured at neither size is what it is without the size axis
    for size in ("small", "large"):
        assert split[f"8/random/read/shallow/{size}"].policy == \
            pooled["8/random/read/shallow"].policy

    src = tmp_path / "cal.csv"
    with DatasetWriter(src) as w:
        for r in calibration():
            w.write(r)
    path = tmp_path / "testdisk-mean.yaml"
    write_matrix(path, matrix_doc("testdisk-mean", "mean", split, src, 6, 0.02, SIZE_AXES))
    assert validate_file(path) == []
    m = load_matrix(path)
    assert m.axes == ("processes", "pattern", "mode", "depth", "size")
    big = WorkloadClass("16+", "sequential", "write", "deep", "large")
    assert m.lookup("mean", big).policy == "deadline"
    assert m.lookup("mean", WorkloadClass("16+", "sequential", "write", "deep")).policy == \
        "anticipatory"


def test_a_matrix_with_a_bad_size_names_the_cell(tmp_path):
    path = tmp_path / "m.yaml"
    doc = yaml.safe_load((MATRICES / "kernel" / "testbed-wd500-qd1-mean.yaml").read_text())
    cells = doc["goals"]["mean"]
    cells["1/sequential/read/shallow/huge"] = cells.pop("1/sequential/read/shallow/large")
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    issues = validate_file(path)
    assert any("unknown cell (got '1/sequential/read/shallow/huge'" in str(i) for i in issues)
    assert any("missing cells" in str(i) and "1/sequential/read/shallow/large" in str(i)
               for i in issues)


def test_the_shipped_kernel_matrices_are_the_derive_of_their_dataset(tmp_path):
    """The depth-1 matrices are what `ioaz-lab derive --size-axis` makes of the shipped
    dataset with the commands of decision_matrices/kernel/README.md (regenerate, do not edit),
    and on the real kernel's calibration the size parts the sixteen writers' cell."""
    dataset = MATRICES / "kernel" / "testbed-wd500-qd1.csv"
    assert lab_main(["derive", str(dataset), "--out-dir", str(tmp_path), "--name",
                     "testbed-wd500-qd1", "--goal", "mean", "--min-margin", "0.03",
                     "--unclear-policy", "deadline", "--size-axis"]) == 0
    made = (tmp_path / "testbed-wd500-qd1-mean.yaml").read_text().split("\n", 2)[2]
    shipped = Path(MATRICES / "kernel" / "testbed-wd500-qd1-mean.yaml").read_text()
    assert made == shipped.split("\n", 2)[2]
    cells = yaml.safe_load(made)["goals"]["mean"]
    assert cells["16+/sequential/write/deep/large"]["policy"] == "deadline"
    assert cells["16+/sequential/write/deep/small"]["policy"] == "anticipatory"


MAXTOR40_MARGINS = {"mean": "0.02", "throughput": "0.02", "min": "0.04", "max": "0.05",
                    "latency": "0.08"}


@pytest.mark.parametrize("goal", sorted(MAXTOR40_MARGINS))
def test_the_shipped_maxtor40_matrices_are_the_derive_of_their_dataset(tmp_path, goal):
    """IOAZ's own disk: the commands of decision_matrices/kernel/README.md ("maxtor40") make
    the shipped matrices of its dataset, and on goal mean its clear winners are the kernel's
    (stream for four sequential readers, bfq for sixteen, mq-deadline for writers)."""
    dataset = MATRICES / "kernel" / "testbed-maxtor40-qd1.csv"
    assert lab_main(["derive", str(dataset), "--out-dir", str(tmp_path), "--name",
                     "testbed-maxtor40-qd1", "--goal", goal, "--min-margin",
                     MAXTOR40_MARGINS[goal], "--unclear-policy", "deadline"]) == 0
    name = f"testbed-maxtor40-qd1-{goal}.yaml"
    made = (tmp_path / name).read_text().split("\n", 2)[2]
    assert made == (MATRICES / "kernel" / name).read_text().split("\n", 2)[2]
    if goal == "mean":
        cells = yaml.safe_load(made)["goals"]["mean"]
        assert {c: cells[c]["policy"] for c in ("4/sequential/read/shallow",
                                                "16+/sequential/read/shallow",
                                                "8/sequential/write/deep")} == {
            "4/sequential/read/shallow": "stream", "16+/sequential/read/shallow": "anticipatory",
            "8/sequential/write/deep": "deadline"}
