"""What ran on the host beside a bench (ioaz/lab/testbench/host_load.py): on the real /proc, a
process that burns CPU outside the bench's tree is named with its time; on a made-up /proc, the
reading of its files and the counting of children that came and went."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from ioaz.lab.testbench import host_load
from ioaz.lab.testbench.host_load import (
    CLK_TCK,
    HostLoad,
    describe,
    read_cpu_busy_s,
    read_processes,
    read_samples,
    sample_between,
    summary,
)

# burns 1.5 s, then lives on past two samples: the time of a child that exits between samples
# goes to its parent (pytest here), so an exit right after the burn would hide its last part
BURN = ("import time\nt = time.process_time()\nwhile time.process_time() - t < 1.5: pass\n"
        "time.sleep(1.2)\n")


def test_a_process_outside_the_bench_is_named_with_its_cpu_time(tmp_path):
    # the bench's root: a sleeping process, so this test's own children are not below it
    bench = subprocess.Popen(["sleep", "30"])
    try:
        load = HostLoad(tmp_path / "host.jsonl", root=bench.pid, period_s=0.5).start()
        # a name of its own: other Pythons on a busy host (this test's own sampling thread,
        # a test runner beside it) are counted under `python3` too
        burn = tmp_path / "ioaz-burner"
        burn.symlink_to(sys.executable)
        burner = subprocess.run([str(burn), "-c", BURN], check=True)
        time.sleep(0.6)
        load.stop()
    finally:
        bench.kill()
        bench.wait()
    assert burner.returncode == 0
    samples = read_samples(tmp_path / "host.jsonl")
    assert len(samples) >= 3, samples
    s = summary(samples)
    assert s is not None
    burnt = dict(s["top"]).get("ioaz-burner", 0)
    # the whole 1.5 s, counted once (a tick or two of rounding and start-up either side)
    assert 1.3 <= burnt <= 2.2, s
    assert s["ours"] < 0.05, s       # sleep used nothing
    assert s["others"] * s["cpus"] * s["seconds"] >= 1.3, s
    assert "ioaz-burner" in describe(s).split("the busiest other processes:")[1], describe(s)


def fake_proc(root: Path, cpu_line: str, procs: dict[int, tuple[str, int, int]]) -> Path:
    """A /proc with a stat file and one stat per process: pid -> (comm, ppid, ticks), the
    ticks split between its user, system and children's times."""
    root.mkdir(exist_ok=True)
    (root / "stat").write_text(f"{cpu_line}\ncpu0 1 0 0 0 0 0 0 0 0 0\n"
                               "cpu1 1 0 0 0 0 0 0 0 0 0\nintr 5\n")
    for d in root.iterdir():
        if d.is_dir():
            (d / "stat").unlink()
            d.rmdir()
    for pid, (comm, ppid, ticks) in procs.items():
        (root / str(pid)).mkdir()
        times = [str(ticks // 2), str(ticks - ticks // 2), "0", "0"]
        rest = ["S", str(ppid)] + ["0"] * 9 + times + ["20", "0", "1", "0", str(pid * 100)]
        (root / str(pid) / "stat").write_text(f"{pid} ({comm}) {' '.join(rest)} 4096\n")
    (root / "self").mkdir(exist_ok=True)   # not a pid: skipped
    return root


def test_proc_files_are_read_as_the_kernel_writes_them(tmp_path):
    p = fake_proc(tmp_path / "proc", f"cpu  {3 * CLK_TCK} 0 {CLK_TCK} {50 * CLK_TCK} "
                  f"{2 * CLK_TCK} 0 0 0 0 0", {7: ("a (weird) name", 1, 3 * CLK_TCK),
                                                 8: ("kworker/u8:5-writeback", 2, 0)})
    busy, cpus = read_cpu_busy_s(p)
    assert (busy, cpus) == (4.0, 2)          # user + system; idle and iowait are not busy
    assert read_processes(p) == {7: ("a (weird) name", 1, 3.0, 700), 8: ("kworker", 2, 0.0, 800)}


def test_a_child_gone_is_counted_once_in_its_parent():
    old = {1: ("init", 0, 0.0, 1), 10: ("bench", 1, 1.0, 2), 20: ("make", 1, 2.0, 3),
           21: ("cc1", 20, 5.0, 4)}
    # cc1 ran 1 s more and exited; make waited for it: its children's time holds all 6 s
    new = {1: ("init", 0, 0.0, 1), 10: ("bench", 1, 1.5, 2), 20: ("make", 1, 2.0 + 6.0, 3),
           30: ("gzip", 1, 0.25, 5)}
    mine, beside = sample_between(old, new, {10})
    assert mine == 0.5
    assert beside == {"make": 1.0, "gzip": 0.25}


def test_a_reused_pid_counts_from_its_start():
    old = {5: ("old", 1, 9.0, 10)}
    mine, beside = sample_between(old, {5: ("new", 1, 0.5, 99)}, set())
    assert (mine, beside) == (0.0, {"new": 0.5})
    # the same process, its name changed: counted from the old read
    mine, beside = sample_between(old, {5: ("renamed", 1, 9.5, 10)}, set())
    assert (mine, beside) == (0.0, {"renamed": 0.5})


def test_summary_takes_the_samples_within_the_span():
    samples = [{"t": 105.0 + 5 * i, "dt": 5.0, "cpus": 2, "busy_s": 4.0, "ours_s": 3.0,
                "others_s": 1.0, "beside": {"pytest": 1.0}} for i in range(4)]
    s = summary(samples)
    assert s is not None and s["seconds"] == 20 and s["busy"] == 0.4 and s["ours"] == 0.3
    assert s["others"] == 0.1 and s["top"] == [("pytest", 4.0)]
    part = summary(samples, start=105.0, end=115.0)   # the samples whose middle is within
    assert part is not None and part["seconds"] == 10.0, part
    assert summary(samples, start=500.0) is None
    assert describe(None) == "not measured"


@pytest.mark.parametrize("text", ["", "not json\n"])
def test_unreadable_samples_are_none(tmp_path, text):
    f = tmp_path / "host.jsonl"
    f.write_text(text)
    assert read_samples(f) == [] and summary(read_samples(f)) is None
    assert read_samples(tmp_path / "absent.jsonl") == []
    assert host_load.PERIOD_S > 0


def test_each_run_gets_the_hosts_others_while_it_ran_in_the_report(tmp_path):
    """A run's span ends when its output file was last written (the host's clock); the bench
    keeps each run's share in meta.json, and the report gives each contender's mean."""
    import json
    import os

    from ioaz.lab.report import Report
    from ioaz.lab.testbench import bench, bench_report
    results = tmp_path / "guest"
    (results / "raw").mkdir(parents=True)
    (results / "guest.json").write_text(json.dumps({"fs": "sda", "raw": "sdb"}))
    (results / "plan.json").write_text(json.dumps({"phase_s": 20}))
    pm = ("\t20.00 megabytes read (2.00 megabytes per second)\n"
          "\t10.00 megabytes written (1.00 megabytes per second)\nwall 100.0 110.0\n")
    lines = []
    for c, end in (("mq-deadline", 1000.0), ("bfq", 1100.0)):
        (results / "raw" / f"pm.{c}.out").write_text(pm)
        os.utime(results / "raw" / f"pm.{c}.out", (end, end))
    stat = {"sda": [0] * 17, "sdb": [0] * 17}
    for c in ("mq-deadline", "bfq", "kyber"):
        lines.append(json.dumps({"workload": "postmark", "contender": c, "round": 0, "rc": 0,
                                 "wall_s": 10.0, "out": f"pm.{c}.out", "stat_before": stat,
                                 "stat_after": stat}))
    (results / "runs.jsonl").write_text("\n".join(lines) + "\n")
    (results / "raw" / "pm.kyber.out").write_text(pm)   # ended now: no sample covers it
    # 2 CPUs; the others took 1 CPU-second in 5 around the first run, 8 around the second
    samples = [{"t": t, "dt": 5.0, "cpus": 2, "busy_s": 9.0, "ours_s": 9.0 - o,
                "others_s": o, "beside": {"pytest": o}}
               for t, o in ((995.0, 1.0), (1000.0, 1.0), (1095.0, 8.0), (1100.0, 8.0))]
    runs = bench.host_beside_runs(samples, results)
    assert runs == {"pm.mq-deadline.out": 0.1, "pm.bfq.out": 0.8}, runs
    meta = {"phase_s": 20, "rounds": 1, "runtime_s": 10, "model": "wd500", "kernel": "6.12",
            "path_credit_us": 350, "host": summary(samples), "host_runs": runs}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    got = bench.collect(results)
    assert got["postmark"]["bfq"][0]["host_others"] == 0.8
    assert got["postmark"]["kyber"][0]["host_others"] is None
    rep = Report(tmp_path / "report", "t")
    bench_report.write(rep, bench_report.analyse(got), meta)
    text = "\n".join(ln for sec in rep.sections for ln in sec.lines)
    (head,) = [ln for ln in text.splitlines() if ln.startswith("| contender |")]
    assert "| host's others |" in head
    assert "| 80% |" in text and "| 10% |" in text
    assert "the rest of the host took 45.0% of its 2 CPUs over 0 min" in text
    assert "the busiest other processes: pytest 18 s" in text
