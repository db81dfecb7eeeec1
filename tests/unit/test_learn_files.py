"""Workloads on files (grid.WorkSpec.files, id suffix -f): the processes' files on an ext4
file system the real calibration makes on the disk (learn/calfs.py), not regions of the raw
device. The real calibration of one: tests/integration/test_calibrate_loop.py."""
from __future__ import annotations

import configparser
import subprocess

import pytest
from ioaz.learn import calfs, grid
from ioaz.learn.realcal import fio_jobfile, laid_out_files, region_bytes


def test_an_id_names_a_workload_on_files_last():
    w = grid.WorkSpec(4, "seq", "mixed", 128, buffered=True, cached=True, files=True)
    assert w.id == "4p-seq-mixed-128k-t0-d1-g1_2-c-b-f"
    assert grid.WorkSpec.from_id(w.id) == w
    assert grid.WorkSpec.from_id("2p-seq-read-128k-t0-d1-g1_2-f").files
    assert not grid.WorkSpec.from_id("2p-seq-read-128k-t0-d1-g1_2-c").files
    with pytest.raises(ValueError, match="not a workload id .* -c, -b, -f and -mMIB"):
        grid.WorkSpec.from_id("4p-seq-mixed-128k-t0-d1-g1_2-c-f-b")   # -f comes last
    # where its files lie is the file system's: the cell is the workload's, as on the device
    assert w.cell == grid.WorkSpec(4, "seq", "mixed", 128, buffered=True, cached=True).cell


def test_fio_puts_each_process_on_its_own_file_and_a_writer_writes_a_new_one():
    w = grid.WorkSpec(4, "seq", "mixed", 128, buffered=True, cached=True, files=True)
    c = configparser.ConfigParser()
    c.read_string(fio_jobfile(w, "/dev/sdb", 200 * 10**6, 8.0, "/run/x/fs-sdb"))
    g = c["global"]
    assert g["directory"] == "/run/x/fs-sdb" and "filename" not in g
    assert g["fallocate"] == "none"          # a writer's file grows as it is written
    assert g["size"] == str(region_bytes(200 * 10**6))
    jobs = [(c[f"p{i}"]["filename"], c[f"p{i}"]["rw"], c[f"p{i}"]["direct"],
             c[f"p{i}"].get("unlink"), "offset" in c[f"p{i}"]) for i in range(4)]
    assert jobs == [("r.0", "read", "0", None, False), ("w.1", "write", "0", "1", False),
                    ("r.2", "read", "0", None, False), ("w.3", "write", "0", "1", False)]
    assert laid_out_files(w) == ["r.0", "r.2"]
    # O_DIRECT readers and writers on files, and a mix of both in each process
    assert laid_out_files(grid.WorkSpec(3, "seq", "read", 128, files=True)) == \
        ["r.0", "r.1", "r.2"]
    assert laid_out_files(grid.WorkSpec(2, "seq", "write", 128, files=True)) == []
    assert laid_out_files(grid.WorkSpec(2, "rand", "mixed", 4, files=True)) == ["r.0", "r.1"]
    with pytest.raises(ValueError, match="needs the file system's directory"):
        fio_jobfile(w, "/dev/sdb", 500 * 10**9, 8.0)
    # on the raw device nothing changes
    raw = configparser.ConfigParser()
    raw.read_string(fio_jobfile(grid.WorkSpec(2, "seq", "read", 128), "/dev/sdb",
                                500 * 10**9, 8.0))
    assert raw["global"]["filename"] == "/dev/sdb" and "offset" in raw["p1"]


def test_a_workload_on_small_files_says_their_size_last_and_fio_keeps_to_it():
    w = grid.WorkSpec(10, "seq", "mixed", 128, buffered=True, cached=True, files=True,
                      file_mb=256)
    assert w.id == "10p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m256"
    assert grid.WorkSpec.from_id(w.id) == w
    assert w.span_gb == 256 * 2**20 / 1e9
    c = configparser.ConfigParser()
    c.read_string(fio_jobfile(w, "/dev/sdb", 200 * 10**9, 8.0, "/run/x/fs-sdb"))
    # time_based over a 256 MiB file: the processes go round it as S's do
    assert c["global"]["size"] == str(256 << 20) and c["global"]["time_based"] == "1"
    # a file system's share smaller than the file asked for still bounds it
    c.read_string(fio_jobfile(w, "/dev/sdb", 100 << 20, 8.0, "/run/x/fs-sdb"))
    assert c["global"]["size"] == str(100 << 20)
    with pytest.raises(ValueError, match="file size 256 MiB: .* on files .* only"):
        grid.WorkSpec(2, "seq", "read", 128, file_mb=256)
    with pytest.raises(ValueError, match="file size -1 MiB"):
        grid.WorkSpec(2, "seq", "read", 128, files=True, file_mb=-1)
    with pytest.raises(ValueError, match="not a workload id"):
        grid.WorkSpec.from_id("2p-seq-read-128k-t0-d1-g1_2-m256-f")    # -m comes after -f


def test_a_ramp_is_refused_where_the_page_cache_would_serve_it():
    with pytest.raises(ValueError, match="warm-up with cached readers: after fio's ramp"):
        grid.WorkSpec.from_id("10p-seq-mixed-128k-t0-d1-g1_2-w10-c-b-f-m256")
    with pytest.raises(ValueError, match="stagger with cached readers"):
        grid.WorkSpec(2, "seq", "read", 128, cached=True, stagger_ms=300)
    # O_DIRECT processes read and write the disk after the ramp as before it
    assert grid.WorkSpec.from_id("4p-seq-read-128k-t0-d1-g1_2-s300-w10").warmup_s == 10


def test_lay_out_writes_only_the_files_not_there_in_full(tmp_path):
    if subprocess.run(["which", "fio"], capture_output=True).returncode != 0:
        pytest.skip("fio is not installed (make deps installs it)")
    (tmp_path / "r.1").write_bytes(b"x" * (1 << 20))
    assert calfs.lay_out(tmp_path, ["r.0", "r.1"], 1 << 20) == ["r.0"]
    assert (tmp_path / "r.0").stat().st_size == 1 << 20
    assert calfs.lay_out(tmp_path, ["r.0", "r.1"], 1 << 20) == []
    assert calfs.lay_out(tmp_path, ["r.0"], 2 << 20) == ["r.0"]   # too short: written again
    assert (tmp_path / "r.0").stat().st_size == 2 << 20


def test_a_missing_tool_or_a_failed_mkfs_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(calfs, "MKFS", ["ioaz-no-such-mkfs"])
    with pytest.raises(calfs.FileSystemError, match="ioaz-no-such-mkfs is not installed"):
        with calfs.mounted("/dev/null", tmp_path / "m"):
            pass
    monkeypatch.setattr(calfs, "MKFS", ["false"])
    with pytest.raises(calfs.FileSystemError,
                       match="making a file system on /dev/null: false /dev/null exited 1"):
        with calfs.mounted("/dev/null", tmp_path / "m"):
            pass
