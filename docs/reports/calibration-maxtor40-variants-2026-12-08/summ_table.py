"""Per workload: the class the classifier reads of its runs (with the size axis) and each
candidate's mean MB/s over its repetitions, the best in bold.

    python3 summ_table.py DATASET.csv
"""
import sys

sys.path.insert(0, "agent")
from ioaz.learn.dataset import outcomes, read_with_thresholds  # noqa: E402
from ioaz.learn.derive import SIZE_AXES, workload_classes  # noqa: E402

rows, t = read_with_thresholds(sys.argv[1], None)
classes = workload_classes(rows, t, SIZE_AXES)
cands = [("anticipatory", "bfq"), ("deadline", "mq-deadline"), ("fcfs", "none"),
         ("kyber", "kyber"), ("vr", "vr"), ("scan", "vr (scan)"), ("sstf", "vr (sstf)"),
         ("stream", "stream")]
print("| workload | class read | " + " | ".join(h for _, h in cands) + " |")
print("|---" * (len(cands) + 2) + "|")
res = outcomes(rows)
for w in sorted(res, key=lambda w: ("-rand-" in w, "-write-" in w, int(w.split("p", 1)[0]), w)):
    mb = {c: sum(r.throughput_mb_s for r in res[w][c].rows) / len(res[w][c].rows)
          for c, _ in cands}
    best = max(mb.values())
    fmt = "{:.1f}" if best >= 1 else "{:.3f}"
    cells = [("**" + fmt + "**" if mb[c] == best else fmt).format(mb[c]) for c, _ in cands]
    print(f"| {w} | {classes[w]} | " + " | ".join(cells) + " |")
