"""What a real calibration asks fio for, and what it reads back: one job per process on its
own slice of the device, the workload's pattern, size, depth and think time; per-process
MB/s, their min/max/mean, and latency percentiles from fio's JSON."""
from __future__ import annotations

import configparser
import subprocess
import time

import pytest
from ioaz.learn import realcal
from ioaz.learn.grid import WorkSpec, full_grid, quick, sample
from ioaz.learn.realcal import fio_jobfile, fio_outcome, job_order


def jobs(text: str) -> configparser.ConfigParser:
    c = configparser.ConfigParser()
    c.read_string(text)
    return c


def test_one_fio_job_per_process_each_on_its_own_file_where_the_workload_puts_it():
    mib = 1 << 20
    w = WorkSpec(4, "rand", "mixed", 64, think_ms=3.0, gap_gb=1.2)
    c = jobs(fio_jobfile(w, "/dev/sdb", 500 * 10**9, 2.0))
    g = c["global"]
    assert (g["rw"], g["bs"], g["rwmixread"], g["ioengine"]) == ("randrw", "64k", "70", "psync")
    assert g["thinktime"] == "3000" and g["direct"] == "1" and g["filename"] == "/dev/sdb"
    # 1 GB files from 1 GB on, 1.2 GB apart (the simulator's layout of the same workload),
    # on MiB boundaries
    assert int(g["size"]) == 10**9 // mib * mib
    offsets = [int(c[f"p{i}"]["offset"]) for i in range(4)]
    assert offsets == [int((1 + 1.2 * i) * 10**9) // mib * mib for i in range(4)]
    # 16 files 40 GB apart do not fit 500 GB: the layout shrinks by one factor until the
    # last file ends with the disk, each process still on a file of its own
    far = jobs(fio_jobfile(WorkSpec(16, "seq", "read", 128, gap_gb=40), "/dev/sdb",
                           500 * 10**9, 2.0))
    offs = [int(far[f"p{i}"]["offset"]) for i in range(16)]
    size = int(far["global"]["size"])
    assert offs[15] + size <= 500 * 10**9 and offs[15] + size > 500 * 10**9 - 2 * mib
    steps = [b - a for a, b in zip(offs, offs[1:], strict=False)]
    assert all(abs(s - steps[0]) <= mib for s in steps) and steps[0] > 30 * 10**9
    # a device barely larger than one file: the files overlap, each inside the device
    small = jobs(fio_jobfile(w, "/dev/loop9", 1 << 30, 2.0))
    size = int(small["global"]["size"])
    assert size == 10**9 // mib * mib
    assert all(0 <= int(small[f"p{i}"]["offset"]) <= (1 << 30) - size for i in range(4))
    a = jobs(fio_jobfile(WorkSpec(1, "seq", "write", 128, depth=8), "/dev/x", 1 << 30, 1))
    assert (a["global"]["rw"], a["global"]["ioengine"], a["global"]["iodepth"]) == \
        ("write", "libaio", "8")


def _job(read_bw: int, write_bw: int, p50_ns: int, p99_ns: int) -> dict:
    def d(bw: int) -> dict:
        return {"bw_bytes": bw, "total_ios": 100 if bw else 0,
                "clat_ns": {"percentile": {"50.000000": p50_ns, "99.000000": p99_ns}}}
    return {"read": d(read_bw), "write": d(write_bw)}


def test_fio_report_gives_per_process_min_max_mean_and_latency():
    r = fio_outcome({"jobs": [_job(2_000_000, 0, 1_000_000, 9_000_000),
                              _job(4_000_000, 2_000_000, 3_000_000, 5_000_000)]})
    assert r["proc_min_mb_s"] == 2.0 and r["proc_max_mb_s"] == 6.0
    assert r["proc_mean_mb_s"] == 4.0 and r["throughput_mb_s"] == 8.0
    assert r["p99_latency_s"] == 0.009 and r["requests"] == 300
    assert r["p50_latency_s"] in (0.001, 0.003)


def test_workload_ids_are_stable_and_samples_grow_as_prefixes():
    ids = [w.id for w in full_grid()]
    assert len(ids) == len(set(ids)) == 360
    assert [w.id for w in sample(120)] == [w.id for w in sample(240)][:120]
    assert [w.id for w in quick(5)] == [w.id for w in quick(14)][:5]
    assert sample(16)[0].id == "1p-seq-read-128k-t0-d1-g1_2"


def test_runs_alternate_the_candidates_within_each_workload():
    a, b = WorkSpec(1, "seq", "read", 128), WorkSpec(8, "rand", "read", 4)
    jobs = job_order([a, b], ["bfq", "none", "vr"], range(0, 3))
    assert [(w.id, c, r) for w, c, r in jobs[:9]] == [
        (a.id, "bfq", 0), (a.id, "none", 0), (a.id, "vr", 0),
        (a.id, "none", 1), (a.id, "vr", 1), (a.id, "bfq", 1),
        (a.id, "vr", 2), (a.id, "bfq", 2), (a.id, "none", 2)]
    assert {w.id for w, _, _ in jobs[9:]} == {b.id} and len(jobs) == 18
    # the next workload starts one further on: its first run is not bfq's again
    assert [c for _, c, _ in jobs[9:12]] == ["none", "vr", "bfq"]
    # every run exactly once; --first-rep keeps the rotation of the repetition's number
    assert len(set((w.id, c, r) for w, c, r in jobs)) == 18
    assert [c for _, c, _ in job_order([a], ["bfq", "none", "vr"], range(1, 2))] == \
        ["none", "vr", "bfq"]


def test_the_first_run_after_a_workload_change_falls_on_each_candidate_in_turn():
    works = [WorkSpec(p, "seq", "read", 128) for p in (1, 2, 4, 8, 16, 32)]
    cands = ["bfq", "none", "vr"]
    jobs = job_order(works, cands, range(0, 3))
    firsts = [c for (w, c, _), prev in zip(jobs, [None] + jobs[:-1], strict=True)
              if prev is None or prev[0] is not w]
    assert len(firsts) == 6 and all(firsts.count(c) == 2 for c in cands), firsts


def test_the_simulator_lays_out_the_same_files():
    from types import SimpleNamespace

    from ioaz.learn.simcal import sim_workload
    from ioaz.sim.workloads import GB, fit_layout, make_process
    sim = SimpleNamespace(device=SimpleNamespace(capacity_sectors=500 * GB))
    near = WorkSpec(4, "seq", "read", 128, gap_gb=1.2)
    specs = sim_workload(near, 1.0).phases[0].procs
    procs = [make_process(i, s, sim, 1) for i, s in enumerate(specs)]
    assert [p.lo for p in procs] == [int(near.file_gb(i) * GB) for i in range(4)]
    # each file whole, to a whole request (128 KiB: 256 sectors)
    assert all(GB - 256 < p.hi - p.lo <= GB for p in procs)
    # the engine fits a layout too large for the disk the way the job file does
    far = WorkSpec(16, "seq", "read", 128, gap_gb=40)
    starts = fit_layout([far.file_gb(i) for i in range(16)], [1.0] * 16, 500.0)
    assert starts[-1] + 1.0 == pytest.approx(500.0) and starts[1] / starts[0] == \
        pytest.approx(far.file_gb(1) / far.file_gb(0))
    assert fit_layout([1.0, 2.2], [1.0, 1.0], 500.0) == [1.0, 2.2]
    # no page cache in the simulator: a buffered writer is its write-back writer, 8 in flight
    wb = sim_workload(WorkSpec(2, "seq", "write", 1024, buffered=True), 1.0).phases[0].procs
    assert all((p.sync, p.depth, p.op) == (False, 8, "write") for p in wb)
    # the elevator sees the write-back as asynchronous, an O_DIRECT writer 8 deep (libaio:
    # REQ_SYNC) as synchronous, as the kernel's op_is_sync() does: bfq queues it per process
    aio = sim_workload(WorkSpec(2, "seq", "write", 4, depth=8), 1.0).phases[0].procs
    assert [(make_process(i, s, sim, 1).sync, s.depth) for i, s in enumerate(aio)] == \
        [(True, 8)] * 2
    assert [make_process(i, s, sim, 1).sync for i, s in enumerate(wb)] == [False] * 2


def test_a_simulated_calibration_can_run_the_drive_at_the_testbeds_queue_depth():
    from ioaz.learn.simcal import run_one
    w = WorkSpec(8, "rand", "read", 4, depth=8, gap_gb=40)
    one = run_one("wd500", w, "fcfs", 2.0, 0, 0.5)          # the model's own depth, 1
    ncq = run_one("wd500", w, "fcfs", 2.0, 0, 0.5, queue_depth=32)
    # 64 reads in flight: with a drive that holds 32 of them and picks the nearest, fewer
    # wait in the block layer (their throughput moved little when this was written: 0.47
    # and 0.48 MB/s)
    d1, d32 = one.features["avg_depth"], ncq.features["avg_depth"]
    assert d1 is not None and d32 is not None and d32 < 0.8 * d1, (d1, d32)


def test_fio_past_its_time_is_stopped_with_its_jobs_and_said(tmp_path):
    if subprocess.run(["which", "fio"], capture_output=True).returncode != 0:
        pytest.skip("fio is not installed (make deps installs it)")
    job = tmp_path / "long.fio"
    # two jobs on fio's null engine (no disk), each its own process, running 60 s
    job.write_text("[global]\nioengine=null\nsize=1m\ntime_based=1\nruntime=60\n"
                   "[a]\n[b]\n")
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"fio ran w on d past 2 s and was stopped .* not "
                                           "recorded"):
        realcal.run_fio(str(job), 2, "w on d")
    assert time.monotonic() - t0 < 30
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", str(job)], capture_output=True, text=True).stdout
    assert left == "", f"fio's jobs outlived it: {left}"
    # in time: fio's exit code and report
    job.write_text("[global]\nioengine=null\nsize=1m\n[a]\n")
    rc, out, _ = realcal.run_fio(str(job), 60, "w on d")
    assert rc == 0 and '"jobs"' in out


def test_every_run_gets_its_candidate_set_anew_from_the_originals(tmp_path):
    # an elevator kept from the run before carries that run's state into the next (bfq's
    # queues): the same candidate twice in a row is still put back and set again
    from fake_sysfs import FakeKernel
    from ioaz import sysblock as sf
    from ioaz.actuate.actuator import Actuator
    from ioaz.actuate.state import StateStore

    k = FakeKernel(tmp_path / "sys")
    k.add_device("sdb", active="mq-deadline", queue_depth=1, dev="8:16")
    k.log.clear()
    q = realcal.Candidates("sdb", Actuator(k, StateStore(tmp_path / "run"), sleep=lambda s: None))
    q.set("bfq", {"slice_idle": 8})
    q.set("bfq", {"slice_idle": 8})
    q.set("kyber", {})
    q.restore()
    assert [v for _, key, v in k.log if key == sf.SCHEDULER] == [
        "bfq", "mq-deadline", "bfq", "mq-deadline", "kyber", "mq-deadline"]


def _wbt_under(q, k, scheds) -> list[str]:
    """queue/wbt_lat_usec under each scheduler Candidates sets in turn, then restores."""
    from ioaz import sysblock as sf
    seen = []
    for sched in scheds:
        q.set(sched, {})
        seen.append(k.read(q.name, sf.WBT_LAT_USEC))
    q.restore()
    return seen


def test_candidates_run_with_writeback_throttling_off_as_ioazd_runs_a_rotating_disk(tmp_path):
    # the kernel ties throttling to the scheduler (off under bfq only); ioazd turns it off under
    # every scheduler on a rotating disk, so the calibration measures each candidate that way
    from fake_sysfs import FakeKernel
    from ioaz import sysblock as sf
    from ioaz.actuate.actuator import Actuator
    from ioaz.actuate.state import StateStore

    k = FakeKernel(tmp_path / "sys")
    k.add_device("sdb", active="mq-deadline", queue_depth=1, dev="8:16", rotational=True)
    (k.device_dir("sdb") / sf.WBT_LAT_USEC).write_text("75000\n")
    act = Actuator(k, StateStore(tmp_path / "run"), sleep=lambda s: None)
    mode, note = realcal.wbt_mode("sdb", act, k, "auto")
    assert mode == "off" and "off under every candidate" in note
    assert _wbt_under(realcal.Candidates("sdb", act, mode), k, ("kyber", "mq-deadline", "bfq")) \
        == ["0", "0", "0"]
    assert k.read("sdb", sf.WBT_LAT_USEC) == "75000"          # the original given back

    # `kernel`: the kernel's tie, written with each candidate, since a restore ended it
    mode, note = realcal.wbt_mode("sdb", act, k, "kernel")
    assert mode == "kernel" and "as the kernel ties it" in note
    assert _wbt_under(realcal.Candidates("sdb", act, mode), k, ("kyber", "bfq", "mq-deadline")) \
        == ["-1", "0", "-1"]                                  # -1: the kernel's own target
    assert k.read("sdb", sf.WBT_LAT_USEC) == "75000"


def test_a_disk_that_does_not_spin_keeps_its_writeback_throttling(tmp_path):
    from fake_sysfs import FakeKernel
    from ioaz import sysblock as sf
    from ioaz.actuate.actuator import Actuator
    from ioaz.actuate.state import StateStore

    k = FakeKernel(tmp_path / "sys")
    k.add_device("nvme0n1", active="none", dev="259:0", rotational=False)
    (k.device_dir("nvme0n1") / sf.WBT_LAT_USEC).write_text("2000\n")
    act = Actuator(k, StateStore(tmp_path / "run"), sleep=lambda s: None)
    mode, note = realcal.wbt_mode("nvme0n1", act, k, "auto")
    assert mode is None and "not a rotating disk" in note
    k.log.clear()
    q = realcal.Candidates("nvme0n1", act, mode)
    q.set("kyber", {})
    q.restore()
    assert [key for _, key, _ in k.log if key == sf.WBT_LAT_USEC] == []


def test_udev_does_not_watch_the_calibrated_disk_and_watches_it_again_after(monkeypatch, tmp_path):
    """The rule that takes udev's watch off the disk is there while the calibration runs and
    gone after, even when it fails (realcal.udev_unwatched says why; the guest's calibration is
    the real test, decision_matrices/kernel/README.md). No udev running: nothing is written."""
    ran: list[list[str]] = []
    monkeypatch.setattr(realcal.subprocess, "run",
                        lambda cmd, **kw: ran.append(cmd) or subprocess.CompletedProcess(cmd, 0))
    monkeypatch.setattr(realcal.shutil, "which", lambda name: f"/usr/bin/{name}")
    rules, control = tmp_path / "rules.d", tmp_path / "control"
    with realcal.udev_unwatched("sdb", rules, control) as said:
        assert said == "no udev running"
    assert ran == [] and not rules.exists()
    control.touch()
    with pytest.raises(RuntimeError, match="fio failed"):
        with realcal.udev_unwatched("sdb", rules, control) as said:
            rule = rules / "61-ioaz-calibrate-sdb.rules"
            assert 'KERNEL=="sdb", OPTIONS+="nowatch"' in rule.read_text()
            assert "watch off on sdb" in said
            assert ["udevadm", "trigger", "--action=change", "--settle", "/dev/sdb"] in ran
            raise RuntimeError("fio failed")
    assert not rule.exists() and len(ran) == 4   # reloaded and triggered again after


def test_a_candidate_asked_for_and_not_offered_refuses_the_calibration(tmp_path):
    # without ioaz's module vr falls back to mq-deadline, which deadline already stands for:
    # dropped quietly, a calibration of "every candidate" measured half of them
    from fake_sysfs import FakeKernel

    k = FakeKernel(tmp_path / "sys")
    k.add_device("sda", active="mq-deadline", rotational=True)
    cands = realcal.candidates("sda", k)
    assert "vr" not in cands and "stream" not in cands
    with pytest.raises(realcal.Refused) as e:
        realcal.chosen(cands, ["deadline", "vr", "stream"], "sda", k)
    msg = str(e.value)
    assert msg.startswith("--candidates: vr, stream: sda's kernel does not offer stream, vr")
    assert "queue/scheduler lists none mq-deadline kyber bfq" in msg and "insmod" in msg
    with pytest.raises(realcal.Refused, match=r"--candidates: strem: no such policy \(policies"):
        realcal.chosen(cands, ["deadline", "strem"], "sda", k)
    # what the kernel offers is chosen, in candidates()'s order
    assert list(realcal.chosen(cands, ["kyber", "deadline"], "sda", k)) == ["deadline", "kyber"]

    k.add_device("sdb", active="mq-deadline", rotational=True, dev="8:16",
                 available=("none", "mq-deadline", "kyber", "bfq", "fifo", "vr", "stream"))
    got = realcal.chosen(realcal.candidates("sdb", k), ["deadline", "vr", "sstf", "stream"],
                         "sdb", k)
    assert got["vr"][0] == got["sstf"][0] == "vr" and got["stream"][0] == "stream"
