"""The depth-1 grid measured again against the one it replaces: per workload, each candidate's
mean MB/s (three runs), the winner by goal mean, and the winner the old rows gave.

    python3 summ.py OLD.csv NEW.csv [--margins]
"""
import math
import sys

sys.path.insert(0, "agent")
from ioaz.learn.dataset import outcomes, read_rows  # noqa: E402
from ioaz.learn.derive import shares  # noqa: E402
from ioaz.learn.noise import rep_spread  # noqa: E402

old_rows, new_rows = read_rows(sys.argv[1]), read_rows(sys.argv[2])
if "--margins" in sys.argv:
    for goal in ("mean", "throughput", "min", "max", "latency"):
        s = rep_spread(new_rows, goal)
        print(f"{goal:10s} repeats differ by {s * 100:.1f}% (median) -> margin "
              f"{math.ceil(s * 100) / 100:.2f}")
    sys.exit(0)
old, new = outcomes(old_rows), outcomes(new_rows)
cands = ["anticipatory", "deadline", "fcfs", "kyber", "vr", "scan", "sstf", "stream"]
print("| workload | " + " | ".join(cands) + " | winner (share) | old winner (its share now) |")
print("|---" * (len(cands) + 3) + "|")
moved = 0
for w in sorted(new, key=lambda w: ("-rand-" in w, w)):
    per = new[w]
    mb = {c: sum(r.throughput_mb_s for r in o.rows) / len(o.rows) for c, o in per.items()}
    sh = shares({c: o for c, o in per.items() if c != "fifo"}, "mean")
    win = max(sh, key=lambda c: sh[c])
    second = max((c for c in sh if c != win), key=lambda c: sh[c])
    osh = shares({c: o for c, o in old[w].items() if c != "fifo"}, "mean") if w in old else {}
    owin = max(osh, key=lambda c: osh[c]) if osh else "-"
    moved += owin not in ("-", win)
    cells = " | ".join(f"**{mb[c]:.1f}**" if c == win else f"{mb[c]:.1f}" for c in cands)
    print(f"| {w} | {cells} | {win} (+{(1 - sh[second]) * 100:.1f} over {second}) | "
          f"{owin} ({sh.get(owin, 0):.2f}) |")
print(f"\n{moved} of {len(new)} workloads have another winner than the old rows gave")
