"""`ioaz-lab train DATASET --goal G`: a scikit-learn classifier from a window's features to
the best policy for goal G, evaluated on held-out workloads.

    ioaz-lab train hp72.csv --goal mean --out hp72-mean.model.json [--report r.json]

Tries a decision tree, a random forest, gradient boosting and logistic regression, picks by
cross-validated performance loss (GroupKFold over workloads: a workload's runs are never split
between training and test), and prints the held-out accuracy, the confusion matrix, and the
share of the per-workload best performance lost when following the model, following the
matrix derived from the same training workloads, following the model with the matrix as
fallback where it is unsure (--min-confidence for a classifier, --min-margin for a share
model: what ioazd does), and always running the single best policy.

Saved as OUT (a JSON manifest: goal, feature schema, labels, versions, evaluation), the model's
portable form next to it (its trees or linear map as JSON, checked to score as the estimator
does: what ioazd runs, without scikit-learn) and a skops file (the estimator itself, never a
pickle). ioazd uses it with:

    classifier: {type: model, model: OUT, min_confidence: 0.6, min_margin: 0.05}
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..classify.classes import ThresholdsError
from ..decide.matrix import GOALS
from ..learn.dataset import (
    DatasetError,
    read_merged,
    with_direct_dirty_zero,
    without_candidates,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", nargs="+",
                   help="CSV written by ioaz-lab calibrate; a workload a later one measured "
                        "again replaces its runs in the earlier ones")
    p.add_argument("--dirty-direct-zero", action="store_true",
                   help="rows written before dirty_fill (the disk's dirty data) whose workload "
                        "writes nothing through the page cache read 0, as O_DIRECT on the raw "
                        "disk leaves (a real calibration's; not the simulator's)")
    p.add_argument("--goal", choices=GOALS, required=True)
    p.add_argument("--out", help="model manifest to write (default DATASET-GOAL.model.json)")
    p.add_argument("--folds", type=int, default=5, help="held-out folds over workloads")
    p.add_argument("--min-confidence", type=float, default=0.6,
                   help="a classifier's top probability below this: the daemon falls back to "
                        "the matrix (for the report)")
    p.add_argument("--min-margin", type=float, default=0.05,
                   help="a share model's top share over its runner-up below this: the same")
    p.add_argument("--tie", type=float, default=0.04,
                   help="candidates within this share of the best count as tied")
    p.add_argument("--report", help="also write the report as JSON here")
    p.add_argument("--thresholds", help="class thresholds YAML (default: ioaz's)")
    p.add_argument("--exclude", default="", metavar="POLICY[,POLICY]",
                   help="candidates the model may never pick, their runs left out (as derive's "
                        "--exclude: fifo, which never merges, for a model that may meet a "
                        "buffered writer)")


def pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def print_report(ev: dict, fam: str, scores: dict, out=sys.stdout) -> None:
    print(f"goal {ev['goal']}: {ev['workloads']} workloads, {ev['rows']} runs, "
          f"{ev['folds']} held-out folds by workload", file=out)
    print("model families (GroupKFold over all workloads; loss = share of the per-workload "
          "best lost):", file=out)
    for n, s in sorted(scores.items(), key=lambda kv: kv[1]["loss"]):
        print(f"  {n:9s} loss {pct(s['loss']):>7s}  accuracy {pct(s['accuracy']):>7s}"
              f"{'  <- kept' if n == fam else ''}", file=out)
    print(f"held-out accuracy: {pct(ev['accuracy'])} (families per fold: "
          f"{', '.join(ev['families_chosen'])})", file=out)
    print("held-out performance lost against the per-workload best (mean / worst run):",
          file=out)
    print(f"  model:                     {pct(ev['model_loss']):>7s} / "
          f"{pct(ev['model_loss_max'])}", file=out)
    print(f"  derived matrix:            {pct(ev['matrix_loss']):>7s} / "
          f"{pct(ev['matrix_loss_max'])}", file=out)
    print(f"  model, matrix where unsure: {pct(ev['fallback_loss']):>7s} "
          f"({pct(ev['below_confidence'])} of runs fell back: probability below "
          f"{ev['min_confidence']:.2f}, share margin below {ev['min_margin']:.2f})", file=out)
    print(f"  always {ev['fixed_policy']:13s}      {pct(ev['fixed_loss']):>7s}", file=out)
    print(f"closed loop (switch, measure again, until the choice stays): model "
          f"{pct(ev['model_loop_loss'])}, matrix {pct(ev['matrix_loop_loss'])}", file=out)
    labs = ev["labels"]
    w = max(6, *(len(x) for x in labs)) + 1
    print("confusion matrix (rows: best policy, columns: predicted):", file=out)
    print(" " * w + "".join(f"{x[:w - 1]:>{w}s}" for x in labs), file=out)
    for lab, row in zip(labs, ev["confusion"], strict=True):
        print(f"{lab:<{w}s}" + "".join(f"{v:>{w}d}" for v in row), file=out)


def run(args: argparse.Namespace) -> int:
    try:
        import sklearn  # noqa: F401
        import skops  # noqa: F401
    except ImportError as e:
        print(f"ioaz-lab train: needs scikit-learn and skops ({e}); pip install "
              "'ioaz[learn]' (make venv installs them)", file=sys.stderr)
        return 2
    from ..learn import trainer
    from ..model import file as model_file
    paths = [Path(p) for p in args.dataset]
    ds = paths[0]
    try:
        rows, t = read_merged(paths, args.thresholds)
        rows, excluded = without_candidates(rows, args.exclude, ds)
    except (OSError, DatasetError, ThresholdsError) as e:
        print(f"ioaz-lab train: {e}", file=sys.stderr)
        return 2
    # said before the training, not after it: a missing directory would cost its minutes
    out = Path(args.out or ds.with_name(f"{ds.stem}-{args.goal}.model.json"))
    for opt, dest in (("--out", out), ("--report", Path(args.report) if args.report else None)):
        if dest is not None and not dest.parent.is_dir():
            print(f"ioaz-lab train: {opt} {dest}: no directory {dest.parent}", file=sys.stderr)
            return 2
    zeroed = 0
    if args.dirty_direct_zero:
        rows, zeroed = with_direct_dirty_zero(rows)
        print(f"dirty_fill taken as 0 in {zeroed} runs of O_DIRECT workloads measured before "
              "it", file=sys.stderr)
    n_work = len({r.workload for r in rows})
    if n_work < 4:
        print(f"ioaz-lab train: {ds}: {n_work} workloads; held-out evaluation needs at least 4",
              file=sys.stderr)
        return 2
    ev = trainer.evaluate(rows, args.goal, t, k=args.folds, tie=args.tie,
                          min_confidence=args.min_confidence,
                          min_margin=args.min_margin).as_dict()
    est, fam, scores = trainer.train_final(rows, args.goal, tie=args.tie)
    policy_of = {r.candidate: r.policy for r in rows}
    report = {**ev, "family": fam, "family_scores": scores}
    trained_on = {"dataset": ", ".join(p.name for p in paths), "rows": len(rows),
                  "workloads": n_work, "dirty_direct_zero": zeroed,
                  "devices": sorted({r.device for r in rows}), "excluded": list(excluded)}
    try:
        model_file.save(out, est, samples=trainer.samples(rows), goal=args.goal, family=fam,
                        policy_of=policy_of, trained_on=trained_on,
                        evaluation={k: v for k, v in report.items() if k != "per_workload"})
    except (OSError, model_file.ModelError) as e:
        print(f"ioaz-lab train: {e}", file=sys.stderr)
        return 1
    print_report(ev, fam, scores)
    doc = json.loads(out.read_text())
    print(f"model -> {out} (+ {doc['portable']}, which ioazd runs, and {doc['skops']})")
    if args.report:
        try:
            Path(args.report).write_text(json.dumps(report, indent=1) + "\n")
        except OSError as e:
            print(f"ioaz-lab train: --report {args.report}: {e}", file=sys.stderr)
            return 1
    return 0
