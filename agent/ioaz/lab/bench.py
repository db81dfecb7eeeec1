"""`ioaz-lab bench SUITE`: benchmarks that print numbers (targets live here, not in tests).

Suites:
  probe   overhead of the eBPF probe on a fast device (fio 4k random reads, with and without
          the probe, alternating), and the agent's CPU per window with 8 devices.
  daemon  ioazd's CPU per window (probe read, features, decide, drift check, actuation) with
          16 busy loop devices.
  stall   the queue stall of each scheduler switch under fio load (ioaz.actuate.bench).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .loops import Loops

SUITES: dict[str, Callable[[argparse.Namespace], dict]] = {}


def suite(name: str):
    def reg(fn):
        SUITES[name] = fn
        return fn
    return reg


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("suite", choices=sorted(SUITES), help="which benchmark to run")
    p.add_argument("--rounds", type=int, default=None,
                   help="probe: alternations with/without (default 5); testbed: rounds of "
                        "every contender (default 3)")
    p.add_argument("--seconds", type=float, default=None,
                   help="length of each fio run (default 4); scale: windows (60); soak: the "
                        "run (1800)")
    p.add_argument("--sample", type=float, default=None, metavar="FRACTION",
                   help="probe/daemon: the probe's sampled fraction of each second (default: "
                        "ioazd's default; 1: always on, every request seen)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--devices", type=int, default=None,
                   help="scale, soak: how many loop devices (default 200, 8)")
    p.add_argument("--loads-cgroup", action="store_true",
                   help="scale, soak: the fio loads in a CPU cgroup of their own, as the "
                        "workload and ioazd.service are under systemd (default: the loads are "
                        "this process's children and compete with the daemon thread by thread)")
    p.add_argument("--switches-per-hour", type=int, default=None, metavar="N",
                   help="soak: each device's switch budget (default 3600, one a window, so "
                        "that it switches for the whole run; ioazd's own default is 12)")
    p.add_argument("--history", type=int, default=None, metavar="N",
                   help="soak: the switches the daemon keeps (default ioazd's 500; fewer, to "
                        "see the memory once the history is full within a short run)")
    # report (ioaz.lab.report_suites)
    p.add_argument("--quick", action="store_true", help="report: short runs (make test)")
    p.add_argument("--real", action="store_true",
                   help="report: also ioazd vs static schedulers on a loop device (root, fio)")
    p.add_argument("--out", default="reports", help="report: output directory (default reports/)")
    p.add_argument("--device", default=None, metavar="MODEL",
                   help="report: the simulator device model of the adaptive part (default "
                        "wd500); its calibrated agent uses agent/ioaz/sim/matrices/MODEL-GOAL.yaml "
                        "when they are there, and its model agent is trained on it")
    p.add_argument("--only", action="append", default=None, metavar="PART",
                   help="report: run only this part (ioaz, carroll, xujiang, adaptive, speed, "
                        "real); repeat for more")
    from ioaz.lab.testbench.bench_cli import add_arguments as testbed_arguments
    testbed_arguments(p)


def _probe(args: argparse.Namespace):
    """The probe as ioazd runs it (or as --sample says)."""
    from ..probe.bpf_source import BpfSource
    from ..probe.sampler import DEFAULT_FRACTION, SamplePlan
    return BpfSource(sample=SamplePlan(DEFAULT_FRACTION if args.sample is None else args.sample))


def _fio_start(dev: str, seconds: float) -> subprocess.Popen:
    """The probe benchmark's load in the background (as _fio_iops runs it)."""
    return subprocess.Popen(_fio_cmd(dev, seconds), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _reads(dev: str) -> int:
    """Reads completed on `dev` so far (/proc/diskstats)."""
    from ..probe.diskstats_source import parse_diskstats
    with open("/proc/diskstats") as f:
        disk = parse_diskstats(f.read(), 0, {dev}).get(dev)
    if disk is None:
        raise RuntimeError(f"{dev} is not in /proc/diskstats")
    return disk.completed[0]


def _fio_cmd(dev: str, seconds: float) -> list[str]:
    # At the highest priority: on a shared machine the other work then takes the CPU fio
    # leaves, instead of adding noise to a comparison of a few percent.
    return ["nice", "-n", "-20", "fio", "--name=bench", f"--filename=/dev/{dev}", "--direct=1",
            "--rw=randread", "--bs=4k", "--ioengine=io_uring", "--iodepth=32", "--numjobs=2",
            f"--runtime={seconds}", "--time_based", "--group_reporting", "--output-format=json"]


def _fio_iops(dev: str, seconds: float, extra: tuple[str, ...] = ()) -> float:
    cmd = [*_fio_cmd(dev, seconds), *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    j = json.loads(out[out.index("{"):])
    return float(j["jobs"][0]["read"]["iops"])


class _bpf_stats:
    """kernel.bpf_stats_enabled set for the duration: on to read our programs' run times, off
    for the IOPS comparison (left on, it adds two clock reads to every program run)."""

    PATH = "/proc/sys/kernel/bpf_stats_enabled"

    def __init__(self, on: bool = True):
        self.value = "1" if on else "0"

    def __enter__(self) -> None:
        self.old = Path(self.PATH).read_text().strip()
        Path(self.PATH).write_text(self.value)

    def __exit__(self, *exc: object) -> None:
        Path(self.PATH).write_text(self.old)


def _prog_run_stats(ids: dict[str, int]) -> dict[str, tuple[int, int]]:
    """name -> (run_time_ns, run_cnt) of each of our programs, from the kernel."""
    out = {}
    for name, pid in ids.items():
        r = subprocess.run(["bpftool", "prog", "show", "id", str(pid), "--json"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            j = json.loads(r.stdout)
            out[name] = (int(j.get("run_time_ns", 0)), int(j.get("run_cnt", 0)))
    return out


@suite("probe")
def bench_probe(args: argparse.Namespace) -> dict:
    from ..classify.classes import load_thresholds
    from ..observe import Observer
    from ..probe.sampler import completed_requests

    result: dict = {}
    args.rounds = args.rounds or 5
    with Loops(1, 1024) as (dev,):
        _fio_iops(dev, 1.0)  # warm the backing file's pages
        per_prog: dict[str, list[int]] = {}
        # One long fio run; the probe is switched on and off under it in blocks of
        # --seconds, in pairs of alternating order (ABBA), so a drift of the machine's other
        # load falls on both sides of a pair, and nothing but the probe differs between the
        # two blocks: no fio start-up, no object load (programs are detached, not unloaded).
        # Each block's rate is the device's completed reads from /proc/diskstats over the
        # whole block: switching on (attach, the sampler's first warm-up) is part of what the
        # probe costs, and a sampled block holds whole sampling periods only when it is counted
        # from its start (one period is one second). Each pair gives one ratio.
        with _probe(args) as src, _bpf_stats(on=False):
            src.suspend()
            # Each block takes a little longer than --seconds (attach, the sampler's start and
            # stop): fio runs with room to spare and is killed after the last block.
            fio = _fio_start(dev, 2 * args.rounds * args.seconds * 1.2 + 30)
            try:
                time.sleep(2)
                with_p: list[float] = []
                without_p: list[float] = []
                for i in range(args.rounds):
                    for on in ((False, True) if i % 2 == 0 else (True, False)):
                        n0, t0 = _reads(dev), time.monotonic()
                        if on:
                            src.resume()
                        time.sleep(args.seconds)
                        if on:
                            src.suspend()
                        if fio.poll() is not None:
                            raise RuntimeError(f"fio ended (exit {fio.returncode}) at pair "
                                               f"{i + 1} of {args.rounds}: no load to measure")
                        (with_p if on else without_p).append(
                            (_reads(dev) - n0) / (time.monotonic() - t0))
            finally:
                fio.kill()
                fio.wait()
        # One more run with the kernel's per-program accounting on (it costs a little itself,
        # so it is kept out of the IOPS comparison above).
        with _probe(args) as src, _bpf_stats():
            n0 = completed_requests()
            _fio_iops(dev, max(args.seconds, 4.0))  # several sampling periods
            for name, (ns, cnt) in _prog_run_stats(src.program_ids()).items():
                per_prog[name] = [ns, cnt]
            requests = max(completed_requests() - n0, 1)  # all disks: programs see them all
        mw, mo = statistics.median(with_p), statistics.median(without_p)
        losses = sorted((1 - w / o) * 100 for w, o in zip(with_p, without_p, strict=True))
        loss = statistics.median(losses)
        q = statistics.quantiles(losses, n=4) if len(losses) >= 2 else [loss, loss, loss]
        # One pair's ratio varies by several percent on this 2-core machine (fio, the loop
        # worker and everything else share two CPUs), so a target of a few percent needs the
        # mean's 95% confidence interval, not just a median: 1.96 standard errors.
        mean_loss = statistics.fmean(losses)
        half = 1.96 * statistics.stdev(losses) / len(losses) ** 0.5 if len(losses) >= 2 else 0.0
        total_loss = (1 - sum(with_p) / sum(without_p)) * 100
        # Two jobs keep both cores busy, so each request costs 2/iops seconds of CPU.
        cpu_ns_per_req = 2 / mo * 1e9
        result["overhead"] = {
            "iops_without": without_p, "iops_with": with_p,
            "median_without": mo, "median_with": mw,
            "iops_loss_pct": loss, "iops_loss_pct_iqr": [q[0], q[2]],
            "iops_loss_pct_mean": mean_loss, "iops_loss_pct_ci95": [mean_loss - half,
                                                                    mean_loss + half],
            "iops_loss_pct_of_totals": total_loss, "pairs": len(losses),
            "cpu_ns_per_request_without": cpu_ns_per_req,
            "ns_per_request": loss / 100 * cpu_ns_per_req,
            # The kernel's own accounting of time spent in our programs (bpf_stats_enabled),
            # free of the run-to-run noise of the IOPS comparison. Other I/O on the machine
            # adds runs, not time per run.
            "bpf_ns_per_run": {n: ns / cnt for n, (ns, cnt) in per_prog.items() if cnt},
            # Sampled, most requests run no program at all: the time spent in all programs
            # over all requests on the machine is what a request costs on average.
            "bpf_ns_per_request": sum(ns for ns, _ in per_prog.values()) / requests,
            "runs_per_request": {n: cnt / requests for n, (_, cnt) in per_prog.items()},
            "sample_fraction": src.plan.fraction if src.plan else 1.0,
        }
    with Loops(8, 256) as devs, _probe(args) as src:
        loads = [subprocess.Popen(
            ["fio", "--name=bg", f"--filename=/dev/{d}", "--direct=1", "--rw=randrw",
             "--bs=4k", "--ioengine=psync", "--numjobs=2", "--rate_iops=500",
             f"--runtime={args.seconds + 4}", "--time_based"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for d in devs]
        try:
            obs = Observer(src, load_thresholds(), devs)
            obs.start()
            cpu = []
            for _ in range(int(args.seconds)):
                time.sleep(1.0)
                c0 = time.process_time()
                w = obs.step()
                cpu.append(time.process_time() - c0)
            assert len(w.features) == 8
        finally:
            for p in loads:
                p.wait()
        result["agent_cpu_per_window_8_devices"] = {
            "median_ms": statistics.median(cpu) * 1e3, "max_ms": max(cpu) * 1e3}
    return result


@suite("daemon")
def bench_daemon(args: argparse.Namespace) -> dict:
    import logging
    import tempfile

    from ..actuate import Actuator, StateStore
    from ..daemon.compose import build
    from ..daemon.config import load_config
    from ..sysblock import HELD_BY_DAEMON, BlockSysfs

    logging.getLogger("ioaz").setLevel(logging.WARNING)
    with Loops(16, 128) as devs, _probe(args) as src, tempfile.TemporaryDirectory() as tmp:
        cfg_file = Path(tmp) / "ioaz.yaml"
        cfg_file.write_text(f"devices: {{include: [{', '.join(devs)}], exclude: []}}\n"
                            f"state_dir: {tmp}/state\n")
        cfg = load_config(cfg_file)
        sysfs = BlockSysfs(hold_open=HELD_BY_DAEMON)   # as ioazd reads
        daemon = build(cfg, src, Actuator(sysfs, StateStore(Path(tmp) / "state")), sysfs)
        loads = [subprocess.Popen(
            ["fio", "--name=bg", f"--filename=/dev/{d}", "--direct=1", "--rw=randread",
             "--bs=4k", "--ioengine=psync", "--rate_iops=300",
             f"--runtime={args.seconds + 3}", "--time_based"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for d in devs]
        try:
            daemon.start()
            cpu = []
            for _ in range(int(args.seconds)):
                time.sleep(1.0)
                daemon.window()
                cpu.append(daemon.last_window_s or 0.0)
            switched = sum(sum(r.switches.values()) for r in daemon.devices.values())
        finally:
            for p in loads:
                p.wait()
            daemon.stop()
            sysfs.close()
    return {"devices": 16, "windows": len(cpu), "median_ms": statistics.median(cpu) * 1e3,
            "max_ms": max(cpu) * 1e3, "switches": switched}


@suite("scale")
def bench_scale(args: argparse.Namespace) -> dict:
    """--devices loop devices (default 200) under ioazd's window loop for --seconds windows
    (default 60), 30% busy, a fifth of the idle ones replaced by new disks every 5 windows
    (ioaz.lab.bench_scale)."""
    from . import bench_scale as b
    r = b.scale(args.devices or 200, int(args.seconds), sample=args.sample,
                loads_cgroup=args.loads_cgroup)
    if not args.json:
        print(f"{r['devices']} devices ({r['busy']} busy), {r['windows']} windows of "
              f"{r['window_s']:g} s, {r['detached']} detached and {r['attached']} attached "
              f"while running: window median {r['window_ms_median']:.1f} ms, max "
              f"{r['window_ms_max']:.1f} ms, {r['windows_over_length']} over the window's "
              f"length; CPU a window median {r['window_cpu_ms_median']:.1f} ms, max "
              f"{r['window_cpu_ms_max']:.1f} ms; waiting for a CPU median "
              f"{r['window_waited_ms_median']:.1f} ms, max {r['window_waited_ms_max']:.1f} ms "
              f"(the longest window: CPU {r['longest_window_cpu_waited_ms'][0]:.1f} ms, waited "
              f"{r['longest_window_cpu_waited_ms'][1]:.1f} ms); RSS "
              f"{r['rss_kb_first_last'][0]} -> {r['rss_kb_first_last'][1]} KiB, "
              f"descriptors {r['fds_first_last'][0]} -> {r['fds_first_last'][1]}, threads "
              f"{r['threads_first_last'][0]} -> {r['threads_first_last'][1]}; not restored: "
              f"{len(r['not_restored'])}, not back as found: {len(r['not_back'])}")
    return r


@suite("soak")
def bench_soak(args: argparse.Namespace) -> dict:
    """--devices loop devices (default 8), the workload changing every 20 s, for --seconds
    (default 1800) (ioaz.lab.bench_scale)."""
    from . import bench_scale as b
    r = b.soak(args.devices or 8, args.seconds, sample=args.sample,
               loads_cgroup=args.loads_cgroup,
               switches_per_hour=args.switches_per_hour or b.SOAK_SWITCHES_PER_HOUR,
               history=args.history)
    if not args.json:
        print(f"{r['devices']} devices, {r['seconds']:g} s, {r['phases']} phases of "
              f"{r['phase_s']:g} s, {r['windows']} windows, {r['switches']} switches "
              f"(at most {r['switches_per_hour']} an hour a device; by the tenths: "
              f"{' '.join(str(k) for k in r['switches_tenths'])}; {r['history_kept']} in the "
              f"history), {r['errors']} errors; CPU {r['cpu_ms_per_window']:.1f} ms a window, "
              f"window median {r['window_ms_median']:.1f} ms, max {r['window_ms_max']:.1f} ms, "
              f"{r['windows_over_length']} over its length; after the first phase -> at the "
              f"end: RSS "
              f"{r['rss_kb_warm_last'][0]} -> {r['rss_kb_warm_last'][1]} KiB, descriptors "
              f"{r['fds_warm_last'][0]} -> {r['fds_warm_last'][1]}, threads "
              f"{r['threads_warm_last'][0]} -> {r['threads_warm_last'][1]}; RSS every tenth "
              f"of the run (KiB): {' '.join(str(k) for k in r['rss_kb_tenths'])}, of it "
              f"anonymous: {' '.join(str(k) for k in r['anon_kb_tenths'])}; threads the "
              f"probe holds: {' '.join(str(k) for k in r['probe_threads_tenths'])}; not "
              f"restored: {len(r['not_restored'])}, not back as found: "
              f"{len(r['not_back'])}; logged at WARNING or above: "
              f"{r['log']['levels'] or 'nothing'} (by event: {r['log']['events'] or 'none'}), "
              f"{r['log']['tracebacks']} tracebacks")
        for w in r["long_windows"]:
            made = ", ".join(f"{s['device']} {s['from']} -> {s['to']} (queue frozen "
                             f"{s['stall_ms']} ms)" for s in w["switches"]) or "no switch"
            print(f"  window at {w['at_s']} s took {w['ms']} ms: {made}")
    return r


@suite("stall")
def bench_stall(args: argparse.Namespace) -> dict:
    from ..actuate import bench as stall
    code = stall.main(["--rounds", str(args.rounds or 5)] + (["--json"] if args.json else []))
    return {"exit": code}


@suite("learn")
def bench_learn(args: argparse.Namespace) -> dict:
    """calibrate + derive + train on the simulator's HDD and RAID models, every goal:
    the model's held-out accuracy and loss against the per-workload best next to the
    derived matrix's (ioaz.lab.bench_learn; datasets kept in build/learn/)."""
    from . import bench_learn
    r = bench_learn.run()
    if not args.json:
        bench_learn.print_report(r)
    return r


def _print_probe(r: dict) -> None:
    o = r["overhead"]
    frac = o.get("sample_fraction", 1.0)
    mode = "always on" if frac >= 1 else f"sampled, {frac:g} of each second counted"
    print(f"probe overhead ({mode}): fio 4k randread, io_uring iodepth 32, 2 jobs, "
          "loop over /dev/shm")
    print(f"  IOPS without probe: {', '.join(f'{x:.0f}' for x in o['iops_without'])}")
    print(f"  IOPS with probe:    {', '.join(f'{x:.0f}' for x in o['iops_with'])}")
    lo, hi = o["iops_loss_pct_iqr"]
    print(f"  median {o['median_without']:.0f} -> {o['median_with']:.0f} IOPS; "
          f"per pair: median {o['iops_loss_pct']:.2f}% fewer IOPS (interquartile "
          f"{lo:.2f}..{hi:.2f}%; target < 2%), {o['ns_per_request']:.0f} ns per request implied "
          f"of {o['cpu_ns_per_request_without']:.0f} ns CPU per request")
    if "iops_loss_pct_mean" in o:
        clo, chi = o["iops_loss_pct_ci95"]
        print(f"  {o['pairs']} pairs: mean {o['iops_loss_pct_mean']:.2f}% fewer IOPS (95% "
              f"confidence {clo:.2f}..{chi:.2f}%); all blocks' totals "
              f"{o['iops_loss_pct_of_totals']:.2f}%")
    if o.get("bpf_ns_per_request") is not None:
        runs = ", ".join(f"{n} {v:.0f}" for n, v in sorted(o["bpf_ns_per_run"].items()))
        share = o["bpf_ns_per_request"] / o["cpu_ns_per_request_without"] * 100
        per_req = ", ".join(f"{n} {v:.2f}" for n, v in sorted(o["runs_per_request"].items()))
        print(f"  kernel bpf_stats: {o['bpf_ns_per_request']:.0f} ns of BPF per request = "
              f"{share:.1f}% of the CPU per request (ns per run: {runs}; runs per request: "
              f"{per_req}; the accounting itself adds to each run)")
    a = r["agent_cpu_per_window_8_devices"]
    print(f"agent CPU per window, 8 busy devices: median {a['median_ms']:.2f} ms, "
          f"max {a['max_ms']:.2f} ms")


@suite("testbed")
def bench_testbed(args: argparse.Namespace) -> dict:
    from ioaz.lab.testbench.bench_cli import run_bench
    return run_bench(args)


@suite("report")
def bench_report(args: argparse.Namespace) -> dict:
    from .report_suites import run_report
    return run_report(args)


# suites that need neither root nor BPF (report needs root only with --real)
NO_ROOT = {"report"}
SECONDS = {"scale": 60.0, "soak": 1800.0}     # --seconds when not given; else 4


def run(args: argparse.Namespace) -> int:
    if os.geteuid() != 0 and (args.suite not in NO_ROOT or getattr(args, "real", False)):
        print("ioaz-lab bench: needs root (loop devices, BPF)", file=sys.stderr)
        return 2
    if args.seconds is None:
        args.seconds = SECONDS.get(args.suite, 4.0)
    try:
        r = SUITES[args.suite](args)
    except ValueError as e:   # bad arguments found once the suite looks at them
        print(f"ioaz-lab bench {args.suite}: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(r, indent=2, default=str))
    elif args.suite in ("report", "testbed"):
        print("\n".join(r["summary"]))
        print(f"report: {r['report']}")
    elif args.suite == "probe":
        _print_probe(r)
    elif args.suite == "daemon":
        print(f"ioazd CPU per window, {r['devices']} busy loop devices, {r['windows']} windows: "
              f"median {r['median_ms']:.2f} ms, max {r['max_ms']:.2f} ms "
              f"({r['switches']} switches made during the run)")
    return 0
