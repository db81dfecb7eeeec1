"""The testbed bench's report: the best static scheduler and the per-phase oracle, each mix
phase by phase, the sums and targets, the simulator against the kernel, the observing
controls, ioazd's timeline and CPU, and what the disk's own counters say."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from ioaz.lab.testbench import bench, bench_report, measure, workloads
from test_testbed_bench_parse import BFQ_TRACE


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
    contrast = workloads.BY_NAME["phases-contrast"].phases
    assert set(twins) == {"par-read", *(f"phases:{p}" for p in ph),
                          *(f"phases-contrast:{p}" for p in contrast)}
    # the bench's fio workloads are O_DIRECT: the elevators see every twin request as sync
    assert all(q.direct for w in twins.values() for p in w.phases for q in p.procs)


def test_each_mix_phase_runs_as_many_fio_jobs_as_its_twin_has_processes() -> None:
    from ioaz.lab.testbench import bench_sim
    twins = bench_sim.twins(5, 5)
    for mix in ("phases", "phases-contrast"):
        script = workloads.BY_NAME[mix].script
        for p in workloads.BY_NAME[mix].phases:
            group = script.split(f"[{p}]\n", 1)[1].split("\n[", 1)[0]
            jobs = int(re.search(r"numjobs=(\d+)", group).group(1))
            procs = twins[f"{mix}:{p}"].phases[0].procs
            assert jobs == len(procs), (mix, p)
            # the twin's writers write and its readers read, as the group does
            assert {q.op for q in procs} == {"write" if "rw=write" in group else "read"}


def test_the_simulator_gives_stream_tuneds_stand_in_the_plans_knobs(monkeypatch) -> None:
    """stream-tuned is stream with the knobs the plan gave it; its stand-in gets the same
    ones, and a scheduler without knobs its preset's (a spy on the simulator's entry, beside
    a real run of it)."""
    from ioaz.lab.testbench import bench_sim
    from ioaz.sim import engine

    knobs = {"svc_min_us": 869, "svc_max_us": 24922, "svc_full_sectors": 878790440}
    seen: list[tuple[str, object]] = []
    real = engine.simulate

    def spy(dev, sched, wl, **kw):
        seen.append((sched, kw.get("tunables")))
        return real(dev, sched, wl, **kw)

    monkeypatch.setattr(engine, "simulate", spy)
    got = bench_sim.simulate("wd500", 1, 0.5, 0.5, ["mq-deadline", "stream-tuned"], 32,
                             {"stream-tuned": ["stream", knobs]})
    assert sorted({(s, str(t)) for s, t in seen}) == [("deadline", "None"),
                                                      ("stream-vr", str(knobs))]
    assert all(got[w]["stream-tuned"] > 0 and got[w]["mq-deadline"] > 0 for w in got)


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
    # with a variant after it: the same static underneath, the variant's settings on top
    minute = over + bench.MINUTE
    assert bench.dry_base(minute) == bench.STREAM_TUNED
    cfg = bench.contender_configs([over, minute], 1)
    assert cfg[minute] == {**cfg[over], "window_s": 60, "rest_window_s": 0}
    # ioazd takes it (its own loader; a rest no longer than the window would be refused)
    from ioaz.daemon.config import load_config
    path = tmp_path / "minute.yaml"
    path.write_text(json.dumps(cfg[minute]).replace("/mnt/ioaz", str(bench.REPO)))
    assert load_config(path).window_s == 60
    ok = p.parse_args(["testbed", "--contenders", f"stream-tuned,{minute}", "--queue-depth", "1"])
    assert bench_cli.plan_from(ok).contenders == [bench.STREAM_TUNED, minute]


def test_the_guest_sets_the_static_contender_a_dry_control_observes(tmp_path: Path,
                                                                   monkeypatch) -> None:
    """The plan names the static under each `ioazd-dry@STATIC[-VARIANT]` for the guest, which
    has no copy of the variants' names (a spy on the bench's VM, which does not boot)."""
    from ioaz.lab.testbench import bench

    minute = bench.DRY_OVER + "bfq" + bench.MINUTE
    monkeypatch.setattr(bench.vm, "run", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("no boot in a unit test")))
    plan = bench.Plan(workloads=[workloads.BY_NAME["par-read"]], contenders=["bfq", minute],
                      path_credit_us=350.0)
    with pytest.raises(RuntimeError, match="no boot"):
        bench.run(plan, tmp_path)
    written = json.loads((tmp_path / "guest" / "plan.json").read_text())
    assert written["dry_over"] == {minute: "bfq"}


def test_a_contender_without_membership_gets_its_own_thresholds(tmp_path: Path,
                                                               monkeypatch) -> None:
    """`-nomember`: the shipped thresholds with process_membership_s 0, written beside the
    plan where the guest reads it; the contender without the suffix keeps the shipped file."""
    from ioaz.classify.classes import load_thresholds
    from ioaz.lab.testbench import bench

    plain, nomember = bench.KERNEL_MODEL, bench.KERNEL_MODEL + bench.NO_MEMBER
    cfg = bench.contender_configs([plain, nomember], 1)
    assert cfg[nomember] == {**cfg[plain], "thresholds": "/mnt/results/"
                             + bench.NO_MEMBER_THRESHOLDS}
    monkeypatch.setattr(bench.vm, "run", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("no boot in a unit test")))
    plan = bench.Plan(workloads=[workloads.BY_NAME["par-read"]], contenders=[plain, nomember],
                      path_credit_us=350.0)
    with pytest.raises(RuntimeError, match="no boot"):
        bench.run(plan, tmp_path)
    written = load_thresholds(tmp_path / "guest" / bench.NO_MEMBER_THRESHOLDS)
    shipped = load_thresholds()
    assert shipped.process_membership_s > 0 and written.process_membership_s == 0
    assert written == type(shipped)(**{**shipped.__dict__, "process_membership_s": 0.0})


def test_stream_tuned_counts_as_a_static_contender_in_the_report() -> None:
    """The best static scheduler is the best contender set once and left, stream-tuned
    included: a report that left it out once called ioazd 1.35x the best static on a mix
    where stream-tuned, set by hand, did as well."""
    from ioaz.lab.testbench import bench_report
    runs = {"bfq": [{"round": 0, "mb_s": 35.0}], "stream-tuned": [{"round": 0, "mb_s": 47.9}],
            "ioazd-kernel": [{"round": 0, "mb_s": 50.0}]}
    assert bench_report.best_static(runs) == "stream-tuned"


def test_ioazd_cpu_in_the_report_names_its_window_threads_share() -> None:
    from ioaz.lab.testbench import bench_report
    assert bench_report._cpu(0.13, 0.072) == "13% (7% windows)"
    assert bench_report._cpu(0.13, None) == "13%"      # a run from an older guest_bench
    assert bench_report._cpu(None, None) == "-"


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
