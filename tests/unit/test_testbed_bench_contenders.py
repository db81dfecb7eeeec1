"""The testbed bench's contenders and plan: the configuration ioazd runs as each contender (the
calibrated matrices, the model, the variants), static contenders with knobs or set late, the
elevator modules and traces checked before the boot, the RAID plan, and the wait for ioazd's
readiness."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from ioaz.lab.testbench import bench, bench_report


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
    with pytest.raises(ValueError, match="calibrated on wd500 at this queue depth: .*qd7-min.yaml"):
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
    with pytest.raises(ValueError, match="calibrated on wd500 at this queue depth: .*qd7-min.yaml"):
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
    with pytest.raises(ValueError,
                       match="no model trained on wd500 at this queue depth: .*qd32-mean"):
        bench_cli.plan_from(p.parse_args(["--contenders", "ioazd-kernel-model"]))
    with pytest.raises(ValueError, match="ioazd-kernel-model-trials: no model trained"):
        bench_cli.plan_from(p.parse_args(["--contenders", "bfq,ioazd-kernel-model-trials"]))


def test_ioazd_kernel_on_another_model_disk_runs_that_disks_matrices() -> None:
    """A bench on maxtor40 at depth 1 runs the matrices calibrated on maxtor40, not wd500's,
    and the model trained on maxtor40's calibration; where that disk has none (depth 32),
    the bench is refused naming the disk and the file."""
    import argparse

    from ioaz.lab.testbench import bench_cli
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    plan = bench_cli.plan_from(p.parse_args(["--contenders", "bfq,ioazd-kernel,stream-tuned",
                                             "--model", "maxtor40", "--queue-depth", "1"]))
    cfg = bench.contender_configs(plan.contenders, plan.queue_depth, plan.model)
    (rule,) = cfg[bench.KERNEL]["decide"]["matrix_rules"]
    assert rule["matrices"]["mean"] == "kernel/testbed-maxtor40-qd1-mean.yaml"
    assert all(f.is_file() for f in bench.kernel_matrix_files(1, "maxtor40"))
    tuned = bench.tuned_statics(plan.contenders, 1, "maxtor40")[bench.STREAM_TUNED]
    assert tuned[1] != bench.tuned_statics(plan.contenders, 1)[bench.STREAM_TUNED][1]
    with pytest.raises(ValueError, match=r"no matrix calibrated on maxtor40 at this queue "
                                         r"depth: .*testbed-maxtor40-qd32-"):
        bench_cli.plan_from(p.parse_args(["--contenders", "ioazd-kernel",
                                          "--model", "maxtor40"]))
    plan = bench_cli.plan_from(p.parse_args(["--contenders", "ioazd-kernel-model",
                                             "--model", "maxtor40", "--queue-depth", "1"]))
    cfg = bench.contender_configs(plan.contenders, plan.queue_depth, plan.model)
    assert cfg[bench.KERNEL_MODEL]["classifier"]["model"].endswith(
        "/decision_matrices/kernel/testbed-maxtor40-qd1-mean.model.json")
    assert bench.kernel_model_file(1, "maxtor40").is_file()


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
    with pytest.raises(ValueError, match="calibrated on wd500 at this queue depth"):
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

    from ioaz.lab.testbench import bench_cli, guest_bench
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

    from ioaz.lab.testbench import bench_cli, guest_bench
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


def test_next_matrices_run_beside_the_shipped(tmp_path: Path, monkeypatch) -> None:
    """`ioazd-kernel-next` is ioazd-kernel on the matrices of --next-matrices, copied beside
    the plan where the guest's ioazd reads them, the shipped ones left to ioazd-kernel; each of
    the option and the suffix is refused without the other, and a prefix missing a goal or
    naming something that is not a matrix is refused before the boot."""
    import argparse
    import shutil

    from ioaz.daemon.config import load_config
    from ioaz.lab.testbench import bench_cli, workloads

    nxt = bench.KERNEL + bench.NEXT
    cfg = bench.contender_configs([bench.KERNEL, nxt], 1)
    (rule,) = cfg[nxt]["decide"]["matrix_rules"]
    assert rule["matrices"]["mean"] == f"/mnt/results/{bench.NEXT_DIR}/mean.yaml"
    assert {**cfg[nxt], "decide": {}} == {**cfg[bench.KERNEL], "decide": {}}
    assert cfg[bench.KERNEL]["decide"]["matrix_rules"][0]["matrices"]["mean"] == \
        "kernel/testbed-wd500-qd1-mean.yaml"
    # a candidate set: the shipped depth-1 files under another name, one edited in place
    prefix = tmp_path / "derived" / "cand"
    prefix.parent.mkdir()
    for g, f in zip(bench.GOALS, bench.kernel_matrix_files(1), strict=True):
        shutil.copyfile(f, f"{prefix}-{g}.yaml")
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    base = ["--contenders", f"bfq,{bench.KERNEL},{nxt}", "--queue-depth", "1"]
    with pytest.raises(ValueError, match=f"--contenders {nxt}: give --next-matrices"):
        bench_cli.plan_from(p.parse_args(base))
    with pytest.raises(ValueError, match="no contender runs them; add -next"):
        bench_cli.plan_from(p.parse_args(["--contenders", "bfq", "--next-matrices", str(prefix)]))
    plan = bench_cli.plan_from(p.parse_args([*base, "--next-matrices", str(prefix)]))
    assert plan.next_matrices == str(prefix)
    Path(f"{prefix}-max.yaml").write_text("kind: matrix\nname: [\n")
    with pytest.raises(ValueError, match=r"cand-max.yaml: not a matrix"):
        bench_cli.plan_from(p.parse_args([*base, "--next-matrices", str(prefix)]))
    Path(f"{prefix}-max.yaml").unlink()
    with pytest.raises(ValueError, match=r"no matrix for goal max \(.*cand-max.yaml\)"):
        bench_cli.plan_from(p.parse_args([*base, "--next-matrices", str(prefix)]))
    shutil.copyfile(bench.kernel_matrix_files(1)[1], f"{prefix}-max.yaml")
    # the run copies them where the guest's config names them (a spy on the VM: no boot)
    monkeypatch.setattr(bench.vm, "run", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("no boot in a unit test")))
    plan = bench.Plan(workloads=[workloads.BY_NAME["par-read"]], contenders=[nxt],
                      queue_depth=1, path_credit_us=350.0, next_matrices=str(prefix))
    with pytest.raises(RuntimeError, match="no boot"):
        bench.run(plan, tmp_path / "out")
    guest = tmp_path / "out" / "guest"
    for g in bench.GOALS:
        assert (guest / bench.NEXT_DIR / f"{g}.yaml").read_bytes() == \
            Path(f"{prefix}-{g}.yaml").read_bytes()
    # and ioazd's own loader takes that config, the paths as the guest has them here
    written = json.loads((guest / "plan.json").read_text())["ioazd"][nxt]
    path = tmp_path / "next.yaml"
    path.write_text(json.dumps(written).replace("/mnt/results", str(guest))
                    .replace("/mnt/ioaz", str(bench.REPO)))
    ctx = load_config(path).decide
    assert any(str(guest) in str(name) for name in ctx.matrices), list(ctx.matrices)
