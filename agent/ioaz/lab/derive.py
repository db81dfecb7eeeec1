"""`ioaz-lab derive DATASET`: the decision matrix of each goal from a calibration dataset.

    ioaz-lab derive hp72.csv [more.csv ...] --out-dir matrices/ [--name hp72] \
      [--min-margin 0.02] [--p99-slack 0.10] [--ioaz-axes | --size-axis]

Writes OUT_DIR/NAME-GOAL.yaml for the goals min, max, mean, throughput and latency, in the
schema of decision_matrices/ (each file is validated before it is kept), every cell with the
margin its policy won by and the runs behind it (ioaz.learn.derive says how). The cells are
IOAZ's classes split by depth (16+/sequential/read/shallow and .../deep); --ioaz-axes keeps
IOAZ's three axes, --size-axis splits them also by request size (.../deep/small and
.../deep/large) where the calibration has both. Several datasets of one disk are read as
one, a workload a later one measured again replacing its runs in the earlier ones (as train
reads them); the stream elevator's tunables come from the service-time curve calibrate wrote
beside the first dataset that has one (DATASET.curve.json). Point ioazd at them with a
matrix rule:

    decide:
      matrix_rules:
        - match: {name: sdb}
          matrices: {mean: /path/NAME-mean.yaml, min: /path/NAME-min.yaml, ...}
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..classify.classes import ThresholdsError
from ..decide import load_policies, validate_file
from ..decide.matrix import GOALS
from ..learn.curve import tunables_beside
from ..learn.dataset import DatasetError, read_merged, without_candidates
from ..learn.derive import (
    AXES,
    IOAZ_AXES,
    SIZE_AXES,
    derive_table,
    matrix_doc,
    table_device,
    write_matrix,
)
from ..learn.noise import rep_spread


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", nargs="+",
                   help="CSV written by ioaz-lab calibrate; several, of one disk: a workload "
                        "a later one measured again replaces its runs in the earlier ones")
    p.add_argument("--out-dir", default=".", help="where the matrix files go")
    p.add_argument("--name", help="matrix name prefix (default: from the dataset file name)")
    p.add_argument("--goal", action="append", choices=GOALS,
                   help="only these goals (repeatable; default all)")
    p.add_argument("--min-margin", type=float, default=0.02,
                   help="a winner needs this many share points over the runner-up (0.02 = 2)")
    p.add_argument("--thresholds", help="class thresholds YAML (default: ioaz's)")
    p.add_argument("--unclear-policy", metavar="POLICY",
                   help="what a cell without a clear winner names when that policy is part "
                        "of the tie, within the margin of the best, or the cell has no "
                        "workload (e.g. deadline, the kernel's default for disks: ioazd then "
                        "leaves such a disk alone); otherwise, and by default, the policy the "
                        "data leaned to")
    p.add_argument("--exclude", default="", metavar="POLICY[,POLICY]",
                   help="candidates no cell may name, their runs left out (e.g. fifo, a "
                        "measurement baseline that never merges: a buffered writer, which the "
                        "grid does not run, would get its pages one request each)")
    p.add_argument("--p99-slack", type=float, default=0.10, metavar="FRACTION",
                   help="a policy within a cell's margin whose p99 latency was more than this "
                        "much over the cell's policy's is not listed within_noise, so ioazd "
                        "does not keep it for noise (0.10 = 10%%, the default; a negative "
                        "value keeps every tie)")
    axes = p.add_mutually_exclusive_group()
    axes.add_argument("--ioaz-axes", action="store_true",
                      help="cells by IOAZ's processes/pattern/mode only, without the depth axis")
    axes.add_argument("--size-axis", action="store_true",
                      help="cells split also by the mean request size (small|large, "
                           "thresholds.yaml large_min_request_kb), where the calibration has "
                           "workloads of both sizes in a class")


def run(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.dataset]
    ds = paths[0]
    try:
        rows, t = read_merged(paths, args.thresholds)
    except (OSError, DatasetError, ThresholdsError) as e:
        print(f"ioaz-lab derive: {e}", file=sys.stderr)
        return 2
    if not rows:
        print(f"ioaz-lab derive: {', '.join(map(str, paths))}: no runs", file=sys.stderr)
        return 2
    if args.unclear_policy and args.unclear_policy not in load_policies().policies():
        print(f"ioaz-lab derive: --unclear-policy {args.unclear_policy!r}: not a policy of "
              f"policies.yaml (expected one of {', '.join(load_policies().policies())})",
              file=sys.stderr)
        return 2
    try:
        rows, excluded = without_candidates(rows, args.exclude, ds)
    except DatasetError as e:
        print(f"ioaz-lab derive: {e}", file=sys.stderr)
        return 2
    try:
        tunables = next((tb for tb in map(tunables_beside, paths) if tb), {})
    except ValueError as e:
        print(f"ioaz-lab derive: {e}", file=sys.stderr)
        return 2
    name = (args.name or table_device(ds)).lower()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    bad = 0
    axes = IOAZ_AXES if args.ioaz_axes else SIZE_AXES if args.size_axis else AXES
    for goal in args.goal or GOALS:
        _say_noise(rows, goal, args.min_margin)
        table = derive_table(rows, goal, t, args.min_margin, axes, args.unclear_policy,
                             args.p99_slack if args.p99_slack >= 0 else None)
        doc = matrix_doc(f"{name}-{goal}", goal, table, paths, len(rows), args.min_margin,
                         axes, excluded, tunables)
        _say_untuned(table, tunables, paths, goal)
        path = out_dir / f"{name}-{goal}.yaml"
        write_matrix(path, doc)
        issues = validate_file(path)
        for i in issues:
            print(i, file=sys.stderr)
        bad += bool(issues)
        measured = [c for c in table.values() if not c.empty]
        clear = sum(c.clear for c in measured)
        print(f"{path}: goal {goal}: {len(measured)} of {len(table)} cells measured, {clear} "
              f"with a clear winner" + (" INVALID" if issues else ""))
        for c in sorted(measured, key=lambda c: c.key):
            print(f"  {c.key:30s} {c.policy:13s} {'' if c.clear else '(unclear) '}{c.note()}")
    return 1 if bad else 0


def _say_untuned(table: dict, tunables: dict, paths: list[Path], goal: str) -> None:
    """A cell naming stream without the disk's fitted tunables gets the elevator's defaults,
    which are another disk's: said, so a merged or copied dataset's lost curve shows."""
    stream = sorted(k for k, c in table.items() if c.policy == "stream" and not c.empty)
    if stream and "stream" not in tunables:
        print(f"ioaz-lab derive: goal {goal}: {len(stream)} cells name stream ({stream[0]}"
              f"{', ...' if len(stream) > 1 else ''}) but no curve file is beside "
              f"{', '.join(map(str, paths))} (DATASET.curve.json, which calibrate "
              "writes): the matrix carries no stream tunables, so ioazd runs stream with its "
              "defaults, not ones fitted to this disk", file=sys.stderr)


def _say_noise(rows: list, goal: str, margin: float) -> None:
    """A winner's margin means something only above what a run differs from its repeat."""
    spread = rep_spread(rows, goal)
    if spread is None:
        print(f"ioaz-lab derive: goal {goal}: one run per candidate and workload, so how much "
              f"a run differs from its repeat is not known; a lead of {margin * 100:g} points "
              "may be noise (calibrate with --reps 2 or more)", file=sys.stderr)
    elif spread > margin:
        print(f"ioaz-lab derive: goal {goal}: repeats of a run differ by {spread * 100:.1f}% "
              f"(median), more than the {margin * 100:g}-point margin; --min-margin "
              f"{math.ceil(spread * 100) / 100:.2f} or more keeps noise from deciding cells",
              file=sys.stderr)
