"""The options of `ioaz-lab bench testbed` and its run: boot, measure, report."""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from ioaz.decide import load_matrix
from ioaz.lab.testbench import bench, workloads
from ioaz.located import ValidationError
from ioaz.testbed import image, modeldisk, trixie
from ioaz.testbed.errors import TestbedError


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("testbed (ioazd against static schedulers in the guest)")
    g.add_argument("--workloads", default="all",
                   help="comma list of " + ", ".join(workloads.BY_NAME) + " (default: all)")
    g.add_argument("--contenders", default=",".join([*bench.STATIC, "ioazd"]),
                   help="static schedulers, stream-tuned (stream with the kernel "
                        "matrices' curve), ioazd (the shipped config), ioazd-kernel, "
                        "ioazd-kernel-unclear (with trials where a cell is unclear), "
                        "ioazd-kernel-trials (in every calibrated cell), "
                        f"ioazd-kernel-rounds (those in {bench.ROUNDS} rounds), "
                        "ioazd-kernel-model (the model trained on that calibration, "
                        "over its matrices), ioazd-kernel-model-trials (with the trials "
                        "of ioazd-kernel-trials), "
                        "ioazd-GOAL, ioazd-dry (observes only: what observing costs) "
                        "and ioazd-dry@STATIC (observing over a static contender); any "
                        f"ioazd contender with {bench.RESTLESS} after it: never at rest "
                        f"(rest_window_s 0), {bench.WBT_KERNEL}: the kernel's writeback "
                        f"throttling left as the scheduler sets it, {bench.MINUTE}: one "
                        "window a minute, the probe still counting, or "
                        f"{bench.NO_MEMBER}: the class's process count without membership "
                        f"or {bench.NEXT}: the matrices of --next-matrices "
                        "(default: %(default)s)")
    g.add_argument("--model", default="wd500", help="the disk model (default wd500)")
    g.add_argument("--kernel", default="6.12", help="the guest's kernel series")
    g.add_argument("--runtime", type=int, default=20, help="seconds of a timed run")
    g.add_argument("--phase", type=int, default=20, help="seconds of a mix's phase")
    g.add_argument("--queue-depth", type=int, default=None, choices=range(1, 33),
                   metavar="1..32", help="the disks' device/queue_depth (default: the "
                   "kernel's, 32 on AHCI; 1 is IOAZ's IDE drive, where the order the "
                   "scheduler chooses reaches the disk)")
    g.add_argument("--raid", choices=("0", "5", "10"), default=None,
                   help="run the raw-disk workloads on an md RAID of this level over "
                        "--members model disks (mdadm in the guest); static contenders are "
                        "set on every member")
    g.add_argument("--members", type=int, default=4, help="the array's disks (default 4)")
    g.add_argument("--chunk-kb", type=int, default=512,
                   help="the array's chunk in KiB (default 512, mdadm's)")
    g.add_argument("--path-credit-us", type=float, default=None,
                   help="the VM path's cost per request (default: measured in a first boot)")
    g.add_argument("--beside", default="", metavar="TEXT",
                   help="what else runs on the host meanwhile, as the operator knows it, "
                        "for the report (its CPU time is measured either way)")
    g.add_argument("--cpus", type=int, default=2, choices=range(1, 9), metavar="N",
                   help="the guest's vCPUs (default 2; under single-threaded TCG all share one "
                        "host thread, so more only adds turns between them)")
    g.add_argument("--profile-ioazd", action="store_true",
                   help="run ioazd under cProfile: each of its runs leaves "
                        "guest/raw/WORKLOAD.CONTENDER.ROUND.ioazd.prof (pstats format)")
    g.add_argument("--verbose-ioazd", action="store_true",
                   help="ioazd logs every window's class and verdict on every workload (it "
                        "does on the mixes anyway), at about a tenth more of its CPU")
    g.add_argument("--trace", default="", metavar="WHAT,...",
                   help="diagnostics recorded in the guest beside each run (not a measurement "
                        "to compare with runs without them): vm (dirty and write-back data, "
                        "the disk's bytes, each second), bfq (bfq's own messages for "
                        "--trace-bfq-s after it is set)")
    g.add_argument("--trace-bfq-s", type=float, default=20.0, metavar="S",
                   help="seconds of bfq's messages kept with --trace bfq (default 20)")
    g.add_argument("--trace-bfq-at", type=float, default=0.0, metavar="S",
                   help="with --trace bfq, a static contender's trace starts S seconds into "
                        "the run, for a mix's later phase (default 0; a late switch's starts "
                        "at the switch)")
    g.add_argument("--bfq-module", type=Path, default=None, metavar="KO",
                   help="the guest loads this bfq.ko (inside the checkout, which the guest "
                        "mounts) in place of its kernel's own before the first run: a patched "
                        "bfq (kmod/bfq-late-switch/)")
    g.add_argument("--next-matrices", default=None, metavar="PREFIX",
                   help=f"matrices derived and not shipped, PREFIX-GOAL.yaml for every goal "
                        f"(derive's --out-dir DIR --name NAME: DIR/NAME), run by the contenders "
                        f"with {bench.NEXT} after them beside the shipped")
    g.add_argument("--from-results", type=Path, default=None, metavar="DIR",
                   help="write the report from an earlier run's DIR/guest, booting nothing")


def plan_from(args: argparse.Namespace) -> bench.Plan:
    given = [c.strip() for c in args.contenders.split(",") if c.strip()]
    # `CONTENDER-restless` and the other variants are checked as their CONTENDER
    cs = [(bench.variant_of(c) or (c, {}))[0] for c in given]
    named = ("ioazd", bench.DRY, *bench.KERNEL_CONTENDERS, bench.STREAM_TUNED)
    bad = [g for g, c in zip(given, cs, strict=True)
           if not bench.is_static(c) and c not in named
           and not (c.startswith("ioazd-") and c.removeprefix("ioazd-") in bench.GOALS)
           and not bench.is_static(bench.dry_base(c) or "")
           and not bench.is_static((bench.late_of(c) or (0, ""))[1])]
    if bad:
        raise ValueError(f"--contenders: unknown {', '.join(bad)}; use "
                         f"{', '.join([*bench.STATIC, *named])}, ioazd-GOAL "
                         f"(GOAL: {', '.join(bench.GOALS)}), {bench.DRY_OVER}STATIC "
                         "(STATIC: a static contender above), lateN@STATIC (STATIC set N s "
                         "into the run), primedN@STATIC (the same, by a process that reads "
                         "blocks through the switch), STATIC+KNOB=INTEGER... (the scheduler's "
                         "queue/iosched knobs set with it), and any ioazd contender with "
                         f"{bench.RESTLESS} (never at rest), {bench.WBT_KERNEL} (the "
                         f"kernel's writeback throttling left on), {bench.MINUTE} (one window "
                         f"a minute) or {bench.NO_MEMBER} (no class membership) after it")
    tuned = [c for c in cs if bench.STREAM_TUNED in (c, bench.dry_base(c))]
    if any(c in bench.KERNEL_CONTENDERS for c in cs) or tuned:
        missing = [str(f) for f in bench.kernel_matrix_files(args.queue_depth, args.model)
                   if not f.is_file()]
        if missing:
            raise ValueError(f"--contenders {bench.KERNEL}/{bench.STREAM_TUNED}: no matrix "
                             f"calibrated on {args.model} at this queue depth: "
                             f"{', '.join(missing)} "
                             "(decision_matrices/kernel/README.md says how they are made)")
        bench.tuned_statics(cs, args.queue_depth, args.model)   # stream-tuned: their curve
    next_matrices = next_matrices_from(args.next_matrices, given)
    with_model = [c for c in cs if c in bench.MODEL_CONTENDERS]
    if with_model:
        model = bench.kernel_model_file(args.queue_depth, args.model)
        if not model.is_file():
            raise ValueError(f"--contenders {with_model[0]}: no model trained on "
                             f"{args.model} at this queue depth: {model} "
                             "(decision_matrices/kernel/README.md says how it is made)")
        if not json.loads(model.read_text()).get("portable"):
            raise ValueError(f"--contenders {with_model[0]}: {model} has no portable "
                             "form, and the guest has no scikit-learn: retrain it with "
                             "ioaz-lab train")
    if not args.raid and (args.members != 4 or args.chunk_kb != 512):
        raise ValueError("--members and --chunk-kb describe an array: give --raid 0, 5 or 10")
    if args.raid:
        least = {"0": 2, "5": 3, "10": 4}[args.raid]
        if not least <= args.members <= 8:
            raise ValueError(f"--members {args.members}: RAID {args.raid} takes {least} to 8 "
                             "disks here")
        if args.chunk_kb < 4 or args.chunk_kb & (args.chunk_kb - 1):
            raise ValueError(f"--chunk-kb {args.chunk_kb}: a power of two, 4 or more")
    trace = tuple(t.strip() for t in args.trace.split(",") if t.strip())
    unknown = [t for t in trace if t not in bench.TRACES]
    if unknown:
        raise ValueError(f"--trace: unknown {', '.join(unknown)}; use {', '.join(bench.TRACES)}")
    if args.trace_bfq_s <= 0:
        raise ValueError(f"--trace-bfq-s {args.trace_bfq_s:g}: must be positive")
    if args.trace_bfq_at < 0:
        raise ValueError(f"--trace-bfq-at {args.trace_bfq_at:g}: must be 0 or more")
    bfq_module = None
    if args.bfq_module is not None:
        ko = args.bfq_module.resolve()
        if not ko.is_file() or ko.suffix != ".ko":
            raise ValueError(f"--bfq-module {args.bfq_module}: not a built .ko file")
        if not ko.is_relative_to(bench.REPO):
            raise ValueError(f"--bfq-module {args.bfq_module}: must be inside {bench.REPO}, "
                             "which the guest mounts")
        bfq_module = str(ko.relative_to(bench.REPO))
    chosen = workloads.select(args.workloads)
    raw = [w.name for w in chosen if w.disk == "raw"]
    if raw:
        try:   # the guest would find this only after its setup, every run lost
            workloads.placement(modeldisk.make_device(args.model, 1, None).capacity_sectors
                                * 512)
        except (ValueError, TestbedError) as e:
            raise ValueError(f"--model {args.model}: {e} ({', '.join(raw)})") from e
    rounds = args.rounds or 3
    if rounds < 1 or args.runtime <= 0 or args.phase <= 0:
        raise ValueError("--rounds, --runtime and --phase must be positive")
    return bench.Plan(workloads=chosen, contenders=given,
                      rounds=rounds, runtime_s=args.runtime, phase_s=args.phase,
                      model=args.model, kernel=args.kernel,
                      queue_depth=args.queue_depth, path_credit_us=args.path_credit_us,
                      raid=args.raid, members=args.members, chunk_kb=args.chunk_kb,
                      profile=args.profile_ioazd, verbose=args.verbose_ioazd,
                      cpus=args.cpus, trace=trace, trace_bfq_s=args.trace_bfq_s,
                      trace_bfq_at=args.trace_bfq_at, bfq_module=bfq_module,
                      next_matrices=next_matrices)


def next_matrices_from(prefix: str | None, contenders: list[str]) -> str | None:
    """--next-matrices and the -next contenders: each needs the other, and every goal's
    file must load as a matrix (the guest's ioazd would refuse to start on it, a run lost)."""
    nexts = [c for c in contenders if bench.NEXT in c]
    if prefix is None:
        if nexts:
            raise ValueError(f"--contenders {nexts[0]}: give --next-matrices PREFIX, the "
                             "matrices it runs")
        return None
    if not nexts:
        raise ValueError(f"--next-matrices {prefix}: no contender runs them; add "
                         f"{bench.NEXT} after an ioazd contender (ioazd-kernel{bench.NEXT})")
    for goal, f in bench.next_matrix_files(prefix).items():
        if not f.is_file():
            raise ValueError(f"--next-matrices {prefix}: no matrix for goal {goal} ({f})")
        try:
            load_matrix(f)
        except ValidationError as e:
            raise ValueError(f"--next-matrices {prefix}: {f}: not a matrix: {e}") from e
    return str(Path(prefix).resolve())


def elevators_for(series: str) -> None:
    """Build kmod's elevators for the guest's kernel when they are missing or older than their
    sources: in the guest, a missing one shows only after the boot, as a contender failing."""
    release = image.kernels().get(series)
    if release is None:
        return   # vm refuses the series, naming the ones the image has
    problem = bench.elevator_module_problem(release)
    if problem is None:
        return
    print(f"testbed bench: {problem}; building kmod's elevators for {release}", flush=True)
    image.CACHE.mkdir(parents=True, exist_ok=True)
    try:
        if series == trixie.SERIES_73:
            trixie.build_kmod(bench.REPO, image.CACHE, image.SOURCES)
        else:
            image.build_elevators(bench.REPO, release, image.CACHE / "kmod.log")
    except TestbedError as e:
        raise ValueError(str(e)) from e


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    from ioaz.lab.report import Report
    from ioaz.lab.testbench import bench_report, bench_sim

    if args.from_results:
        out = Path(args.from_results)
        meta = bench.load_meta(out)
    else:
        plan = plan_from(args)
        if bench.needs_elevators(plan.contenders):
            elevators_for(plan.kernel)
        out = Path(args.out) / f"testbed-{time.strftime('%Y%m%d-%H%M%S')}"
        print(f"testbed bench: {len(plan.workloads)} workloads x {len(plan.contenders)} "
              f"contenders x {plan.rounds} rounds, about {plan.seconds() / 60:.0f} min; "
              f"results in {out}", flush=True)
        try:
            meta = bench.run(plan, out, command=shlex.join(["ioaz-lab", "bench", *sys.argv[2:]]),
                             beside=args.beside)
        except TestbedError as e:
            raise ValueError(str(e)) from e
    table = bench.collect(out / "guest")
    meta["guest_kernel"] = json.loads((out / "guest" / "guest.json").read_text())["kernel"]
    analysis = bench_report.analyse(table)
    rep = Report(out, f"ioazd against static schedulers on {meta['model']} model disks, "
                      f"kernel {meta['kernel']} (testbed)")
    bench_report.write(rep, analysis, meta)
    qd = bench.guest_queue_depth(out / "guest")
    if meta.get("raid"):
        # the simulator's arrays are hardware RAID (one queue in front of a controller), not
        # md's member disks each with its own scheduler: no twin to set beside it
        return {"summary": rep.summary, "report": str(rep.write())}
    tags = bench.guest_tags(out / "guest")
    plan = json.loads((out / "guest" / "plan.json").read_text())
    sim = bench_sim.simulate(meta["model"], qd, meta["phase_s"], meta["runtime_s"],
                             [c for c in analysis["contenders"] if c in bench_sim.STAND_IN], tags,
                             plan.get("tuned"), ran=set(table))
    bench_report.write_sim(rep, bench_sim.compare(bench_sim.real_means(table), sim), qd, tags)
    md = rep.write()
    return {"summary": rep.summary, "report": str(md)}
