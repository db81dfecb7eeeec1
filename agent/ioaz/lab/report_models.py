"""Trained models for the benchmark report's `ioaz-model` agent: ioazd's `classifier: {type:
model}` on the simulator's wd500 disk (or the disk of `ioaz-lab bench report --device`).

The IOAZ matrices decide by class (processes 1|4|8|16+, sequential|random, read|write), and a
class can hold workloads that want different schedulers: on wd500, 16 synchronous sequential
readers want cfq (4x scan) while 16 asynchronous ones want scan or vr (1.6x cfq), so the
calibrated 16+/sequential/read cell (scan) is wrong for the first. A model reads the window's
features themselves (depth per process, think time, sizes), so it can tell them apart.

Made as `ioaz-lab calibrate --model wd500 --workloads 360` + `ioaz-lab train` would make them,
with one difference: the grid's 16 IOAZ categories, of which the mixes' phases other than
par-read, postmark and the database mix are made, and every grid workload with the same
layout (held_out), are left out of training, so the agent meets every phase unseen (those
three are not grid workloads, though the grid has neighbours of them; checked by
tests/unit/test_report_models.py). Kept in build/report/ under a digest of the code that
makes them and of the held-out set; rebuilt when either changes (about 6 minutes of CPU).
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / "build" / "report"
MODEL_DEVICE = "wd500"
SECONDS, WINDOW_S = 8.0, 1.0        # ioaz-lab calibrate's defaults on a model

# The code whose change changes the dataset or the models (not sim/matrices: derived, unused).
_SOURCES = ("sim", "learn", "classify")


def _digest() -> str:
    h = hashlib.sha256()
    pkg = ROOT / "agent" / "ioaz"
    for part in _SOURCES:
        for f in sorted((pkg / part).rglob("*")):
            if f.suffix in (".py", ".yaml") and f.is_file() and "matrices" not in f.parts:
                h.update(str(f.relative_to(pkg)).encode())
                h.update(f.read_bytes())
    h.update((ROOT / "decision_matrices" / "thresholds.yaml").read_bytes())
    return h.hexdigest()[:12]


def layout(ph: Any) -> tuple:
    """What the simulator runs in a phase, process by process (names left out): two
    workloads with the same layout are the same workload."""
    return tuple(sorted((p.op, p.read_fraction if p.op == "mixed" else None, p.pattern,
                         p.size_kb, p.sync, None if p.sync else p.depth, p.think_ms,
                         p.region_gb, p.span_gb, p.readahead_kb) for p in ph.procs))


def held_out() -> set[str]:
    """Workload ids kept out of training: the grid's IOAZ categories (the mixes reuse them)
    and every grid workload with the same layout (a single process's file gap changes
    nothing, so 1p-...-g40 is its category's twin)."""
    from ..learn import grid, simcal
    def key(w: Any) -> tuple:
        return layout(simcal.sim_workload(w, 1.0).phases[0])
    cats = {key(w) for w in grid.ioaz_categories()}
    return {w.id for w in grid.full_grid() if key(w) in cats}


def calibration(log=sys.stderr, device: str = MODEL_DEVICE) -> Path:
    """Every grid workload under every policy on the device model (resumable, like
    ioaz-lab calibrate)."""
    from ..learn import grid, simcal
    from ..learn.dataset import DatasetWriter
    from ..learn.progress import Progress
    out = CACHE / f"{device}-grid-{_digest()}.csv"
    works = grid.sample(len(grid.full_grid()))
    jobs = [(w, c) for w in works for c in simcal.SIM_CANDIDATES]
    bar = Progress(len(jobs), f"report: calibrate {device}", out=log)
    with DatasetWriter(out) as ds:
        for w, c in jobs:
            if (w.id, c, 0) in ds.done:
                bar.skip()
                continue
            row = simcal.run_one(device, w, c, SECONDS, 0, WINDOW_S)
            row.device = device
            ds.write(row)
            bar.step(f"{w.id} {c}")
    return out


def trained_models(goals: tuple[str, ...], log=sys.stderr,
                   device: str = MODEL_DEVICE) -> dict[str, Any]:
    """goal -> ioaz.model.file.Model, trained (family by GroupKFold, as ioaz-lab train)
    on the device model's calibration without the held-out workloads; reused while the code
    is unchanged."""
    from ..learn import trainer
    from ..learn.dataset import read_rows
    from ..model import file as model_file
    data = calibration(log, device)
    rows = None
    out: dict[str, Any] = {}
    skip_key = hashlib.sha256(",".join(sorted(held_out())).encode()).hexdigest()[:8]
    for goal in goals:
        path = data.with_name(f"{data.stem}-without-{skip_key}-{goal}.model.json")
        if not path.is_file():
            if rows is None:
                skip = held_out()
                rows = [r for r in read_rows(data) if r.workload not in skip]
            print(f"report: training the {goal} model on {len({r.workload for r in rows})} "
                  f"workloads of {data.name}", file=log)
            est, fam, scores = trainer.train_final(rows, goal)
            model_file.save(path, est, samples=trainer.samples(rows), goal=goal, family=fam,
                            policy_of={r.candidate: r.policy for r in rows},
                            trained_on={"dataset": data.name, "rows": len(rows),
                                        "workloads": len({r.workload for r in rows}),
                                        "held_out": sorted(held_out()),
                                        "devices": [device]},
                            evaluation={"family_scores": scores})
        out[goal] = model_file.load(path)
    return out
