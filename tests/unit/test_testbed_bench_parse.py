"""What the testbed bench reads from its runs: fio, dd, sysbench and the applications' own
reports, the guest's CPU counters, the elevators' debugfs counters and bfq's trace; the
confidence intervals and the order of the contenders. The bench itself (a boot of the guest,
every contender on model disks) runs in `make bench`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ioaz.lab.testbench import bench_report, measure, workloads
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


def test_cpu_counters_follow_real_work() -> None:
    """The guest's CPU accounting, read here from this host's /proc: spinning for 0.3 s shows
    in both the machine's busy seconds and the process's own."""
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
