"""`ioaz-lab calibrate`: measure which policy serves which workload best on one device.

    ioaz-lab calibrate --model carroll-hp72 --out hp72.csv          # a simulator device model
    ioaz-lab calibrate --device loop3 --out loop3.csv --destructive  # a real, empty device

Every workload of the grid (ioaz.learn.grid: the IOAZ categories and more: sizes, read/write
mixes, think times, queue depths, process counts, file spacing) runs under every candidate
(on a model: every policy the simulator has; on a device: every policy of policies.yaml whose
realisation the kernel offers, duplicates once), and ioaz's own feature code measures it.
One CSV row per run (ioaz.learn.dataset); an interrupted calibration resumes where it
stopped when run again with the same --out. Progress with an ETA goes to stderr.

It also writes the distance-to-service-time curve and the stream tunables fitted to it
(Xu & Jiang 3.2) to OUT.curve.json.

A real device is refused when it is mounted, held by another device (LVM, RAID, dm) or holds
a filesystem or partition table (blkid); --destructive is required anyway, because the write
workloads overwrite it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..actuate.knob_rules import WRITEBACK_THROTTLING
from ..learn import curve, grid
from ..learn.dataset import DatasetWriter
from ..learn.progress import Progress
from ..probe import PROBE_CHOICES


def add_arguments(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--model", help="simulator device model: a name (ioaz-lab sim --list) "
                       "or a YAML file")
    where.add_argument("--device", help="a real block device (sdX, loopN or /dev/...)")
    p.add_argument("--out", help="dataset CSV (default calibration-NAME.csv); resumed if it "
                   "exists")
    p.add_argument("--quick", action="store_true", help="test sizes: few workloads, short runs")
    p.add_argument("--workloads", type=int, help="how many workloads of the grid "
                   "(default 120, --quick 14 on a model; 24 / 4 on a device)")
    p.add_argument("--seconds", type=float, help="length of each run (default 8 on a model, "
                   "4 on a device; --quick 2 / 1)")
    p.add_argument("--reps", type=int, default=1, help="repetitions of each run")
    p.add_argument("--first-rep", type=int, default=0, help="number of the first repetition "
                   "(on a model repetition r runs the simulator with seed 1 + r: --first-rep 1 "
                   "measures the same runs again with other randomness)")
    p.add_argument("--seed", type=int, default=7, help="which sample of the grid")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--cells", metavar="CELL[,CELL]",
                       help="instead of a sample: workloads of the grid built for these "
                            "matrix cells (PROCESSES/PATTERN/MODE/DEPTH, e.g. "
                            "4/sequential/write/shallow, or with /SIZE after it, small or "
                            "large: 4/sequential/write/shallow/large)")
    which.add_argument("--fill-empty", action="store_true",
                       help="instead of a sample: workloads built for every cell in which no "
                            "workload of the --out dataset fell (add them to it)")
    which.add_argument("--ids", metavar="ID[,ID]",
                       help="instead of a sample: these workloads, by their dataset id "
                            "(e.g. 4p-seq-read-128k-t0-d1-g1_2), to measure them again or "
                            "with --stagger-ms; suffix -b: writers through the page cache "
                            "(on a mixed workload: readers beside them), -c: readers too, "
                            "-f (last): the files on an ext4 file system made on the disk "
                            "(--destructive)")
    p.add_argument("--stagger-ms", type=float, default=0.0, metavar="MS",
                   help="start each workload's processes MS apart instead of together (a "
                        "new workload id, suffix -sMS): bfq merges the queues of processes "
                        "that start within 180 ms of each other")
    p.add_argument("--warmup-s", type=float, default=0.0, metavar="S",
                   help="run each workload S seconds (after its last process started) before "
                        "the measured --seconds (a new workload id, suffix -wS): bfq "
                        "weight-raises new queues for their first 3-13 s")
    p.add_argument("--size-axis", action="store_true",
                   help="with --fill-empty: the cells split also by request size, as "
                        "`ioaz-lab derive --size-axis` derives them (a class measured at one "
                        "size is filled at the other)")
    p.add_argument("--per-cell", type=int, default=1, metavar="N",
                   help="with --cells or --fill-empty: workloads per cell (default 1)")
    p.add_argument("--queue-depth", type=int, metavar="N",
                   help="with --model: the simulated drive's command queue depth instead of "
                        "the model's (the testbed's model disks run at the guest's 32)")
    p.add_argument("--blk-mq", action="store_true",
                   help="with --model: today's block-layer request limits (queue/nr_requests: "
                        "the drive's queue depth without a scheduler, so fcfs as `none` never "
                        "merges; twice that, at most 256, with one), as on the testbed's kernel")
    p.add_argument("--tags", type=int, metavar="N",
                   help="with --blk-mq: the command slots the request limits are sized for "
                        "(default the drive's queue depth); the testbed's guest sized them for "
                        "its 32 before its disk's depth was set to 1, so its elevators hold 64")
    p.add_argument("--sim-scheduler", action="append", default=[], metavar="POLICY=NAME",
                   help="with --model: run the simulator's scheduler NAME for the candidate "
                        "POLICY (repeatable), e.g. anticipatory=bfq stream=stream-vr, the "
                        "stand-ins for what the kernel runs for them (ioaz-lab sim --list)")
    p.add_argument("--host-us", type=float, metavar="US",
                   help="with --model: each process's time from a completion to its next "
                        "request (default 20, a host's system call and wake-up); the testbed's "
                        "guest under TCG takes 100-900 (docs/reports/sim-path-2026-11-27)")
    p.add_argument("--candidates", help="comma-separated policies to try (default: all)")
    p.add_argument("--destructive", action="store_true",
                   help="allow writing to the device (its contents are destroyed)")
    p.add_argument("--probe", choices=PROBE_CHOICES, default="auto",
                   help="feature source on a real device")
    p.add_argument("--writeback-throttling", choices=WRITEBACK_THROTTLING, default="auto",
                   help="with --device: auto (default) measures every candidate as ioazd runs "
                        "it with its default goal, the kernel's writeback throttling off on a "
                        "rotating disk; kernel leaves it as the kernel ties it to the "
                        "scheduler (off under bfq only), as ioazd runs the latency goal")
    p.add_argument("--state-dir", help="where a real device's original settings are kept "
                   "until the calibration gives them back (default /run/ioaz/calibrate)")


class BadSelection(ValueError):
    """The workloads asked for cannot be chosen (the message says which option and why)."""


def _workloads(args: argparse.Namespace, real: bool) -> list[grid.WorkSpec]:
    works = _chosen(args, real)
    for opt, v in (("--stagger-ms", args.stagger_ms), ("--warmup-s", args.warmup_s)):
        if v < 0:
            raise BadSelection(f"{opt} {v:g}: expected 0 or more")
    if args.stagger_ms:
        works = [grid.staggered(w, args.stagger_ms) for w in works]
    if args.warmup_s:
        works = [grid.warmed(w, args.warmup_s) for w in works]
    # one process has no one to start apart from: a workload twice is measured once
    return list({w.id: w for w in works}.values())


def _chosen(args: argparse.Namespace, real: bool) -> list[grid.WorkSpec]:
    if args.ids:
        if args.workloads is not None or args.quick:
            raise BadSelection("--ids names the workloads itself; drop --workloads and --quick")
        try:
            return [grid.WorkSpec.from_id(i.strip()) for i in args.ids.split(",") if i.strip()]
        except ValueError as e:
            raise BadSelection(f"--ids: {e}") from None
    if args.cells or args.fill_empty:
        return _cell_workloads(args)
    if args.quick:
        n = args.workloads or (4 if real else 14)
        return grid.quick(n, args.seed)
    n = args.workloads or (24 if real else 120)
    return grid.sample(n, args.seed)


def _cell_workloads(args: argparse.Namespace) -> list[grid.WorkSpec]:
    from ..decide.matrix import all_cell_keys
    from ..learn.derive import AXES, SIZE_AXES
    if args.workloads is not None or args.quick:
        raise BadSelection("--cells and --fill-empty choose the workloads themselves; drop "
                           "--workloads and --quick")
    if args.per_cell < 1:
        raise BadSelection(f"--per-cell {args.per_cell}: expected 1 or more")
    if args.size_axis and not args.fill_empty:
        raise BadSelection("--size-axis goes with --fill-empty; with --cells name the size "
                           "in the cell (4/random/read/deep/large)")
    axes = SIZE_AXES if args.size_axis else AXES
    done: frozenset[str] = frozenset()
    if args.fill_empty:
        cells, done = _empty_cells(args, all_cell_keys(axes), axes)
        print(f"cells without a workload in {args.out}: {', '.join(cells) or 'none'}",
              file=sys.stderr)
    else:
        known = set(all_cell_keys(AXES)) | set(all_cell_keys(SIZE_AXES))
        cells = [c.strip() for c in args.cells.split(",") if c.strip()]
        bad = [c for c in cells if c not in known]
        if bad:
            raise BadSelection(f"--cells: not a cell: {', '.join(bad)} (expected "
                               f"PROCESSES/PATTERN/MODE/DEPTH[/SIZE], e.g. "
                               f"{all_cell_keys(AXES)[0]} or {all_cell_keys(SIZE_AXES)[-1]})")
    try:
        return grid.for_cells(cells, args.per_cell, args.seed, done)
    except ValueError as e:
        raise BadSelection(str(e)) from None


def _empty_cells(args: argparse.Namespace, known: list[str],
                 axes: tuple[str, ...]) -> tuple[list[str], frozenset[str]]:
    """The cells (in matrix order) no workload of the --out dataset fell in, by the
    classifier's own reading of its runs, and the dataset's workload ids."""
    from ..classify.classes import ThresholdsError
    from ..learn.dataset import DatasetError, read_with_thresholds
    from ..learn.derive import workload_classes
    if not args.out or not Path(args.out).exists():
        raise BadSelection("--fill-empty adds to a dataset: --out must name an existing one")
    try:
        rows, t = read_with_thresholds(Path(args.out), None)
    except (OSError, DatasetError, ThresholdsError) as e:
        raise BadSelection(f"--fill-empty: {e}") from None
    classes = workload_classes(rows, t, axes)
    filled = set(classes.values())
    return [c for c in known if c not in filled], frozenset(classes)


def run(args: argparse.Namespace) -> int:
    try:
        works = _workloads(args, real=args.model is None)
    except BadSelection as e:
        print(f"ioaz-lab calibrate: {e}", file=sys.stderr)
        return 2
    if not works:
        print("ioaz-lab calibrate: no workload to run", file=sys.stderr)
        return 0
    if args.model and args.host_us is not None and not 0 <= args.host_us <= 1e6:
        print(f"ioaz-lab calibrate: --host-us {args.host_us:g}: expected 0..1000000",
              file=sys.stderr)
        return 2
    if args.model and args.tags is not None and (not args.blk_mq or args.tags < 1):
        print(f"ioaz-lab calibrate: --tags {args.tags}: it sizes --blk-mq's request limits, so "
              "it needs --blk-mq and a count of 1 or more", file=sys.stderr)
        return 2
    if args.model:
        return _run_model(args, works)
    if args.queue_depth is not None:
        print("ioaz-lab calibrate: --queue-depth is for --model; a real device's depth is its "
              "device/queue_depth", file=sys.stderr)
        return 2
    if args.blk_mq or args.tags is not None or args.sim_scheduler or args.host_us is not None:
        print("ioaz-lab calibrate: --blk-mq, --tags, --sim-scheduler and --host-us are for "
              "--model; a real device has its kernel's limits, schedulers and processes",
              file=sys.stderr)
        return 2
    from ..learn import realcal
    from ..sysblock import BlockSysfs
    try:
        return realcal.run(args, works, BlockSysfs())
    except realcal.Refused as e:
        print(f"ioaz-lab calibrate: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:   # fio failed, or the device would not take a candidate
        print(f"ioaz-lab calibrate: {e}", file=sys.stderr)
        return 1


def _sim_schedulers(specs: list[str], cands: list[str]) -> dict[str, str] | None:
    """--sim-scheduler POLICY=NAME ... as {policy: simulator scheduler}; None (said) if bad."""
    from ..sim.schedulers import SCHEDULERS
    out: dict[str, str] = {}
    for spec in specs:
        pol, sep, name = spec.partition("=")
        if not sep or pol not in cands or name not in SCHEDULERS:
            print(f"ioaz-lab calibrate: --sim-scheduler {spec}: expected POLICY=NAME, POLICY one "
                  f"of the candidates ({', '.join(cands)}), NAME one of the simulator's "
                  f"schedulers ({', '.join(sorted(SCHEDULERS))})", file=sys.stderr)
            return None
        out[pol] = name
    return out


def _run_model(args: argparse.Namespace, works: list[grid.WorkSpec]) -> int:
    from ..learn import simcal
    from ..sim.devices import load_device
    if args.queue_depth is not None and not 1 <= args.queue_depth <= 256:
        print(f"ioaz-lab calibrate: --queue-depth {args.queue_depth}: expected 1..256",
              file=sys.stderr)
        return 2
    try:
        device = load_device(args.model, **(
            {"queue_depth": args.queue_depth} if args.queue_depth else {}))
    except (OSError, ValueError, KeyError) as e:
        print(f"ioaz-lab calibrate: cannot load device model {args.model!r}: {e}",
              file=sys.stderr)
        return 2
    name = Path(args.model).stem
    out = Path(args.out or f"calibration-{name}.csv")
    cands = list(simcal.SIM_CANDIDATES)
    if args.candidates:
        cands = [c.strip() for c in args.candidates.split(",") if c.strip()]
        bad = [c for c in cands if c not in simcal.SIM_CANDIDATES]
        if bad:
            print(f"ioaz-lab calibrate: unknown candidates {', '.join(bad)} (expected some of "
                  f"{', '.join(simcal.SIM_CANDIDATES)})", file=sys.stderr)
            return 2
    stand_in = _sim_schedulers(args.sim_scheduler, cands)
    if stand_in is None:
        return 2
    seconds = args.seconds or (2.0 if args.quick else 8.0)
    window_s = 0.5 if seconds <= 4 else 1.0
    doc = curve.write(curve.from_model(device, name), str(out) + ".curve.json")
    print(f"service-time curve of {name} (from the model) -> {out}.curve.json; stream "
          f"tunables {doc['stream_tunables']}", file=sys.stderr)
    # the kernel module's stream runs with the curve calibrate measured on the disk, and so
    # does its stand-in, with the curve of the model (the preset's is the module's default)
    curve_of = {c: doc["stream_tunables"] for c, s in stand_in.items() if s == "stream-vr"}
    jobs = [(w, c, r) for w in works for c in cands
            for r in range(args.first_rep, args.first_rep + args.reps)]
    bar = Progress(len(jobs), f"calibrate {name}")
    with DatasetWriter(out) as ds:
        for w, c, r in jobs:
            if (w.id, c, r) in ds.done:
                bar.skip()
                continue
            row = simcal.run_one(args.model, w, c, seconds, r, window_s,
                                 queue_depth=args.queue_depth, blk_mq=args.blk_mq,
                                 tags=args.tags, scheduler=stand_in.get(c),
                                 tunables=curve_of.get(c), host_us=args.host_us)
            row.device = name
            ds.write(row)
            bar.step(f"{w.id} {c}")
    print(f"{out}: {len(jobs)} runs ({bar.skipped} already there), {len(works)} workloads x "
          f"{len(cands)} candidates x {args.reps} reps, {seconds:g} s each", file=sys.stderr)
    return 0
