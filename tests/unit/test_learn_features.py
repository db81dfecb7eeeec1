"""The model's feature vector: the daemon's window and the dataset's row give the same numbers,
and the think time per request is estimated from depth, processes and IOPS (Little's law)."""
from __future__ import annotations

import math

import pytest
from ioaz.classify.types import WindowFeatures
from ioaz.model.features import FEATURE_SCHEMA, MISSING, vector, vector_from_dict


def window(processes: int | None, depth: float, iops: float) -> WindowFeatures:
    return WindowFeatures(device="sda", window_s=1.0, iops=iops, read_bytes_per_s=iops * 131072,
                          write_bytes_per_s=0.0, read_ratio=1.0, seq_ratio=1.0,
                          processes=processes, avg_depth=depth, mean_size_bytes=131072.0,
                          p50_latency_s=0.04, p99_latency_s=0.06, merge_ratio=0.0)


def at(v: list[float], name: str) -> float:
    return v[[n for n, _ in FEATURE_SCHEMA].index(name)]


def test_think_time_and_depth_per_process_from_the_window():
    # 16 synchronous readers, 14.86 requests in the device on average at 371 IOPS: each
    # process has a request in flight 93% of the time and thinks ~3.1 ms per request
    v = vector(window(16, 14.86, 371.0))
    assert at(v, "depth_per_process") == pytest.approx(14.86 / 16)
    assert math.expm1(at(v, "think_time_s")) / 1e6 == pytest.approx(1.14 / 371)
    # no think time at all: 16 readers, 16 in flight; asynchronous writers: more than one each
    assert at(vector(window(16, 16.0, 372.0)), "think_time_s") == 0.0
    w8 = vector(window(4, 31.9, 400.0))
    assert at(w8, "think_time_s") == 0.0 and at(w8, "depth_per_process") > 7


def test_the_daemon_and_the_dataset_compute_the_same_vector():
    w = window(8, 6.85, 372.0)
    d = {n: getattr(w, n) for n in ("iops", "read_bytes_per_s", "write_bytes_per_s",
                                    "read_ratio", "seq_ratio", "processes", "avg_depth",
                                    "mean_size_bytes", "p50_latency_s", "p99_latency_s",
                                    "merge_ratio")}
    assert vector(w) == vector_from_dict(d)
    # diskstats counts no processes: both derived features are missing, not guessed
    v = vector(window(None, 2.0, 300.0))
    assert at(v, "depth_per_process") == at(v, "think_time_s") == MISSING


def test_the_process_count_is_the_class_horizon_s_where_the_window_has_one():
    # under stream a reader the elevator is not serving submits nothing for a whole window:
    # four readers counted three in one window, and the model read them as another workload
    w = window(3, 3.8, 600.0)
    w.class_processes = 4
    v = vector(w)
    assert math.expm1(at(v, "processes")) == pytest.approx(4)
    assert at(v, "depth_per_process") == pytest.approx(3.8 / 4)
    assert math.expm1(at(v, "think_time_s")) / 1e6 == pytest.approx(0.2 / 600)
    # the dataset's row reads the same, and a row written before the column keeps its own
    d = {"iops": 600.0, "read_bytes_per_s": 600.0 * 131072, "write_bytes_per_s": 0.0,
         "read_ratio": 1.0, "seq_ratio": 1.0, "processes": 3, "avg_depth": 3.8,
         "mean_size_bytes": 131072.0, "p50_latency_s": 0.04, "p99_latency_s": 0.06,
         "merge_ratio": 0.0}
    assert vector_from_dict({**d, "class_processes": 4}) == v
    assert math.expm1(at(vector_from_dict(d), "processes")) == pytest.approx(3)


def test_the_disk_s_dirty_data_is_a_feature_and_an_older_model_reads_without_it():
    from ioaz.model.features import READABLE, schema_differences, schema_doc
    w = window(5, 4.6, 560.0)
    w.dirty_fill = 0.97          # five buffered writers held back beside the readers
    v = vector(w)
    assert at(v, "dirty_fill") == pytest.approx(0.97)
    w.dirty_fill = None          # no debugfs: missing, not zero
    assert at(vector(w), "dirty_fill") == MISSING
    # a model trained before the feature (schema 3) keeps its thirteen, in their order
    old = {"version": 3, "missing": MISSING,
           "features": [{"name": n, "transform": t} for n, t in READABLE[3]]}
    assert schema_differences(old) == [] and len(vector(w, READABLE[3])) == 13
    assert vector(w, READABLE[3]) == vector(w)[:13]
    assert schema_differences(schema_doc()) == []
    # a version this ioaz does not know is named, with those it does
    msg = schema_differences({**old, "version": 9})
    assert "schema version 9" in msg[0] and "3, 4" in msg[0]
