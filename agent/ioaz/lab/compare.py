"""`ioaz-lab compare KERNEL.csv SIM.csv`: the simulator against the real kernel, workload by
workload, from two calibration datasets of the same workloads.

    ioaz-lab calibrate --device sda --ids ... --out kernel.csv           # in the testbed guest
    ioaz-lab calibrate --model wd500 --queue-depth 1 --blk-mq --ids ... --out sim.csv
    ioaz-lab compare kernel.csv sim.csv --goal mean [--json out.json]

For each workload both measured with at least two common candidates: the winner on each side,
and each candidate's share of its side's best; the simulator agrees on the winner when it
puts the kernel's winner within 2% of its own best, and on a ratio when the two shares are
within 20% of the kernel's (the issue's test, and the bench's: testbench/bench_sim.py). A
workload where the simulator sees every candidate within 2% and the kernel does not (some
candidate under 0.9 of its best) is `blind`: it agrees on no winner. Beside the test, what
trusting the simulator would cost: the kernel's share of the simulator's pick (its winner),
which a tie parted either side of the 2% rule leaves near 1 and a wrong ranking does not. The
candidates are policies, so the simulator's stand-ins (its anticipatory and cfq for bfq, its
deadline for mq-deadline) meet the kernel's schedulers by the policy they realise.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..decide.matrix import GOALS
from ..learn.dataset import DatasetError, outcomes, read_rows
from ..learn.derive import shares
from .testbench.bench_sim import compare


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", help="calibration CSV measured on the real kernel (the reference)")
    p.add_argument("sim", help="calibration CSV of the same workloads in the simulator")
    p.add_argument("--goal", default="mean", choices=GOALS, help="the score compared")
    p.add_argument("--exclude", default="", metavar="POLICY[,POLICY]",
                   help="candidates left out on both sides")
    p.add_argument("--json", metavar="FILE", help="write the comparison as JSON too")


def workload_shares(path: Path, goal: str, exclude: set[str]) -> dict[str, dict[str, float]]:
    """workload -> candidate -> its share of the workload's best (1.0 for the best)."""
    out: dict[str, dict[str, float]] = {}
    for w, per in outcomes(read_rows(path)).items():
        kept = {c: o for c, o in per.items() if c not in exclude}
        if kept:
            out[w] = shares(kept, goal)
    return out


def pattern(workload: str) -> str:
    """sequential or random, by the grid's id (NNp-seq-... / NNp-rand-...)."""
    return "random" if "-rand-" in workload else "sequential"


def pick_share(row: dict[str, Any]) -> float:
    """The kernel's share of its best that the simulator's winner reads on the kernel."""
    return float(row["ratios"][row["sim_winner"]][0])


# a pick within this share of the kernel's best costs less than two repetitions differ
# (the depth-1 calibration's median 1.8%: decision_matrices/kernel/README.md) and a bit
PICK_CLOSE = 0.95


def summary(rows: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per pattern and overall: workloads, same winner, ratio pairs, pairs within 20%, and
    what the simulator's picks read on the kernel (their mean share, how many within 5%)."""
    out: dict[str, dict[str, Any]] = {}
    for w, r in rows.items():
        for key in (pattern(w), "all"):
            s = out.setdefault(key, {"workloads": 0, "same_winner": 0, "blind": 0, "pairs": 0,
                                     "within": 0, "pick_share_sum": 0.0, "pick_close": 0})
            s["pick_share_sum"] += pick_share(r)
            s["pick_close"] += pick_share(r) >= PICK_CLOSE
            s["workloads"] += 1
            s["same_winner"] += bool(r["same_winner"] and not r["sim_blind"])
            s["blind"] += bool(r["sim_blind"])
            s["pairs"] += r["n"]
            s["within"] += r["ratios_within_20pct"]
    return out


def run(args: argparse.Namespace) -> int:
    exclude = {c for c in args.exclude.split(",") if c}
    try:
        kernel = workload_shares(Path(args.kernel), args.goal, exclude)
        sim = workload_shares(Path(args.sim), args.goal, exclude)
    except (OSError, DatasetError) as e:
        print(f"ioaz-lab compare: {e}", file=sys.stderr)
        return 2
    rows = compare(kernel, sim)
    if not rows:
        print(f"ioaz-lab compare: no workload of {args.sim} was measured in {args.kernel} "
              "with two or more of the same candidates", file=sys.stderr)
        return 1
    print(f"goal {args.goal}: share of each side's best (kernel / simulator)")
    for w in sorted(rows, key=lambda w: (pattern(w), w)):
        r = rows[w]
        flag = "BLIND" if r["sim_blind"] else "same" if r["same_winner"] else "DIFFERENT"
        print(f"  {w:38s} kernel {r['real_winner']:12s} sim {r['sim_winner']:12s} {flag:9s} "
              f"ratios within 20%: {r['ratios_within_20pct']}/{r['n']}")
        pairs = sorted(r["ratios"].items())
        print("      " + "  ".join(f"{c} {a:.2f}/{b:.2f}" for c, (a, b) in pairs))
    summ = summary(rows)
    for key in ("sequential", "random", "all"):
        s = summ.get(key)
        if s:
            print(f"{key}: the same winner on {s['same_winner']} of {s['workloads']} workloads "
                  f"({s['blind']} where the simulator saw every candidate alike and the kernel "
                  f"did not); ratios within 20% on {s['within']} of {s['pairs']} pairs; "
                  f"the simulator's pick reads {s['pick_share_sum'] / s['workloads']:.3f} of "
                  f"the kernel's best, within {1 - PICK_CLOSE:.0%} of it on {s['pick_close']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"goal": args.goal, "kernel": args.kernel,
                                               "sim": args.sim, "rows": rows,
                                               "summary": summ}, indent=1) + "\n")
    return 0
