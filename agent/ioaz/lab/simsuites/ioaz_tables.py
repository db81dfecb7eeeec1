"""IOAZ's decision tables (Martens & Katchabaw, Tables 1-4) reproduced on a disk model:
which of FCFS, AS, DEAD and CFQ wins each workload category, goal by goal."""
from __future__ import annotations

from typing import Any

from ioaz.lab.report import Report
from ioaz.lab.simsuites.common import TIE, Opts, run_sim
from ioaz.lab.simsuites.prose import prose
from ioaz.sim.workloads import (
    ioaz_category,
)

IOAZ_SCHEDULERS = ("fcfs", "anticipatory", "deadline", "cfq")
IOAZ_GOALS = (("min", "ioaz-table1-min.yaml", "proc_min_mb_s", 1),
              ("max", "ioaz-table2-max.yaml", "proc_max_mb_s", 2),
              ("mean", "ioaz-table3-mean.yaml", "proc_mean_mb_s", 3))
IOAZ_DEVICE = "maxtor40"
PAPER_NAME = {"fcfs": "FCFS", "anticipatory": "AS", "deadline": "DEAD", "cfq": "CFQ"}


def _why(pattern: str, mode: str, n: int, best: str, paper: str, vals: dict[str, float]) -> str:
    """Why the model and the paper differ on a cell, from what the model does (README, Known
    limits) and what the paper measured; worded from the numbers of this run."""
    words = prose("ioaz")
    lo, hi = min(vals.values()), max(vals.values())
    if hi <= 0 or (hi - lo) / hi < TIE:
        return words("why_tie", tie=f"{TIE:.0%}")
    if mode == "read" and pattern == "random":
        return words("why_random_read")
    if mode == "write":
        return words("why_write")
    if best == "cfq" and pattern == "sequential":
        return words("why_cfq_sequential")
    if n == 1:
        return words("why_one_process")
    return words("why_idling", best=best, paper=paper,
                 by=f"{hi / max(vals[paper], 1e-12) - 1:.0%}")


def _ioaz_agreement(cats: list, cfq_key: str) -> dict[str, Any]:
    """Agreement of the model's best with Tables 1-3, the model's CFQ being `cfq_key`."""
    from ioaz.classify.types import WorkloadClass
    from ioaz.decide import DEFAULT_MATRIX_DIR, load_matrix

    goals: dict[str, Any] = {}
    for goal, file, attr, number in IOAZ_GOALS:
        m = load_matrix(DEFAULT_MATRIX_DIR / file)
        agree = ties = 0
        cells = []
        for n, pat, mode, res in cats:
            pattern = "sequential" if pat == "seq" else "random"
            wc = WorkloadClass("16+" if n == 16 else str(n), pattern, mode)
            cell = m.lookup(goal, wc)
            assert cell is not None
            paper = cell.policy
            vals = {s: getattr(res[cfq_key if s == "cfq" else s], attr) for s in IOAZ_SCHEDULERS}
            best = max(vals, key=lambda s: vals[s])
            exact = best == paper
            tie = vals[paper] >= (1 - TIE) * vals[best]
            agree += exact
            ties += tie and not exact
            cells.append({"processes": wc.processes, "pattern": pattern, "mode": mode,
                          "paper": paper, "model": best, "agree": exact, "within_tie": tie,
                          "mb_s": vals,
                          "why": None if exact else _why(pattern, mode, n, best, paper, vals)})
        goals[goal] = {"table": number, "agree": agree, "ties": ties, "cells": len(cells),
                       "detail": cells}
    return {"goals": goals, "agree": sum(g["agree"] for g in goals.values()),
            "ties": sum(g["ties"] for g in goals.values()),
            "cells": sum(g["cells"] for g in goals.values())}


def suite_ioaz(rep: Report, o: Opts) -> dict[str, Any]:
    dur = o.dur(20.0, 4.0)
    cats = []
    for n in (1, 4, 8, 16):
        for pat in ("seq", "rand"):
            for mode in ("read", "write"):
                res = {s: run_sim(IOAZ_DEVICE, s, ioaz_category(n, pat, mode, dur))
                       for s in IOAZ_SCHEDULERS}
                # the paper's kernel (2.6.11) had CFQ before time slices and idling (2.6.13)
                res["cfq-noidle"] = run_sim(IOAZ_DEVICE, "cfq", ioaz_category(n, pat, mode, dur),
                                            tunables={"slice_idle_ms": 0})
                cats.append((n, pat, mode, res))
    main = _ioaz_agreement(cats, "cfq")
    noidle = _ioaz_agreement(cats, "cfq-noidle")
    out: dict[str, Any] = {"device": IOAZ_DEVICE, "seconds": dur, **main,
                           "cfq_without_idling": {k: noidle[k] for k in ("agree", "ties",
                                                                         "cells")}}
    tot, tot_tie, ncells = main["agree"], main["ties"], main["cells"]
    rep.data["ioaz"] = out
    words = prose("ioaz")
    tie = f"{TIE:.0%}"
    rep.summary.append(words("summary", device=IOAZ_DEVICE, agree=tot, cells=ncells, ties=tot_tie,
                             tie=tie, agree_noidle=noidle["agree"], ties_noidle=noidle["ties"]))
    sec = rep.section(words.title)
    sec.text(words("intro", device=IOAZ_DEVICE, seconds=f"{dur:g}", tie=tie))
    rows = []
    for label, ag in (("cfq with idling", main), ("cfq without idling", noidle)):
        for k, g in ag["goals"].items():
            rows.append((label, words("agreement_goal", table=g["table"], goal=k),
                         g["agree"], g["ties"], g["cells"] - g["agree"] - g["ties"], g["cells"]))
        rows.append((label, "all", ag["agree"], ag["ties"],
                     ag["cells"] - ag["agree"] - ag["ties"], ag["cells"]))
    sec.table(words.headers("agreement", tie=tie), rows)
    rows_all = []
    nd = {(g, c["processes"], c["pattern"], c["mode"]): c
          for g, gg in noidle["goals"].items() for c in gg["detail"]}
    for goal, g in main["goals"].items():
        for c in g["detail"]:
            c2 = nd[(goal, c["processes"], c["pattern"], c["mode"])]
            res = next(r for n, p, m, r in cats
                       if ("16+" if n == 16 else str(n)) == c["processes"]
                       and ("sequential" if p == "seq" else "random") == c["pattern"]
                       and m == c["mode"])
            attr = next(a for gg, _, a, _ in IOAZ_GOALS if gg == goal)
            rows_all.append((f"{g['table']} ({goal})", c["processes"], c["pattern"], c["mode"],
                             PAPER_NAME[c["paper"]], PAPER_NAME[c["model"]],
                             "yes" if c["agree"] else ("tie" if c["within_tie"] else "no"),
                             PAPER_NAME[c2["model"]],
                             *[c["mb_s"][x] for x in IOAZ_SCHEDULERS],
                             getattr(res["cfq-noidle"], attr)))
    mb_s = " | ".join(words("cells_mb_s", scheduler=PAPER_NAME[x]) for x in IOAZ_SCHEDULERS)
    sec.table(words.headers("cells", mb_s=mb_s), rows_all)
    sec.text(words("why_intro"))
    seen: dict[str, list[str]] = {}
    for goal, g in main["goals"].items():
        for c in g["detail"]:
            if not c["agree"]:
                seen.setdefault(c["why"], []).append(words(
                    "why_cell", goal=goal, processes=c["processes"], pattern=c["pattern"],
                    mode=c["mode"], paper=PAPER_NAME[c["paper"]], model=PAPER_NAME[c["model"]]))
    sec.bullets([f"{why}: {', '.join(cs)}" for why, cs in seen.items()] or ["none"])
    _ioaz_plot(sec, out)
    return out


def _ioaz_plot(sec: Any, out: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    colors = {"yes": "#8fd18f", "tie": "#f2e08a", "no": "#f29a8a"}
    cols = [("sequential", "read"), ("sequential", "write"), ("random", "read"),
            ("random", "write")]
    rows = ["1", "4", "8", "16+"]
    for ax, (goal, g) in zip(axes, out["goals"].items(), strict=True):
        by = {(c["processes"], c["pattern"], c["mode"]): c for c in g["detail"]}
        for i, r in enumerate(rows):
            for j, col in enumerate(cols):
                c = by[(r, *col)]
                k = "yes" if c["agree"] else ("tie" if c["within_tie"] else "no")
                ax.add_patch(plt.Rectangle((j, 3 - i), 1, 1, color=colors[k]))
                ax.text(j + 0.5, 3.5 - i, f"{PAPER_NAME[c['paper']]}\n{PAPER_NAME[c['model']]}",
                        ha="center", va="center", fontsize=8)
        ax.set_xlim(0, 4)
        ax.set_ylim(0, 4)
        ax.set_xticks([0.5, 1.5, 2.5, 3.5])
        ax.set_xticklabels(["seq R", "seq W", "rand R", "rand W"])
        ax.set_yticks([3.5, 2.5, 1.5, 0.5])
        ax.set_yticklabels(rows)
        ax.set_title(f"Table {g['table']} ({goal}): {g['agree']}/{g['cells']} agree")
    sec.plot("ioaz_tables", fig, prose("ioaz")("plot", tie=f"{TIE:.0%}"))


