"""The write-back writers under each candidate: MB/s (mean of the runs) and share of the best
(goal mean), per dataset given, e.g. the shipped rows (kernel's tie, 2026-12-06), this boot's
rows with throttling off and with the kernel's tie written.

    python3 wbt_table.py NAME=CSV [NAME=CSV ...]
"""
import sys

sys.path.insert(0, "agent")
from ioaz.learn.dataset import outcomes, read_rows  # noqa: E402
from ioaz.learn.derive import shares  # noqa: E402

CANDS = ["anticipatory", "deadline", "fcfs", "kyber", "vr", "scan", "sstf", "stream"]
sets = [a.split("=", 1) for a in sys.argv[1:]]
print("| workload | rows | " + " | ".join(CANDS) + " | best |")
print("|---" * (len(CANDS) + 3) + "|")
for name, path in sets:
    outs = outcomes([r for r in read_rows(path) if r.workload.endswith("-b")])
    for w in sorted(outs):
        per = {c: o for c, o in outs[w].items() if c in CANDS}
        sh = shares(per, "mean")
        mb = {c: sum(r.throughput_mb_s for r in o.rows) / len(o.rows) for c, o in per.items()}
        best = max(sh, key=lambda c: sh[c])
        cells = [f"{mb[c]:.1f} ({sh[c]:.2f})" if c in mb else "-" for c in CANDS]
        print(f"| {w} | {name} | " + " | ".join(cells) + f" | {best} |")
