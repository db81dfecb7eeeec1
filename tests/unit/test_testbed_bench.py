"""The testbed bench's reading of its runs: fio, dd and sysbench output, disk statistics, the
confidence intervals, the order of the contenders and the per-phase oracle. The bench itself
(a boot of the guest, every contender on model disks) runs in `make bench`."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ioaz.lab.testbench import bench, bench_report, measure, workloads
from ioaz.lab.testbench.guest_bench import order

SYSBENCH_OUT = """
File operations:
    reads/s:                      61.02
    writes/s:                     40.68
    fsyncs/s:                     0.00

Throughput:
    read, MiB/s:                  0.95
    written, MiB/s:               0.64

Latency (ms):
         min:                                    0.01
         avg:                                   39.29
         max:                                  411.32
         99th percentile:                      196.89
"""


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (make deps)")
def test_fio_parse_matches_fio_own_numbers(tmp_path: Path) -> None:
    """Real fio: two stonewalled groups give their mean (each phase as long), concurrent
    groups their sum; p99 from the merged json+ bins lies inside fio's own latency range."""
    out = subprocess.run(
        ["fio", "--output-format=json+", "--eta=never", f"--filename={tmp_path}/f",
         "--size=8m", "--time_based", "--runtime=1", "--group_reporting",
         "--name=a", "--rw=read", "--bs=4k", "--numjobs=2",
         "--name=b", "--stonewall", "--new_group", "--rw=randread", "--bs=4k"],
        capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    bw = {x["jobname"]: x["read"]["bw_bytes"] / 1e6 for x in j["jobs"]}
    mean, p99, groups, group_p99 = measure.fio(out, stonewalled=True)
    assert groups == pytest.approx(bw)
    assert mean == pytest.approx((bw["a"] + bw["b"]) / 2)
    total, _, _, _ = measure.fio(out, stonewalled=False)
    assert total == pytest.approx(bw["a"] + bw["b"])
    lo = min(x["read"]["clat_ns"]["min"] for x in j["jobs"]) / 1e6
    hi = max(x["read"]["clat_ns"]["max"] for x in j["jobs"]) / 1e6
    assert p99 is not None and lo <= p99 <= hi * 1.1
    # each group's own p99 lies inside its own jobs' range, and the pooled one is among them
    for name in ("a", "b"):
        mine = [x["read"]["clat_ns"] for x in j["jobs"] if x["jobname"] == name]
        assert (min(c["min"] for c in mine) / 1e6 <= group_p99[name]
                <= max(c["max"] for c in mine) / 1e6 * 1.1)
    assert min(group_p99.values()) <= p99 <= max(group_p99.values())


def test_dd_and_sysbench_and_disk_stat() -> None:
    assert measure.dd("1024+0 records in\n1024+0 records out\n1073741824 bytes (1.1 GB, "
                      "1.0 GiB) copied, 21.4748 s, 50.0 MB/s\n") == pytest.approx(50.0, 0.01)
    mb, p99 = measure.sysbench(SYSBENCH_OUT)
    assert mb == pytest.approx((0.95 + 0.64) * 1.048576)
    assert p99 == pytest.approx(196.89)
    with pytest.raises(ValueError, match="no sysbench throughput"):
        measure.sysbench("FATAL: cannot open file")
    with pytest.raises(ValueError, match="no dd summary"):
        measure.dd("dd: error writing '/dev/sdb1': No space left on device")
    before = [0, 0, 1000, 0, 0, 0, 3000] + [0] * 10
    after = [0, 0, 3000, 0, 0, 0, 5000] + [0] * 10
    assert measure.disk_mb_s(before, after, 2.0) == pytest.approx(4000 * 512 / 2 / 1e6)


# pgbench's and dbench's reports (the end of dbench's), from the testbed guest (PostgreSQL 15,
# dbench 4.0 of Debian 12)
PGBENCH_OUT = """pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 150
query mode: simple
number of clients: 8
number of threads: 2
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 553
number of failed transactions: 0 (0.000%)
latency average = 143.871 ms
initial connection time = 200.745 ms
tps = 55.605418 (without initial connection time)
Dirty:             51236 kB
Writeback:             0 kB
wall 1000.5 1012.5
"""
DBENCH_OUT = """dbench version 4.00 - Copyright Andrew Tridgell 1999-2004

Running for 120 seconds with load '/usr/share/dbench/client.txt' and minimum warmup 24 secs
 ReadX          10975     0.040    30.348
 LockX             24     0.244     4.419
 UnlockX           24     0.176     3.789
 Flush            440    68.942   125.964

Throughput 20.345 MB/sec  4 clients  4 procs  max_latency=125.998 ms
Dirty:             20480 kB
Writeback:             0 kB
closing sync 500.0 504.0
"""

# postmark 1.51's report (Debian's 1.53 package), as the binary printed it on this host
POSTMARK_OUT = """PostMark v1.51 : 8/14/01
Reading configuration from file '/tmp/pm.cfg'
Creating files...Done
Performing transactions..........Done
Deleting files...Done
Time:
\t1 seconds total
\t1 seconds of transactions (2000 per second)

Data:
\t5.96 megabytes read (5.96 megabytes per second)
\t9.60 kilobytes written (9.60 kilobytes per second)
wall 100.25 102.75
"""


def test_application_parsers() -> None:
    """postmark: its bytes (in the unit it chose for each) over the script's wall time, not its
    whole seconds; pgbench: its transactions over the script's wall time; dbench: its
    throughput with its closing sync; each refuses output without what it needs."""
    assert measure.postmark(POSTMARK_OUT) == pytest.approx(
        (5.96 * 1024 ** 2 + 9.60 * 1024) / 2.5 / 1e6)
    with pytest.raises(ValueError, match="no 'wall' line after postmark"):
        measure.postmark(POSTMARK_OUT.replace("wall 100.25 102.75\n", ""))
    with pytest.raises(ValueError, match="no postmark bytes read"):
        measure.postmark("Error: could not create directory\n")
    # 553 transactions over 12 s from pgbench's start to the end of the shutdown checkpoint,
    # not pgbench's own 55.6 tps
    assert measure.pgbench(PGBENCH_OUT) == pytest.approx(553 / 12.0)
    with pytest.raises(ValueError, match="no 'wall' line after pgbench"):
        measure.pgbench(PGBENCH_OUT.replace("wall 1000.5 1012.5\n", ""))
    with pytest.raises(ValueError, match="no pgbench transaction count"):
        measure.pgbench("pgbench: error: connection to server failed\n")
    # 20.345 MB/s over the 96 s after the warm-up, spread over those and the 4 s closing sync
    assert measure.dbench(DBENCH_OUT) == pytest.approx(20.345 * 96 / 100)
    with pytest.raises(ValueError, match="no 'closing sync' line after dbench"):
        measure.dbench(DBENCH_OUT.replace("closing sync 500.0 504.0\n", ""))
    with pytest.raises(ValueError, match="no dbench 'Running for' line"):
        measure.dbench(DBENCH_OUT.split("\n", 3)[3])
    with pytest.raises(ValueError, match="no dbench throughput"):
        measure.dbench("ERROR: failed to open /usr/share/dbench/client.txt\n")


def test_confidence_interval() -> None:
    s = measure.summarize([10.0, 12.0, 11.0])
    assert s.mean == pytest.approx(11.0)
    assert s.ci95 == pytest.approx(4.303 * 1.0 / 3 ** 0.5)
    assert measure.summarize([5.0]).ci95 == 0.0
    r = measure.ratio_ci([2.0, 4.0], [1.0, 2.0])   # paired: the drift between rounds cancels
    assert (r.mean, r.ci95) == (2.0, 0.0)


def test_order_rotates_and_reverses() -> None:
    cs = ["a", "b", "c", "d"]
    firsts = {order(cs, r, 0)[0] for r in range(4)}
    assert firsts == set(cs)                      # each goes first once in four rounds
    assert order(cs, 0, 0) == ["a", "b", "c", "d"]
    assert order(cs, 1, 0) == ["b", "a", "d", "c"]  # the other way round
    assert sorted(order(cs, 3, 2)) == cs          # everyone, once


def test_workload_selection() -> None:
    assert [w.name for w in workloads.select("zero,phases")] == ["phases", "zero"]
    with pytest.raises(ValueError, match="unknown workload.*nope"):
        workloads.select("zero,nope")


def _row(rnd: int, mb: float, phases: dict[str, float] | None = None,
         p99: float | None = 10.0) -> dict:
    return {"round": rnd, "rc": 0, "mb_s": mb, "p99_ms": p99, "disk_mb_s": mb,
            "phases": phases or {}}


def test_analysis_oracle_and_targets() -> None:
    """Two static schedulers each best on one phase: the oracle takes the better of each; ioazd
    is measured against the best static per round and against the oracle."""
    ph = workloads.BY_NAME["phases"].phases
    a = dict.fromkeys(ph, 10.0) | {ph[0]: 30.0}
    b = dict.fromkeys(ph, 12.0)
    runs = {"none": [_row(r, 15.0, a) for r in range(2)],
            "mq-deadline": [_row(r, 12.0, b) for r in range(2)],
            "ioazd": [_row(r, 16.0, dict.fromkeys(ph, 16.0)) for r in range(2)]}
    an = bench_report.analyse({"phases": runs})
    w = an["workloads"]["phases"]
    assert w["best_static"] == "none"
    assert w["oracle_choice"][ph[0]] == "none" and w["oracle_choice"][ph[1]] == "mq-deadline"
    assert w["oracle_mb_s"] == pytest.approx((30 + 12 * 3) / 4)
    me = w["contenders"]["ioazd"]
    assert me["vs_best"] == pytest.approx(16 / 15)
    assert me["vs_oracle"] == pytest.approx(16 / 16.5)
    got = {t: met for t, _, met in an["targets"]}
    assert got["ioazd >= best static on every workload (p99 within +10%)"] == "met"
    assert got["ioazd >= 95% of the per-phase oracle (phases)"] == "met"
    assert got["ioazd ahead of the kernel default (mq-deadline) over all workloads"] == "met"
    # under one static scheduler there is no per-phase oracle to choose, and none is claimed
    del runs["none"]
    an = bench_report.analyse({"phases": runs})
    assert "oracle_mb_s" not in an["workloads"]["phases"]
    assert "vs_oracle" not in an["workloads"]["phases"]["contenders"]["ioazd"]
    assert not [t for t, _, _ in an["targets"] if "oracle" in t]


def test_a_mix_is_reported_phase_by_phase() -> None:
    """A mix's pooled p99 is its slowest phase's: the report gives each phase's MB/s and p99
    against the best static's same phase, paired by round, beside the pooled figures."""
    ph = workloads.BY_NAME["phases"].phases
    def row(rnd: int, mb: dict[str, float], p99: dict[str, float]) -> dict:
        return _row(rnd, sum(mb.values()) / len(mb), mb, max(p99.values())) | {"phase_p99": p99}
    best_p99 = dict.fromkeys(ph, 20.0) | {ph[0]: 2000.0}
    mine_p99 = dict.fromkeys(ph, 25.0) | {ph[0]: 400.0}
    runs = {"bfq": [row(r, dict.fromkeys(ph, 10.0), best_p99) for r in range(2)],
            "ioazd": [row(r, dict.fromkeys(ph, 11.0) | {ph[1]: 9.0 + r}, mine_p99)
                      for r in range(2)]}
    an = bench_report.analyse({"phases": runs})
    me = an["workloads"]["phases"]["contenders"]["ioazd"]
    assert me["p99_vs_best"] == pytest.approx(0.2)            # pooled: the first phase's
    assert me["phases"][ph[0]]["p99_vs_best"] == pytest.approx(0.2)
    assert me["phases"][ph[2]]["p99_vs_best"] == pytest.approx(1.25)
    assert me["phases"][ph[1]]["mb_s"] == pytest.approx(9.5)
    assert me["phases"][ph[1]]["vs_best"] == pytest.approx(0.95)
    # the target stays on the mix's figures as before; the phases are reported beside them
    got = {t: met for t, _, met in an["targets"]}
    assert got["ioazd >= best static on every workload (p99 within +10%)"] == "met"
    # a run without per-phase latencies (an older guest_bench) has none, not a wrong one
    for rs in runs.values():
        for r in rs:
            del r["phase_p99"]
    me = bench_report.analyse({"phases": runs})["workloads"]["phases"]["contenders"]["ioazd"]
    assert math.isnan(me["phases"][ph[0]]["p99_ms"])


def test_the_sum_is_also_given_per_family() -> None:
    """Sequential and random workloads are summed apart too (a reviewer's rule for HDD
    scheduler results), each over its own workloads only."""
    def two(best: float, mine: float) -> dict:
        return {"bfq": [_row(r, best) for r in range(2)],
                "ioazd": [_row(r, mine) for r in range(2)]}
    an = bench_report.analyse({"s-10r-seq": two(10.0, 8.0), "s-1r-seq": two(10.0, 10.0),
                               "s-10r-rand": two(1.0, 1.5)})
    fam = an["mean_vs_best_by_family"]
    assert fam["seq"]["ioazd"] == pytest.approx(0.9) and fam["seq"]["bfq"] == 1.0
    assert fam["rand"]["ioazd"] == pytest.approx(1.5)
    assert "mixed" not in fam
    assert an["mean_vs_best"]["ioazd"] == pytest.approx((0.8 + 1.0 + 1.5) / 3)


def test_a_workload_without_latency_passes_the_target_on_throughput() -> None:
    """dbench, pgbench, postmark and dd give no p99: the target is judged on throughput alone
    there (a missing p99 is not a miss), and a p99 10% over the best static's still fails."""
    runs = {"bfq": [_row(r, 10.0, p99=None) for r in range(2)],
            "ioazd": [_row(r, 10.5, p99=None) for r in range(2)]}
    got = {t: met for t, _, met in bench_report.analyse({"dbench": runs})["targets"]}
    assert got["ioazd >= best static on every workload (p99 within +10%)"] == "met"
    runs = {"bfq": [_row(r, 10.0, p99=10.0) for r in range(2)],
            "ioazd": [_row(r, 10.5, p99=11.5) for r in range(2)]}
    got = {t: met for t, _, met in bench_report.analyse({"s-10r-seq": runs})["targets"]}
    assert got["ioazd >= best static on every workload (p99 within +10%)"] == "not met"


def test_simulator_comparison() -> None:
    """The kernel's per-scheduler means (a mix by phase) set beside the simulator's: the
    winners agree when the kernel's is within 2% of the simulator's best; ratios within 20%."""
    from ioaz.lab.testbench import bench_sim

    ph = workloads.BY_NAME["phases"].phases
    table = {"par-read": {"mq-deadline": [_row(0, 10.0), _row(1, 12.0)],
                          "stream": [_row(0, 5.0), _row(1, 7.0)],
                          "ioazd": [_row(0, 11.0)]},
             "phases": {"mq-deadline": [_row(0, 1.0, dict.fromkeys(ph, 4.0))]}}
    real = bench_sim.real_means(table)
    assert real["par-read"] == {"mq-deadline": 11.0, "stream": 6.0}   # ioazd has no twin
    assert real[f"phases:{ph[0]}"] == {"mq-deadline": 4.0}
    cmp = bench_sim.compare(real, {"par-read": {"mq-deadline": 20.0, "stream": 20.2}})
    r = cmp["par-read"]
    assert r["real_winner"] == "mq-deadline" and r["sim_winner"] == "stream"
    assert r["same_winner"]                       # a tie in the simulator ...
    assert r["sim_blind"]                         # ... that parted nothing the kernel did
    assert r["ratios_within_20pct"] == 1          # mq-deadline agrees, stream does not
    r = bench_sim.compare(real, {"par-read": {"mq-deadline": 20.0, "stream": 16.0}})["par-read"]
    assert r["same_winner"] and not r["sim_blind"]
    cmp = bench_sim.compare(real, {"par-read": {"mq-deadline": 10.0, "stream": 30.0}})
    assert not cmp["par-read"]["same_winner"]
    # one scheduler on the kernel: no ranking to agree with, so not counted either way
    assert bench_sim.compare(real, {f"phases:{ph[0]}": {"mq-deadline": 3.0, "stream": 9.0}}) \
        == {}
    twins = bench_sim.twins(5, 5)
    assert set(twins) == {"par-read", *(f"phases:{p}" for p in ph)}


@pytest.mark.parametrize("default,nr_requests,tags", [
    ("mq-deadline", "64", 32),    # the guest's SATA disks, at queue depth 1 as at 32
    ("none", "32", 32),
    ("mq-deadline", "256", 256),  # at the cap: 2 x 128, the tags are at least 128
])
def test_the_simulator_gets_the_guest_disks_tags_not_its_queue_depth(
        tmp_path: Path, default: str, nr_requests: str, tags: int) -> None:
    """The simulator's twin holds as many requests as the guest's scheduler could: read from
    the raw disk's nr_requests under the default scheduler, never from its queue depth."""
    from ioaz.sim.schedulers import blk_mq_nr_requests

    (tmp_path / "guest.json").write_text(json.dumps({
        "raw": "sda", "members": [], "queue_depth": {"sda": 1},
        "default_scheduler": {"sda": default}, "nr_requests": {"sda": nr_requests}}))
    assert bench.guest_tags(tmp_path) == tags
    assert str(blk_mq_nr_requests(tags)(default)) == nr_requests


def test_dry_run_control_and_timeline(tmp_path: Path) -> None:
    """ioazd-dry is a control, not a contender for the targets; its (dry) switches are not
    in a timeline; its cost is its throughput over the kernel default's, paired by round."""

    cfg = bench.contender_configs(["ioazd", bench.DRY, "ioazd-throughput", "bfq"])
    assert set(cfg) == {"ioazd", bench.DRY, "ioazd-throughput"}
    assert cfg[bench.DRY]["dry_run"] is True and cfg["ioazd"]["dry_run"] is False
    assert cfg["ioazd-throughput"]["decide"]["goal"] == "throughput"
    log = tmp_path / "x.ioazd.log"
    log.write_text(
        '1.0 {"event": "start"}\n2.0 @@ workload start\n'
        '4.5 x INFO {"event": "switch", "device": "sdb", "to": "bfq", "policy": "anticipatory",'
        ' "reason": "matrix", "dry_run": false}\n'
        '5.0 x INFO {"event": "switch", "device": "sdb", "to": "none", "policy": "fcfs",'
        ' "reason": "matrix", "dry_run": true}\n'
        '6.0 x INFO {"event": "switch", "device": "sda", "to": "none", "dry_run": false}\n'
        '9.0 x INFO {"event": "trial", "device": "sdb", "outcome": "kept", "cell": "8",'
        ' "base": "stream", "candidate": "anticipatory", "gain": 0.1234, "why": "w"}\n')
    tl = bench.timeline(log, "sdb")
    assert [(e["t"], e["to"]) for e in tl] == [(2.5, "bfq"), (7.0, None)]
    # a kept trial switches nothing: the timeline says how it ended
    assert [bench_report._timeline_entry(e) for e in tl] == [
        "2.5 s bfq (anticipatory, matrix)", "7 s trial of anticipatory kept +12%"]
    over = bench.DRY_OVER + bench.STREAM_TUNED
    runs = {"mq-deadline": [_row(0, 10.0), _row(1, 20.0)],
            bench.DRY: [_row(0, 9.0), _row(1, 18.0)],
            bench.STREAM_TUNED: [_row(0, 30.0), _row(1, 40.0)],
            over: [_row(0, 24.0), _row(1, 32.0)]}
    an = bench_report.analyse({"par-read": runs})
    assert an["observe_cost"]["par-read"]["ratio"] == pytest.approx(0.9)
    # the control over stream-tuned is paired with stream-tuned, not the default
    assert an["observe_cost"][f"par-read ({over})"]["ratio"] == pytest.approx(0.8)
    runs[over][0]["sched_counters"] = {"waits": 10, "waits_paid": 9}
    runs[over][1]["sched_counters"] = {"waits": 20, "waits_paid": 15}
    an = bench_report.analyse({"par-read": runs})
    assert an["workloads"]["par-read"]["contenders"][over]["sched_counters"] == \
        {"waits": 15, "waits_paid": 12}
    assert "sched_counters" not in an["workloads"]["par-read"]["contenders"]["mq-deadline"]
    assert not any(bench.DRY in t for t, _, _ in an["targets"])


def test_a_switch_before_the_workload_starts_is_at_negative_seconds(tmp_path: Path) -> None:
    """The idle policy's switch at ioazd's start comes before the bench's start mark: the
    timeline puts it that long before the workload, not at ioazd's own clock."""
    log = tmp_path / "x.ioazd.log"
    log.write_text(
        '11.7 x INFO {"event": "switch", "device": "sdb", "to": "bfq", "policy": '
        '"anticipatory", "reason": "idle_policy"}\n1.0 x INFO {"event": "start"}\n'
        '11.9 @@ workload start\n'
        '18.7 x INFO {"event": "switch", "device": "sdb", "to": "mq-deadline", '
        '"policy": "deadline", "reason": "model"}\n')
    tl = bench.timeline(log, "sdb")
    assert [(e["t"], e["to"]) for e in tl] == [(-0.2, "bfq"), (6.8, "mq-deadline")]
    assert bench_report._timeline_entry(tl[0]) == \
        "0.2 s before the start bfq (anticipatory, idle_policy)"


def test_a_dry_control_over_a_static_contender(tmp_path: Path) -> None:
    """`ioazd-dry@stream-tuned`: ioazd in dry run, and the plan carries stream-tuned's knobs
    for the guest to set first; the command line takes it and refuses a base that is not a
    static contender."""
    import argparse

    from ioaz.lab import bench as lab_bench
    from ioaz.lab.testbench import bench, bench_cli

    over = bench.DRY_OVER + bench.STREAM_TUNED
    assert bench.dry_base(over) == bench.STREAM_TUNED and bench.dry_base(bench.DRY) is None
    assert bench.contender_configs([over], 1)[over]["dry_run"] is True
    assert bench.tuned_statics([over], 1)[bench.STREAM_TUNED][0] == "stream"
    p = argparse.ArgumentParser()
    lab_bench.add_arguments(p)          # `ioaz-lab bench`'s own parser
    ok = p.parse_args(["testbed", "--contenders", f"stream-tuned,{over}", "--queue-depth", "1"])
    assert bench_cli.plan_from(ok).contenders == [bench.STREAM_TUNED, over]
    bad = p.parse_args(["testbed", "--contenders", "ioazd-dry@ioazd", "--queue-depth", "1"])
    with pytest.raises(ValueError, match="unknown ioazd-dry@ioazd"):
        bench_cli.plan_from(bad)


def test_cpu_counters_follow_real_work() -> None:
    """The guest's CPU accounting, read here from this host's /proc: spinning for 0.3 s shows
    in both the machine's busy seconds and the process's own."""
    import os
    import time

    from ioaz.lab.testbench.guest_bench import cpu_busy_s, process_cpu_s
    busy0, mine0 = cpu_busy_s(), process_cpu_s(os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    mine = process_cpu_s(os.getpid()) - mine0
    assert 0.2 <= mine <= 1.0
    assert cpu_busy_s() - busy0 >= mine - 0.05


def test_a_threads_cpu_is_its_own() -> None:
    """ioazd's window thread apart from the rest: a helper thread spinning 0.3 s shows in the
    process's CPU and not in the main thread's (this host's /proc, as the guest's)."""
    import os
    import threading
    import time

    from ioaz.lab.testbench.guest_bench import process_cpu_s
    pid = os.getpid()
    whole0, main0 = process_cpu_s(pid), process_cpu_s(pid, pid)

    def spin() -> None:
        end = time.thread_time() + 0.3
        while time.thread_time() < end:
            pass

    t = threading.Thread(target=spin)
    t.start()
    t.join()
    assert process_cpu_s(pid) - whole0 >= 0.2
    assert process_cpu_s(pid, pid) - main0 <= 0.1


def test_ioazd_kernel_runs_the_shipped_config_on_the_calibrated_matrices() -> None:
    """ioazd-kernel is the shipped configuration with one rule: every spinning disk on the
    matrices calibrated in the guest, which exist for every goal and validate; an unknown
    contender is refused naming the ones there are."""
    import argparse

    from ioaz.decide import validate_file
    from ioaz.lab.testbench import bench, bench_cli
    cfg = bench.contender_configs(["ioazd", bench.KERNEL])
    (rule,) = cfg[bench.KERNEL]["decide"]["matrix_rules"]
    assert rule["match"] == {"rotational": True} and set(rule["matrices"]) == set(bench.GOALS)
    assert "matrix_rules" not in cfg["ioazd"]["decide"]
    for f in bench.kernel_matrix_files():
        assert validate_file(f) == [], f
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    with pytest.raises(ValueError, match="unknown ioazd-fast; use .*ioazd-kernel"):
        bench_cli.plan_from(p.parse_args(["--contenders", "bfq,ioazd-fast"]))
    plan = bench_cli.plan_from(p.parse_args(["--contenders", "bfq,ioazd-kernel"]))
    assert plan.contenders == ["bfq", "ioazd-kernel"] and plan.cpus == 2
    assert bench_cli.plan_from(p.parse_args(["--contenders", "bfq", "--cpus", "1"])).cpus == 1
    with pytest.raises(SystemExit):
        p.parse_args(["--cpus", "0"])
    # At another depth it takes the matrices measured at that depth, and refuses a depth
    # nothing was calibrated at rather than run the depth-32 ones there.
    (rule1,) = bench.contender_configs([bench.KERNEL], 1)[bench.KERNEL]["decide"]["matrix_rules"]
    assert rule1["matrices"]["mean"] == "kernel/testbed-wd500-qd1-mean.yaml"
    assert rule["matrices"]["mean"] == "kernel/testbed-wd500-qd32-mean.yaml"
    with pytest.raises(ValueError, match="calibrated at this queue depth: .*qd7-min.yaml"):
        bench_cli.plan_from(p.parse_args(["--contenders", "ioazd-kernel", "--queue-depth", "7"]))
    # ioazd-kernel-unclear: the same matrices, with trials where a cell is unclear
    both = bench.contender_configs([bench.KERNEL, bench.KERNEL_UNCLEAR], 1)
    assert both[bench.KERNEL_UNCLEAR]["decide"]["matrix_rules"] == [rule1]
    assert both[bench.KERNEL_UNCLEAR]["decide"]["trial_unclear"] is True
    assert both[bench.KERNEL]["decide"].get("trial_unclear", False) is False
    assert both[bench.KERNEL_UNCLEAR]["decide"].get("trial_measured", False) is False
    # ioazd-kernel-trials: trials in every cell of them, unclear or measured
    trials = bench.contender_configs([bench.KERNEL_TRIALS], 1)[bench.KERNEL_TRIALS]["decide"]
    assert trials["matrix_rules"] == [rule1]
    assert (trials["trial_unclear"], trials["trial_measured"]) == (True, True)
    assert trials.get("trial_rounds", 1) == 1
    # ioazd-kernel-rounds: those trials in rounds
    rounds = bench.contender_configs([bench.KERNEL_ROUNDS], 1)[bench.KERNEL_ROUNDS]["decide"]
    assert rounds == {**trials, "trial_rounds": bench.ROUNDS} and bench.ROUNDS > 1
    plan = bench_cli.plan_from(p.parse_args(["--contenders", "bfq,ioazd-kernel-trials",
                                             "--queue-depth", "1"]))
    assert plan.contenders == ["bfq", "ioazd-kernel-trials"]
    with pytest.raises(ValueError, match="calibrated at this queue depth: .*qd7-min.yaml"):
        bench_cli.plan_from(p.parse_args(["--contenders", "ioazd-kernel-unclear",
                                          "--queue-depth", "7"]))



def test_ioazd_kernel_model_runs_the_model_trained_on_the_kernel_calibration(tmp_path) -> None:
    """ioazd-kernel-model: the calibrated matrices, and the model trained on the same
    calibration (shipped beside them) deciding above its confidence, through its portable form:
    the guest has no scikit-learn. A depth without a model is refused before booting."""
    import argparse
    import subprocess
    import sys

    from ioaz.daemon.config import load_config
    from ioaz.lab.testbench import bench, bench_cli
    cfg = bench.contender_configs([bench.KERNEL, bench.KERNEL_MODEL, bench.KERNEL_MODEL_TRIALS,
                                   bench.KERNEL_TRIALS], 1)
    model = cfg[bench.KERNEL_MODEL]
    assert model["decide"]["matrix_rules"] == cfg[bench.KERNEL]["decide"]["matrix_rules"]
    # ioazd-kernel-model-trials: the same model, with ioazd-kernel-trials' trials
    trials = cfg[bench.KERNEL_MODEL_TRIALS]
    assert trials["classifier"] == model["classifier"]
    assert trials["decide"] == cfg[bench.KERNEL_TRIALS]["decide"] != model["decide"]
    assert model["classifier"] == {
        "type": "model", "min_confidence": 0.6,
        "model": "/mnt/ioaz/decision_matrices/kernel/testbed-wd500-qd1-mean.model.json"}
    assert "classifier" not in cfg[bench.KERNEL]
    # ioazd takes the contender's config with the host's paths in place of the guest's, and
    # loads the model without scikit-learn, as in the guest
    host = json.loads(json.dumps(model).replace("/mnt/ioaz", str(bench.REPO)))
    (tmp_path / "ioaz.yaml").write_text(json.dumps({**host, "state_dir": str(tmp_path)}))
    code = ("import sys; from ioaz.daemon.config import load_config; "
            "m = load_config(sys.argv[1]).model; print(m.goal, 'sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ioaz.yaml")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["mean", "False"]
    assert load_config(tmp_path / "ioaz.yaml").model is not None
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    plan = bench_cli.plan_from(p.parse_args(["--contenders", "ioazd-kernel-model",
                                             "--queue-depth", "1"]))
    assert plan.contenders == [bench.KERNEL_MODEL]
    with pytest.raises(ValueError, match="no model trained at this queue depth: .*qd32-mean"):
        bench_cli.plan_from(p.parse_args(["--contenders", "ioazd-kernel-model"]))
    with pytest.raises(ValueError, match="ioazd-kernel-model-trials: no model trained"):
        bench_cli.plan_from(p.parse_args(["--contenders", "bfq,ioazd-kernel-model-trials"]))


def test_stream_tuned_is_stream_with_the_kernel_matrices_curve() -> None:
    """The static contender an operator gets by running the calibration and setting stream's
    knobs by hand: the same tunables ioazd-kernel writes with stream, at the bench's depth."""
    import argparse

    from ioaz.decide import load_matrix
    from ioaz.lab.testbench import bench, bench_cli
    want = load_matrix(bench.kernel_matrix_files(1)[2]).tunables["stream"]
    assert set(want) == {"svc_min_us", "svc_max_us", "svc_full_sectors"}
    assert bench.tuned_statics(["stream", bench.STREAM_TUNED], 1) == \
        {bench.STREAM_TUNED: ["stream", want]}
    assert bench.tuned_statics(["stream", "bfq"], 1) == {}
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    plan = bench_cli.plan_from(p.parse_args(["--contenders", "stream,stream-tuned",
                                             "--queue-depth", "1"]))
    assert plan.contenders == ["stream", "stream-tuned"]
    with pytest.raises(ValueError, match="calibrated at this queue depth"):
        bench_cli.plan_from(p.parse_args(["--contenders", "stream-tuned", "--queue-depth", "7"]))


def test_raid_plan_names_its_disks_and_refuses_an_array_mdadm_would() -> None:
    """--raid puts the raw workloads on an md array: the plan boots its members and the file
    system's disk; a member count or chunk mdadm would refuse is refused first, naming it."""
    import argparse

    from ioaz.lab.testbench import bench_cli
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    plain = bench_cli.plan_from(p.parse_args([]))
    assert plain.raid is None and plain.disk_spec() == "model:wd500,model:wd500"
    assert not plain.profile and bench_cli.plan_from(p.parse_args(["--profile-ioazd"])).profile
    assert not plain.verbose and bench_cli.plan_from(p.parse_args(["--verbose-ioazd"])).verbose
    plan = bench_cli.plan_from(p.parse_args(["--raid", "10", "--members", "4",
                                             "--model", "maxtor40"]))
    assert (plan.raid, plan.members, plan.chunk_kb) == ("10", 4, 512)
    assert plan.disk_spec() == ",".join(["model:maxtor40"] * 5)
    with pytest.raises(ValueError, match="--members 2: RAID 5 takes 3 to 8"):
        bench_cli.plan_from(p.parse_args(["--raid", "5", "--members", "2"]))
    with pytest.raises(ValueError, match="--chunk-kb 96: a power of two"):
        bench_cli.plan_from(p.parse_args(["--raid", "0", "--chunk-kb", "96"]))
    with pytest.raises(ValueError, match="give --raid"):
        bench_cli.plan_from(p.parse_args(["--members", "3"]))
    with pytest.raises(SystemExit):
        p.parse_args(["--raid", "6"])


def test_stream_tuned_counts_as_a_static_contender_in_the_report() -> None:
    """The best static scheduler is the best contender set once and left, stream-tuned
    included: a report that left it out once called ioazd 1.35x the best static on a mix
    where stream-tuned, set by hand, did as well."""
    from ioaz.lab.testbench import bench_report
    runs = {"bfq": [{"round": 0, "mb_s": 35.0}], "stream-tuned": [{"round": 0, "mb_s": 47.9}],
            "ioazd-kernel": [{"round": 0, "mb_s": 50.0}]}
    assert bench_report.best_static(runs) == "stream-tuned"


def test_sched_counters_are_the_elevators_numeric_debugfs_files(tmp_path: Path,
                                                                 monkeypatch) -> None:
    """What a run keeps of the elevator: its numeric debugfs files (stream's waits...), not
    the others (mq-deadline's queue dumps); nothing where the disk has no sched directory."""
    from ioaz.lab.testbench import guest_bench

    sched = tmp_path / "block" / "sda" / "sched"
    sched.mkdir(parents=True)
    (sched / "waits").write_text("12\n")
    (sched / "waits_timeout").write_text("3\n")
    (sched / "read0_fifo_list").write_text("ffff8881 {.op=READ}\n")
    monkeypatch.setattr(guest_bench, "DEBUGFS", tmp_path)
    assert guest_bench.sched_counters("sda") == {"waits": 12, "waits_timeout": 3}
    assert guest_bench.sched_counters("sdb") == {}


def test_the_elevators_are_needed_by_kmods_schedulers_and_by_ioazd() -> None:
    assert not bench.needs_elevators(["mq-deadline", "bfq", "none", "kyber"])
    for c in ("fifo", "vr", "stream", "stream-tuned", "ioazd", "ioazd-kernel", "ioazd-dry",
              "ioazd-dry@mq-deadline", "ioazd-throughput"):
        assert bench.needs_elevators(["bfq", c]), c


def test_a_missing_or_stale_elevator_module_is_found_before_the_boot(tmp_path: Path) -> None:
    kmod = tmp_path / "kmod"
    (kmod / "build" / "6.1.0-56-amd64").mkdir(parents=True)
    for n in bench.KMOD_SOURCES:
        (kmod / n).write_text("")
        os.utime(kmod / n, (1000, 1000))
    problem = bench.elevator_module_problem("6.1.0-56-amd64", tmp_path)
    assert problem and "6.1.0-56-amd64/ioaz_sched.ko is missing" in problem
    ko = kmod / "build" / "6.1.0-56-amd64" / "ioaz_sched.ko"
    ko.write_text("")
    os.utime(ko, (2000, 2000))
    assert bench.elevator_module_problem("6.1.0-56-amd64", tmp_path) is None
    os.utime(kmod / "ioaz_stream.c", (3000, 3000))   # a source edited after the build
    problem = bench.elevator_module_problem("6.1.0-56-amd64", tmp_path)
    assert problem and "older than kmod/ioaz_stream.c" in problem



def test_ioazd_cpu_in_the_report_names_its_window_threads_share() -> None:
    from ioaz.lab.testbench import bench_report
    assert bench_report._cpu(0.13, 0.072) == "13% (7% windows)"
    assert bench_report._cpu(0.13, None) == "13%"      # a run from an older guest_bench
    assert bench_report._cpu(None, None) == "-"


def test_a_restless_contender_is_its_base_without_the_rest() -> None:
    """`CONTENDER-restless`: the same ioazd, its window never lengthened at rest, beside it in
    one run; checked as its base (a model it needs, a name it must have)."""
    import argparse

    from ioaz.lab.testbench import bench, bench_cli
    quiet = bench.KERNEL_MODEL + bench.RESTLESS
    cfg = bench.contender_configs([bench.KERNEL_MODEL, quiet, "bfq"], 1)
    assert set(cfg) == {bench.KERNEL_MODEL, quiet}
    assert cfg[quiet] == {**cfg[bench.KERNEL_MODEL], "rest_window_s": 0}
    assert "rest_window_s" not in cfg[bench.KERNEL_MODEL] or \
        cfg[bench.KERNEL_MODEL]["rest_window_s"] > 0
    assert bench.variant_of("bfq-restless") is None
    assert bench.variant_of(bench.KERNEL_MODEL) is None
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    plan = bench_cli.plan_from(p.parse_args(["--contenders", f"bfq,{bench.KERNEL_MODEL},{quiet}",
                                             "--queue-depth", "1"]))
    assert plan.contenders == ["bfq", bench.KERNEL_MODEL, quiet]
    with pytest.raises(ValueError, match="unknown ioazd-fast-restless"):
        bench_cli.plan_from(p.parse_args(["--contenders", "ioazd-fast-restless"]))
    with pytest.raises(ValueError, match="ioazd-kernel-model: no model trained"):
        bench_cli.plan_from(p.parse_args(["--contenders", quiet]))


def test_a_noidle_contender_is_its_base_without_the_idle_policy() -> None:
    """`CONTENDER-noidle`: the same ioazd with decide's idle_policy null, so that it starts
    from the kernel's default; the rest of its decide section is its base's, and suffixes
    combine."""
    from ioaz.lab.testbench import bench
    plain = bench.KERNEL_MODEL + bench.NO_IDLE
    both = plain + bench.RESTLESS
    cfg = bench.contender_configs([bench.KERNEL_MODEL, plain, both], 1)
    base = cfg[bench.KERNEL_MODEL]
    assert base["decide"]["idle_policy"] == "anticipatory"   # deploy/ioaz.yaml's
    assert cfg[plain] == {**base, "decide": {**base["decide"], "idle_policy": None}}
    assert cfg[both] == {**cfg[plain], "rest_window_s": 0}


def test_a_wbt_kernel_contender_leaves_writeback_throttling_to_the_kernel() -> None:
    """`CONTENDER-wbt-kernel`: the same ioazd with writeback_throttling kernel, so that what
    turning throttling off gains or costs is measured apart from the scheduler; the suffixes
    combine, in either order, and the value is one ioazd's config file accepts."""
    from ioaz.daemon import config as daemon_config
    from ioaz.lab.testbench import bench
    on = bench.KERNEL_MODEL + bench.WBT_KERNEL
    both = bench.KERNEL_MODEL + bench.WBT_KERNEL + bench.RESTLESS
    other = bench.KERNEL_MODEL + bench.RESTLESS + bench.WBT_KERNEL
    cfg = bench.contender_configs([bench.KERNEL_MODEL, on, both, other], 1)
    assert cfg[on] == {**cfg[bench.KERNEL_MODEL], "writeback_throttling": "kernel"}
    assert cfg[both] == cfg[other] == {**cfg[on], "rest_window_s": 0}
    assert cfg[bench.KERNEL_MODEL].get("writeback_throttling", "auto") == "auto"
    assert bench.variant_of(both) == (bench.KERNEL_MODEL,
                                      {"writeback_throttling": "kernel", "rest_window_s": 0})
    assert cfg[on]["writeback_throttling"] in daemon_config.WRITEBACK_THROTTLING


def test_s_with_writers_is_counted_by_the_disk_as_s_does(tmp_path: Path) -> None:
    """S's tests with writers take the disk's bytes over the run (S's iostat), not fio's, which
    counts a buffered write on reaching the page cache; the readers-only tests keep fio's."""
    (tmp_path / "raw").mkdir()
    (tmp_path / "guest.json").write_text(json.dumps({"fs": "sda", "raw": "sdb"}))
    (tmp_path / "plan.json").write_text(json.dumps({"phase_s": 20}))
    fio_out = json.dumps({"jobs": [
        {"jobname": "r", "read": {"bw_bytes": 1e6, "clat_ns": {}},
         "write": {"bw_bytes": 0, "clat_ns": {}}},
        {"jobname": "w", "read": {"bw_bytes": 0, "clat_ns": {}},
         "write": {"bw_bytes": 3e6, "clat_ns": {}}}]})
    # the disk read 1e6 and wrote 0.5e6 bytes in the run's 10 s: 0.15 MB/s
    before = [0] * 17
    after = [0, 0, 1_000_000 // 512, 0, 0, 0, 500_000 // 512] + [0] * 10
    lines = []
    for w in ("s-5r5w-rand", "s-10r-rand"):
        (tmp_path / "raw" / f"{w}.out").write_text(fio_out)
        lines.append(json.dumps({"workload": w, "contender": "bfq", "round": 0, "rc": 0,
                                 "wall_s": 10.0, "out": f"{w}.out",
                                 "stat_before": {"sda": before, "sdb": before},
                                 "stat_after": {"sda": after, "sdb": before}}))
    (tmp_path / "runs.jsonl").write_text("\n".join(lines) + "\n")
    got = bench.collect(tmp_path)
    disk = (1_000_000 // 512 + 500_000 // 512) * 512 / 10 / 1e6
    assert got["s-5r5w-rand"]["bfq"][0]["mb_s"] == pytest.approx(disk)
    assert got["s-5r5w-rand"]["bfq"][0]["disk_mb_s"] == pytest.approx(disk)
    assert got["s-10r-rand"]["bfq"][0]["mb_s"] == pytest.approx(4.0)
    assert workloads.BY_NAME["s-5r5w-seq"].figure == "disk"
    assert workloads.BY_NAME["s-5r5w-rand"].unit == "disk MB/s"
    # the report's table gives the disk's bytes once, as the figure, where they are the figure
    from ioaz.lab.report import Report
    from ioaz.lab.testbench import bench_report
    rep = Report(tmp_path / "report", "t")
    bench_report.write(rep, bench_report.analyse(got), {"phase_s": 20, "rounds": 1,
                                                        "runtime_s": 10, "model": "wd500",
                                                        "kernel": "6.12", "path_credit_us": 350})
    heads = [ln for s in rep.sections for ln in s.lines if ln.startswith("| contender |")]
    assert len(heads) == 2
    assert [h.count("MB/s") for h in heads] == [1, 2]   # s-5r5w-rand; s-10r-rand also fio's


def test_a_workload_that_leaves_the_disk_idle_is_said_to_be_bound_elsewhere(
        tmp_path: Path) -> None:
    """Disk busy is the disk's io_ticks over the run; where every contender left the disk idle
    most of the run (postmark's files in the page cache), the report says its ratios are not the
    schedulers'; where one kept it busy, it does not."""
    from ioaz.lab.report import Report
    from ioaz.lab.testbench import bench_report
    (tmp_path / "raw").mkdir()
    (tmp_path / "guest.json").write_text(json.dumps({"fs": "sda", "raw": "sdb"}))
    (tmp_path / "plan.json").write_text(json.dumps({"phase_s": 20}))
    pm = ("\t20.00 megabytes read (2.00 megabytes per second)\n"
          "\t10.00 megabytes written (1.00 megabytes per second)\nwall 100.0 110.0\n")
    lines = []
    for c, ticks_ms in (("mq-deadline", 500), ("bfq", 2400), ("kyber", 2600)):
        (tmp_path / "raw" / f"pm.{c}.out").write_text(pm)
        before = [0] * 17
        after = [0] * 9 + [ticks_ms] + [0] * 7
        lines.append(json.dumps({"workload": "postmark", "contender": c, "round": 0, "rc": 0,
                                 "wall_s": 10.0, "out": f"pm.{c}.out",
                                 "stat_before": {"sda": before, "sdb": before},
                                 "stat_after": {"sda": after, "sdb": before}}))
    (tmp_path / "runs.jsonl").write_text("\n".join(lines) + "\n")
    got = bench.collect(tmp_path)
    assert [got["postmark"][c][0]["disk_busy"] for c in ("mq-deadline", "bfq", "kyber")] == \
        pytest.approx([0.05, 0.24, 0.26])

    def report_text(runs: dict) -> str:
        rep = Report(tmp_path / "report", "t")
        bench_report.write(rep, bench_report.analyse(runs), {
            "phase_s": 20, "rounds": 1, "runtime_s": 10, "model": "wd500", "kernel": "6.12",
            "path_credit_us": 350})
        return "\n".join(ln for sec in rep.sections for ln in sec.lines)

    text = report_text(got)   # kyber kept the disk busy 26% of its run
    (head,) = [ln for ln in text.splitlines() if ln.startswith("| contender |")]
    assert " disk busy |" in head
    assert "| 5% |" in text and "| 26% |" in text and "bound elsewhere" not in text
    del got["postmark"]["kyber"]
    assert "The disk was busy at most 24% of the run under every contender" in report_text(got)


def test_the_bench_waits_for_ioazds_ready_as_systemd_does() -> None:
    """The workload begins when ioazd sends READY=1 (the daemon's own notifier, over the
    socket the bench gives it as $NOTIFY_SOCKET), not at its first log line; a daemon that
    exits before it is ready is known at once, not after the timeout."""
    import sys
    import time

    from ioaz.lab.testbench.guest_bench import notify_socket, wait_ready
    sock, address = notify_socket()
    assert address.startswith("@")
    send = ("import time; from ioaz.daemon.notify import Notifier; n = Notifier(); "
            "n.send('STATUS=starting'); time.sleep(1); n.ready(); time.sleep(5)")
    proc = subprocess.Popen([sys.executable, "-c", send], env={**os.environ,
                                                               "NOTIFY_SOCKET": address})
    t = time.monotonic()
    try:
        assert wait_ready(sock, proc, 30)
        assert 0.9 < time.monotonic() - t < 5
    finally:
        proc.kill()
        proc.wait()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"],
                            env={**os.environ, "NOTIFY_SOCKET": address})
    t = time.monotonic()
    assert not wait_ready(sock, proc, 30)
    assert time.monotonic() - t < 5
    proc.wait()
    sock.close()


def test_a_late_static_contender_is_set_n_seconds_into_the_run() -> None:
    """`lateN@STATIC`: the kernel default for N s, then STATIC, to measure what arriving late
    costs a scheduler apart from ioazd; never a static contender itself (not a best static)."""
    import argparse

    from ioaz.lab.testbench import bench_cli, bench_report, guest_bench
    assert guest_bench.late_of("late10@bfq") == (10, "bfq")
    assert guest_bench.late_of("bfq") is None
    assert guest_bench.late_of("ioazd-dry@bfq") is None
    assert guest_bench.late_of("late@bfq") is None
    assert bench.needs_elevators(["late5@stream"]) and not bench.needs_elevators(["late5@bfq"])
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    plan = bench_cli.plan_from(p.parse_args(["--contenders", "bfq,late10@bfq"]))
    assert plan.contenders == ["bfq", "late10@bfq"]
    with pytest.raises(ValueError, match="unknown late10@cfq"):
        bench_cli.plan_from(p.parse_args(["--contenders", "late10@cfq"]))
    runs = {"bfq": [{"round": 0, "mb_s": 70.0}], "late10@bfq": [{"round": 0, "mb_s": 80.0}]}
    assert bench_report.best_static(runs) == "bfq"


def test_a_static_contender_can_carry_its_schedulers_knobs() -> None:
    """`STATIC+KNOB=VALUE`: bfq with low_latency 0, set by hand as an operator would; a static
    contender (it can be the best static), and under lateN@ too."""
    import argparse

    from ioaz.lab.testbench import bench_cli, bench_report, guest_bench
    assert guest_bench.knobbed("bfq+low_latency=0") == ("bfq", {"low_latency": 0})
    assert guest_bench.knobbed("bfq+low_latency=0+slice_idle=-1") == (
        "bfq", {"low_latency": 0, "slice_idle": -1})
    assert guest_bench.knobbed("bfq") == ("bfq", {})
    assert guest_bench.knobbed("bfq+low_latency") is None
    assert bench.is_static("bfq+low_latency=0") and not bench.is_static("cfq+low_latency=0")
    assert not bench.is_static("late10@bfq+low_latency=0")
    assert bench.needs_elevators(["stream+wait_us=100"])
    assert not bench.needs_elevators(["late5@bfq+low_latency=0"])
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    given = "bfq+low_latency=0,late10@bfq+low_latency=0,ioazd-dry@bfq+low_latency=0"
    assert bench_cli.plan_from(p.parse_args(["--contenders", given])).contenders == \
        given.split(",")
    with pytest.raises(ValueError, match="unknown bfq\\+low_latency"):
        bench_cli.plan_from(p.parse_args(["--contenders", "bfq+low_latency"]))
    runs = {"bfq": [{"round": 0, "mb_s": 70.0}],
            "bfq+low_latency=0": [{"round": 0, "mb_s": 80.0}]}
    assert bench_report.best_static(runs) == "bfq+low_latency=0"


def test_the_vm_trace_samples_dirty_data_and_the_disks_bytes(tmp_path: Path) -> None:
    """--trace vm: the page cache's dirty and write-back data, the dirty limits and the disk's
    bytes, read from this machine's own /proc and /sys, a row each interval."""
    import time

    from ioaz.lab.testbench.guest_trace import VmSampler
    from ioaz.sysblock import BlockSysfs
    sysfs = BlockSysfs()
    s = VmSampler(sysfs, sysfs.devices()[0], tmp_path / "vm.tsv", interval_s=0.05)
    time.sleep(0.3)
    s.stop()
    head, *rows = (tmp_path / "vm.tsv").read_text().splitlines()
    assert head.split("\t") == list(VmSampler.COLUMNS)
    assert len(rows) >= 3
    t, dirty, wb, thresh, bg, rd, wr = (float(x) for x in rows[-1].split("\t"))
    assert 0 < t < 5 and dirty >= 0 and wb >= 0 and rd >= 0 and wr >= 0
    assert thresh > bg > 0   # the kernel's dirty limit is above its background limit


def test_a_bfq_module_must_be_a_built_ko_inside_the_checkout(tmp_path: Path) -> None:
    import argparse

    from ioaz.lab.testbench import bench, bench_cli
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    outside = tmp_path / "bfq.ko"
    outside.write_bytes(b"")
    with pytest.raises(ValueError, match=f"--bfq-module {outside}: must be inside"):
        bench_cli.plan_from(p.parse_args(["--contenders", "bfq", "--bfq-module", str(outside)]))
    with pytest.raises(ValueError, match="not a built .ko file"):
        bench_cli.plan_from(p.parse_args(["--contenders", "bfq", "--bfq-module",
                                          str(bench.REPO / "kmod" / "bfq-late-switch")]))
    inside = bench.REPO / "build" / "test-bfq-module" / "bfq.ko"
    inside.parent.mkdir(parents=True, exist_ok=True)
    inside.write_bytes(b"")
    try:
        plan = bench_cli.plan_from(p.parse_args(["--contenders", "bfq", "--bfq-module",
                                                 str(inside)]))
    finally:
        inside.unlink()
        inside.parent.rmdir()
    assert plan.bfq_module == "build/test-bfq-module/bfq.ko"


def test_a_trace_is_named_and_checked_before_the_boot() -> None:
    import argparse

    from ioaz.lab.testbench import bench_cli
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    plan = bench_cli.plan_from(p.parse_args(["--contenders", "bfq", "--trace", "vm,bfq",
                                             "--trace-bfq-s", "15", "--trace-bfq-at", "60"]))
    assert plan.trace == ("vm", "bfq") and plan.trace_bfq_s == 15 and plan.trace_bfq_at == 60
    with pytest.raises(ValueError, match="--trace-bfq-at -1: must be 0 or more"):
        bench_cli.plan_from(p.parse_args(["--contenders", "bfq", "--trace", "bfq",
                                          "--trace-bfq-at", "-1"]))
    with pytest.raises(ValueError, match="--trace: unknown blk"):
        bench_cli.plan_from(p.parse_args(["--contenders", "bfq", "--trace", "vm,blk"]))


# bfq's messages as the guest's blk tracer printed them (forty-eighth run, bfq set before the
# run, a few of its lines, runs of spaces made one): a first queue, then four readers 0.3 s
# later, two merged as cooperators and split again 1.2 s later
BFQ_TRACE = """# tracer: blk
#
<...>-454 [001] d..1. 496.783925: 8,16 1,0 m N bfq454S allocated
<...>-454 [001] d..1. 496.783990: 8,16 1,0 m N bfq454S add_request 1
<...>-459 [001] d..1. 497.106573: 8,16 1,0 m N bfq459S allocated
<...>-456 [001] d..1. 497.115560: 8,16 1,0 m N bfq456S allocated
<...>-457 [001] d..1. 497.123173: 8,16 1,0 m N bfq457S allocated
<...>-457 [001] d..1. 497.123261: 8,16 1,0 m N bfq457S merging with queue 459
<...>-457 [001] d..1. 497.123271: 8,16 1,0 m N bfq459S merge_bfqqs: wr_busy 2
<...>-458 [001] d..1. 497.130830: 8,16 1,0 m N bfq458S allocated
<...>-458 [001] d..1. 497.130871: 8,16 1,0 m N bfq458S merging with queue 18446744073709551615
<...>-458 [001] d..1. 497.130879: 8,16 1,0 m N bfqSHARED-S merge_bfqqs: wr_busy 2
<...>-31 [000] d..1. 498.308596: 8,16 1,0 m N bfq31A allocated
<...>-458 [000] d..1. 498.313086: 8,16 1,0 m N bfqSHARED-S splitting queue
"""


def test_a_bfq_trace_gives_its_queues_merges_and_splits(tmp_path: Path) -> None:
    """--trace bfq: which synchronous queues bfq created when, which it merged (with its count
    of busy raised queues) and when a merged queue was split; an asynchronous queue is not a
    process's and is left out. The report says it per round."""
    got = measure.bfq_queues(BFQ_TRACE)
    assert got["created"] == [("454", 0.0), ("459", 0.323), ("456", 0.332), ("457", 0.339),
                              ("458", 0.347)]
    assert got["merged"] == [(0.339, "457", 2), (0.347, "458", 2)]
    assert got["split"] == [1.529]
    assert measure.bfq_queues("# tracer: blk\n") == {"created": [], "merged": [], "split": []}
    line = bench_report._bfq_queues(got)
    assert "5 synchronous queues created" in line and "457 at 0.339 s, wr_busy 2" in line
    assert "split 1 times, the first at 1.529 s" in line
    assert "none split" in bench_report._bfq_queues({**got, "split": []})


def test_a_workload_no_static_contender_ran_is_reported_without_ratios(tmp_path: Path) -> None:
    """A diagnostic of late switches alone (no static contender) still gets its figures and
    its bfq traces in the report, not a silently missing workload."""
    from ioaz.lab.report import Report
    got = {"s-5r5w-seq": {
        "late10@bfq": [{"round": 0, "rc": 0, "mb_s": 45.2, "p99_ms": 154.1,
                        "bfq": measure.bfq_queues(BFQ_TRACE)}],
        "late10@bfq+low_latency=0": [{"round": 0, "rc": 0, "mb_s": 45.0, "p99_ms": 158.3}]}}
    a = bench_report.analyse(got)
    assert a["workloads"] == {} and set(a["unranked"]["s-5r5w-seq"]) == set(got["s-5r5w-seq"])
    rep = Report(tmp_path / "report", "t")
    bench_report.write(rep, a, {"phase_s": 20, "rounds": 1, "runtime_s": 120, "model": "wd500",
                                "kernel": "6.12", "path_credit_us": 350})
    text = "\n".join(ln for sec in rep.sections for ln in sec.lines)
    assert "No static contender ran it, so no ratios" in text
    assert "| late10@bfq | 45.20 ± " in text
    assert "late10@bfq round 0 (45.2 disk MB/s), bfq's trace: 5 synchronous queues" in text
