"""Each workload's figure per round, per contender, and ioazd's ratio to the best static in
that round (the report gives means and intervals only):

    cd REPORT && PYTHONPATH=../../../agent python3 ../testbed-qd1-all-2026-12-06/rounds.py
"""
import json
from pathlib import Path

from ioaz.lab.testbench import measure
from ioaz.lab.testbench.workloads import WORKLOADS

by_name = {w.name: w for w in WORKLOADS}
lines = [json.loads(x) for x in open("guest/runs.jsonl")]
table: dict = {}
for line in lines:
    w = by_name[line["workload"]]
    # the workload's disk: the one that moved (raw and file-system disks swap between boots)
    moved = {d: sum(line["stat_after"][d][i] - line["stat_before"][d][i] for i in (2, 6))
             for d in line["stat_after"]}
    disk = max(moved, key=moved.get)
    m = measure.run(Path("guest/raw"), line, w.parser, disk, stonewalled=bool(w.phases))
    fig = m.disk_mb_s if w.figure == "disk" else m.mb_s
    table.setdefault(line["workload"], {}).setdefault(line["contender"], {})[line["round"]] = fig
for name, per in table.items():
    rounds = sorted({r for c in per.values() for r in c})
    cells = []
    for r in rounds:
        static = {c: v[r] for c, v in per.items() if not c.startswith("ioazd") and r in v}
        best = max(static.values())
        ioazd = [v[r] for c, v in per.items() if c.startswith("ioazd") and r in v]
        cells.append(f"r{r}: best {max(static, key=static.get)} {best:.2f}, ioazd "
                     + ", ".join(f"{x / best:.3f}" for x in ioazd))
    print(f"{name:16s} " + " | ".join(cells))
