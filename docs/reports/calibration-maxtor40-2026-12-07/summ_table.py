"""summary.md's table: per workload, the class the classifier reads of its runs and each
candidate's mean MB/s over its repetitions, the best in bold.

    python3 summ_table.py decision_matrices/kernel/testbed-maxtor40-qd1.csv
"""
import sys

sys.path.insert(0, "agent")
from ioaz.learn.dataset import outcomes, read_with_thresholds  # noqa: E402
from ioaz.learn.derive import AXES, workload_classes  # noqa: E402

rows, t = read_with_thresholds(sys.argv[1], None)
classes = workload_classes(rows, t, AXES)
cands = [("anticipatory", "bfq"), ("deadline", "mq-deadline"), ("fcfs", "none"),
         ("kyber", "kyber"), ("vr", "vr"), ("scan", "vr (scan)"), ("sstf", "vr (sstf)"),
         ("stream", "stream")]
print("| workload | class read | " + " | ".join(h for _, h in cands) + " |")
print("|---" * (len(cands) + 2) + "|")
order = {"seq-read": 0, "seq-write": 1, "rand-read": 2, "rand-write": 3}
res = outcomes(rows)
for w in sorted(res, key=lambda w: (order[w.split("-", 1)[1].rsplit("-", 4)[0]],
                                    int(w.split("p", 1)[0]))):
    mb = {c: sum(r.throughput_mb_s for r in res[w][c].rows) / len(res[w][c].rows)
          for c, _ in cands}
    best = max(mb.values())
    fmt = "{:.1f}" if best >= 1 else "{:.3f}"
    cells = [("**" + fmt + "**" if mb[c] == best else fmt).format(mb[c]) for c, _ in cands]
    print(f"| {w} | {classes[w]} | " + " | ".join(cells) + " |")
