"""`ioazctl observe` as a user runs it: real process, real device, real fio load."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fio_args, need_tool

IOAZCTL = [str(Path(sys.executable).parent / "ioazctl")]
FIELDS = ["device", "window_s", "iops", "read_bytes_per_s", "write_bytes_per_s", "read_ratio",
          "seq_ratio", "processes", "avg_depth", "mean_size_bytes", "p50_latency_s",
          "p99_latency_s", "merge_ratio", "class", "source", "threads", "class_kept",
          "read_depth", "class_processes", "dirty_fill", "in_flight"]


def test_observe_json_prints_exactly_the_design_fields(make_loop):
    need_tool("fio")
    dev = make_loop(512)
    fio = subprocess.Popen(fio_args(dev, rw="randread", jobs=2, seconds=4, size_mb=512),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = subprocess.run(IOAZCTL + ["observe", "--json", "--count", "3", "--device", dev],
                           capture_output=True, text=True, timeout=30)
    finally:
        fio.wait(timeout=30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3
    for line in lines:
        d = json.loads(line)
        assert list(d) == FIELDS
        assert d["device"] == dev and d["source"] == "bpf"
        # the first window may end before fio's first requests on a loaded host: no class
        assert d["class"] is None or set(d["class"]) == {"processes", "pattern", "mode"}
    busy = [json.loads(x) for x in lines][1]
    assert busy["iops"] > 100 and busy["class"]["pattern"] == "random"
    assert busy["class"]["mode"] == "read" and busy["processes"] == 2
    assert busy["threads"] == 2 and busy["class_kept"] is None   # fio jobs are processes
    assert busy["read_depth"] == pytest.approx(busy["avg_depth"], rel=0.1)   # only reads
    assert busy["class_processes"] == 2     # the class's count over its horizon: the two jobs


@pytest.mark.parametrize("args,named", [
    (["--device", "nosuchdisk0"], "nosuchdisk0"),
    (["--interval", "0"], "--interval '0'"),
    (["--interval", "soon"], "--interval 'soon'"),
    (["--count", "-1"], "--count '-1'"),
])
def test_bad_arguments_exit_non_zero_naming_the_value(args, named):
    r = subprocess.run(IOAZCTL + ["observe", "--count", "1"] + args, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode != 0
    assert named in r.stderr


def test_when_bpf_cannot_load_it_falls_back_to_diskstats_and_says_why(make_loop):
    # The venv's interpreter lives under /root, so a real unprivileged user cannot run it
    # here; a missing BPF object takes the same fallback path and must be named in the warning.
    dev = make_loop(64)
    env = dict(os.environ, IOAZ_BPF_OBJECT="/nonexistent/ioaz.bpf.o")
    r = subprocess.run(IOAZCTL + ["observe", "--json", "--count", "1", "--interval", "0.3",
                                  "--device", dev],
                       capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 0, r.stderr
    assert "/nonexistent/ioaz.bpf.o not found" in r.stderr and "diskstats" in r.stderr
    d = json.loads(r.stdout.splitlines()[0])
    assert d["source"] == "diskstats" and d["seq_ratio"] is None and d["processes"] is None


def test_source_bpf_refuses_to_fall_back(make_loop):
    dev = make_loop(64)
    env = dict(os.environ, IOAZ_BPF_OBJECT="/nonexistent/ioaz.bpf.o")
    r = subprocess.run(IOAZCTL + ["observe", "--source", "bpf", "--count", "1",
                                  "--device", dev],
                       capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode != 0 and "not found" in r.stderr
