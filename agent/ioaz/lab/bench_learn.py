"""The full learn run behind `ioaz-lab bench learn`: calibrate the simulator's HDD and RAID
models, derive their matrices, and for every goal report the model's held-out accuracy and
performance loss against the per-workload best next to the derived matrix's.

The whole grid (360 workloads) x 10 policies x 8 simulated seconds per device: on one core of
this machine about 8 minutes of calibration for the HDD, 25 for the RAID 5, then about 2-3
minutes of cross-validated training per goal and device. The whole grid, because fewer of its
workloads leave ways they differ uncovered (docs/results.md, "Learning: why the trainer is
shaped so"). Datasets are kept in build/learn/ (a rerun resumes or reuses them); the report
is printed and written to build/learn/report.json.

The noise floor (ioaz.learn.noise): the first `noise_workloads` (120) workloads run a second
time with another simulator seed (`calibrate --first-rep 1`, into NAME.rep1.csv: about a third
of the calibration time again); the loss of picking one run's per-workload best scored on the
other run is what measurement noise alone costs a perfect classifier of single-run labels.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..classify.classes import DEFAULT_THRESHOLDS, load_thresholds
from ..decide.matrix import GOALS
from ..learn import grid, noise
from ..learn.dataset import Row, read_rows

REPO = Path(__file__).resolve().parents[3]
MODELS = ("carroll-hp72", "raid5-carroll")
TARGET = 0.03
NOISE_WORKLOADS = 120


def run(out_dir: Path | None = None, workloads: int = 360, seconds: float = 8.0,
        models: tuple[str, ...] = MODELS, goals: tuple[str, ...] = GOALS,
        noise_workloads: int = NOISE_WORKLOADS) -> dict[str, Any]:
    from ..learn import trainer
    from .main import main as lab
    out = out_dir or REPO / "build" / "learn"
    out.mkdir(parents=True, exist_ok=True)
    t = load_thresholds(DEFAULT_THRESHOLDS)
    result: dict[str, Any] = {"workloads": workloads, "seconds": seconds,
                              "noise_workloads": noise_workloads, "devices": {}}
    for m in models:
        ds = out / f"{m}.csv"
        lab(["calibrate", "--model", m, "--out", str(ds), "--workloads", str(workloads),
             "--seconds", str(seconds)])
        lab(["derive", str(ds), "--out-dir", str(out / "matrices"), "--name", m])
        rows = read_rows(ds)
        twice = _second_runs(lab, m, out, rows, noise_workloads, seconds)
        per: dict[str, Any] = {}
        for g in goals:
            ev = trainer.evaluate(rows, g, t).as_dict()
            ev.pop("per_workload")
            ev["noise_floor"] = noise.noise_floor(twice, g)
            per[g] = ev
            print(_line(m, g, ev), file=sys.stderr)
        est, fam, _ = trainer.train_final(rows, "mean")
        from ..model import file as model_file
        model_file.save(out / f"{m}-mean.model.json", est, samples=trainer.samples(rows),
                        goal="mean", family=fam, policy_of={r.candidate: r.policy for r in rows},
                        trained_on={"dataset": ds.name, "rows": len(rows),
                                    "workloads": len({r.workload for r in rows})},
                        evaluation=per["mean"])
        result["devices"][m] = per
    (out / "report.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def _second_runs(lab: Any, m: str, out: Path, rows: list[Row], n: int,
                 seconds: float) -> list[Row]:
    """The first n workloads' runs of the dataset and their second runs (repetition 1)."""
    if n <= 0:
        return []
    again = out / f"{m}.rep1.csv"
    lab(["calibrate", "--model", m, "--out", str(again), "--workloads", str(n),
         "--seconds", str(seconds), "--first-rep", "1"])
    ids = {w.id for w in grid.sample(n)}
    return [r for r in rows + read_rows(again) if r.workload in ids]


def _line(m: str, g: str, ev: dict[str, Any]) -> str:
    return (f"{m:14s} {g:10s} accuracy {100 * ev['accuracy']:5.1f}%  loss: model "
            f"{100 * ev['model_loss']:5.2f}%  matrix {100 * ev['matrix_loss']:5.2f}%  "
            f"model+fallback {100 * ev['fallback_loss']:5.2f}%  always "
            f"{ev['fixed_policy']} {100 * ev['fixed_loss']:5.2f}%  closed loop: model "
            f"{100 * ev['model_loop_loss']:5.2f}% matrix {100 * ev['matrix_loop_loss']:5.2f}%"
            + ("" if ev.get("noise_floor") is None else
               f"  noise floor {100 * ev['noise_floor']:4.2f}%"))


def print_report(r: dict[str, Any]) -> None:
    print(f"learn: {r['workloads']} workloads x 10 policies, {r['seconds']:g} s simulated "
          "each; held out by workload (5 folds); loss = mean share of the per-workload best "
          f"lost (target: model < {100 * TARGET:g}% and <= matrix); noise floor: one run's "
          f"best scored on a second run, {r.get('noise_workloads', 0)} workloads")
    for m, per in r["devices"].items():
        for g, ev in per.items():
            ok = ev["model_loss"] < TARGET and ev["model_loss"] <= ev["matrix_loss"]
            print(_line(m, g, ev) + ("" if ok else "  (target missed)"))
