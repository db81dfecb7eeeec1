"""Workloads whose processes start apart (WorkSpec.stagger_ms) or are measured after a
warm-up (warmup_s): their ids, fio's job file (every process measured over the same seconds,
from the warm-up's end after the last one's start), and `ioaz-lab calibrate --ids ...
--stagger-ms --warmup-s`."""
from __future__ import annotations

import configparser
import json
import shutil
import subprocess
import time

import pytest
from ioaz.lab.main import main as lab
from ioaz.learn import grid
from ioaz.learn.dataset import read_rows
from ioaz.learn.realcal import fio_jobfile, ramp_s
from ioaz.learn.simcal import sim_workload

QUICK = ["--model", "carroll-hp72", "--seconds", "0.5", "--candidates", "cfq"]


def test_an_id_names_its_workload_and_only_a_stagger_adds_a_suffix():
    for w in grid.full_grid():
        assert grid.WorkSpec.from_id(w.id) == w
        assert w.id.split("-")[-1].startswith("g")   # older datasets keep their ids
    w = grid.staggered(grid.WorkSpec(4, "seq", "read", 128), 300)
    assert w.id == "4p-seq-read-128k-t0-d1-g1_2-s300"
    assert grid.WorkSpec.from_id(w.id) == w and w.cell == "4/sequential/read/shallow"
    half = grid.WorkSpec(2, "rand", "mixed", 4, 3.0, 1, 40.0, 12.5)
    assert half.id.endswith("-s12_5") and grid.WorkSpec.from_id(half.id) == half
    one = grid.WorkSpec(1, "seq", "read", 128)
    assert grid.staggered(one, 300) == one        # one process has no one to start apart from
    warm = grid.warmed(w, 15)
    assert warm.id == "4p-seq-read-128k-t0-d1-g1_2-s300-w15"
    assert grid.WorkSpec.from_id(warm.id) == warm
    assert grid.warmed(one, 2.5).id == "1p-seq-read-128k-t0-d1-g1_2-w2_5"
    for bad in ("4p-seq-read-128k", "4p-seq-read-128k-t0-d1-g1_2-s", "0p-seq-read-4k-t0-d1-g1"):
        with pytest.raises(ValueError, match="not a workload id"):
            grid.WorkSpec.from_id(bad)
    with pytest.raises(ValueError, match="stagger_ms -1"):
        grid.WorkSpec(2, "seq", "read", 4, stagger_ms=-1)
    with pytest.raises(ValueError, match="warmup_s -2"):
        grid.WorkSpec(2, "seq", "read", 4, warmup_s=-2)


def test_fio_starts_the_processes_apart_and_reports_each_over_the_same_seconds():
    w = grid.staggered(grid.WorkSpec(3, "seq", "read", 128), 300)
    c = configparser.ConfigParser()
    c.read_string(fio_jobfile(w, "/dev/sdb", 500 * 10**9, 4.0))
    assert [c[f"p{i}"]["startdelay"] for i in range(3)] == ["0us", "300000us", "600000us"]
    assert [c[f"p{i}"]["ramp_time"] for i in range(3)] == ["600000us", "300000us", "0us"]
    assert ramp_s(w) == pytest.approx(0.6)
    together = configparser.ConfigParser()
    together.read_string(fio_jobfile(grid.WorkSpec(3, "seq", "read", 128), "/dev/sdb",
                                     500 * 10**9, 4.0))
    assert not any(k in together["p1"] for k in ("startdelay", "ramp_time"))
    warm = configparser.ConfigParser()
    warm.read_string(fio_jobfile(grid.warmed(w, 10), "/dev/sdb", 500 * 10**9, 4.0))
    assert [warm[f"p{i}"]["ramp_time"] for i in range(3)] == \
        ["10600000us", "10300000us", "10000000us"]
    assert ramp_s(grid.warmed(w, 10)) == pytest.approx(10.6)


def test_real_fio_measures_every_staggered_process_over_the_runtime(tmp_path):
    if not shutil.which("fio"):
        pytest.skip("fio is not installed (make deps installs it)")
    img = tmp_path / "f.img"
    with open(img, "wb") as f:
        f.truncate(3 << 30)
    w = grid.warmed(grid.staggered(grid.WorkSpec(3, "seq", "read", 128), 400), 0.5)
    # page-cache reads of a sparse file: what is checked is fio's timing, not a disk
    job = fio_jobfile(w, str(img), 3 << 30, 1.0).replace("direct=1", "direct=0")
    (tmp_path / "j.fio").write_text(job)
    t0 = time.monotonic()
    out = subprocess.run(["fio", "--output-format=json", str(tmp_path / "j.fio")],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    wall = time.monotonic() - t0
    report = json.loads(out[out.index("{"):])
    runtimes = [j["read"]["runtime"] for j in report["jobs"]]    # ms, ramp left out
    assert all(950 <= r <= 1300 for r in runtimes), runtimes
    assert wall >= 1.0 + ramp_s(w)                   # the ramp ran before the runtime


def test_calibrate_measures_the_named_workloads_started_apart(tmp_path, capsys):
    out = tmp_path / "d.csv"
    ids = "1p-seq-read-128k-t0-d1-g1_2,4p-seq-read-128k-t0-d1-g1_2"
    assert lab(["calibrate", *QUICK, "--ids", ids, "--stagger-ms", "300",
                "--out", str(out)]) == 0
    assert {r.workload for r in read_rows(out)} == {
        "1p-seq-read-128k-t0-d1-g1_2", "4p-seq-read-128k-t0-d1-g1_2-s300"}
    assert lab(["calibrate", *QUICK, "--ids", ids, "--warmup-s", "1", "--out",
                str(out)]) == 0
    assert {r.workload for r in read_rows(out)} >= {
        "1p-seq-read-128k-t0-d1-g1_2-w1", "4p-seq-read-128k-t0-d1-g1_2-w1"}
    capsys.readouterr()
    assert lab(["calibrate", *QUICK, "--ids", "4p-seq-read-128k", "--out", str(out)]) == 2
    assert "--ids: '4p-seq-read-128k': not a workload id" in capsys.readouterr().err
    assert lab(["calibrate", *QUICK, "--ids", ids, "--stagger-ms", "-5",
                "--out", str(out)]) == 2
    assert "--stagger-ms -5: expected 0 or more" in capsys.readouterr().err
    assert lab(["calibrate", *QUICK, "--ids", ids, "--warmup-s", "-1", "--out", str(out)]) == 2
    assert "--warmup-s -1: expected 0 or more" in capsys.readouterr().err
    assert lab(["calibrate", *QUICK, "--ids", ids, "--workloads", "3",
                "--out", str(out)]) == 2
    assert "--ids names the workloads itself" in capsys.readouterr().err


def test_a_buffered_writer_is_named_by_its_id_and_is_deep_whatever_its_own_depth():
    w = grid.WorkSpec(1, "seq", "write", 1024, buffered=True)
    assert w.id == "1p-seq-write-1024k-t0-d1-g1_2-b"
    assert grid.WorkSpec.from_id(w.id) == w
    assert w.cell == "1/sequential/write/deep"         # the flusher keeps the queue full
    assert grid.WorkSpec(1, "seq", "write", 1024).cell == "1/sequential/write/shallow"
    both = grid.warmed(grid.staggered(grid.WorkSpec(4, "seq", "write", 128, buffered=True),
                                      300), 5)
    assert both.id.endswith("-s300-w5-b") and grid.WorkSpec.from_id(both.id) == both
    with pytest.raises(ValueError, match="buffered read: only writers"):
        grid.WorkSpec(1, "seq", "read", 128, buffered=True)
    with pytest.raises(ValueError, match="buffered mixed with 1 process: .* two processes"):
        grid.WorkSpec(1, "seq", "mixed", 128, buffered=True)
    with pytest.raises(ValueError, match="not a workload id"):
        grid.WorkSpec.from_id("1p-seq-write-128k-t0-d1-g1_2-b-w5")   # -b comes last


def test_fio_writes_a_buffered_writer_through_the_page_cache_and_fsyncs_in_its_time():
    c = configparser.ConfigParser()
    c.read_string(fio_jobfile(grid.WorkSpec(2, "seq", "write", 1024, depth=8, buffered=True),
                              "/dev/sdb", 500 * 10**9, 8.0))
    g = c["global"]
    assert (g["direct"], g["ioengine"], g["end_fsync"], g["bs"]) == ("0", "psync", "1", "1024k")
    assert "iodepth" not in g              # write() returns when the page cache has it
    direct = configparser.ConfigParser()
    direct.read_string(fio_jobfile(grid.WorkSpec(2, "seq", "write", 1024, depth=8),
                                   "/dev/sdb", 500 * 10**9, 8.0))
    assert (direct["global"]["direct"], direct["global"]["iodepth"]) == ("1", "8")
    assert "end_fsync" not in direct["global"]


def test_a_buffered_mix_is_synchronous_readers_beside_write_back_writers():
    w = grid.WorkSpec(4, "seq", "mixed", 128, buffered=True)
    assert w.id == "4p-seq-mixed-128k-t0-d1-g1_2-b" and grid.WorkSpec.from_id(w.id) == w
    assert [w.proc_op(i) for i in range(4)] == ["read", "write", "read", "write"]
    assert [w.proc_buffered(i) for i in range(4)] == [False, True, False, True]
    assert w.cell == "4/sequential/read/deep"
    c = configparser.ConfigParser()
    c.read_string(fio_jobfile(w, "/dev/sdb", 500 * 10**9, 8.0))
    g = c["global"]
    assert "rw" not in g and "direct" not in g and "rwmixread" not in g
    assert g["ioengine"] == "psync" and "end_fsync" not in g
    jobs = [(c[f"p{i}"]["rw"], c[f"p{i}"]["direct"], c[f"p{i}"].get("end_fsync"))
            for i in range(4)]
    assert jobs == [("read", "1", None), ("write", "0", "1")] * 2
    # without -b a mix is every process reading and writing, O_DIRECT, as before
    plain = configparser.ConfigParser()
    plain.read_string(fio_jobfile(grid.WorkSpec(4, "seq", "mixed", 128), "/dev/sdb",
                                  500 * 10**9, 8.0))
    assert (plain["global"]["rw"], plain["global"]["direct"],
            plain["global"]["rwmixread"]) == ("rw", "1", "70")
    assert "rw" not in plain["p0"]
    # the simulator: readers synchronous, writers as the flusher sends them (8 in flight)
    procs = sim_workload(w, 1.0).phases[0].procs
    assert [(p.op, p.sync, p.depth) for p in procs] == [("read", True, 1), ("write", False, 8)] * 2


def test_cached_readers_read_through_the_page_cache_dropped_before_the_run():
    w = grid.WorkSpec(8, "seq", "mixed", 128, buffered=True, cached=True)
    assert w.id == "8p-seq-mixed-128k-t0-d1-g1_2-c-b" and grid.WorkSpec.from_id(w.id) == w
    assert [w.proc_direct(i) for i in range(4)] == [False] * 4
    c = configparser.ConfigParser()
    c.read_string(fio_jobfile(w, "/dev/sdb", 500 * 10**9, 8.0))
    assert c["global"]["invalidate"] == "1"
    assert [(c[f"p{i}"]["rw"], c[f"p{i}"]["direct"]) for i in range(2)] == \
        [("read", "0"), ("write", "0")]
    alone = grid.WorkSpec(4, "seq", "read", 128, cached=True)
    assert alone.id.endswith("-c") and grid.WorkSpec.from_id(alone.id) == alone
    a = configparser.ConfigParser()
    a.read_string(fio_jobfile(alone, "/dev/sdb", 500 * 10**9, 8.0))
    assert (a["global"]["direct"], a["global"]["rw"]) == ("0", "read")
    for bad in (grid.WorkSpec(4, "seq", "write", 128, buffered=True),
                grid.WorkSpec(4, "seq", "mixed", 128)):
        with pytest.raises(ValueError, match="only readers read through the page cache"):
            grid.WorkSpec(bad.nproc, bad.pattern, bad.op, 128, buffered=bad.buffered,
                          cached=True)
    with pytest.raises(ValueError, match="not a workload id"):
        grid.WorkSpec.from_id("4p-seq-read-128k-t0-d1-g1_2-b-c")   # -c before -b
