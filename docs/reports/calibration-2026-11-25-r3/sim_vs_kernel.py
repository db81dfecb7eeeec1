"""The simulator against the real kernel on the same workloads: the kernel's calibration
dataset (the testbed guest, model disk wd500 at NCQ 32) and the simulator's (the same model at
queue depth 32, `ioaz-lab calibrate --model wd500 --queue-depth 32`, the same 32 workloads).

Per workload: the winner in each; whether they agree (strictly, and within the kernel's own
spread: the simulator's winner reached at least 1 - SPREAD of the kernel's best there); and
each candidate's throughput relative to deadline (mq-deadline), simulator over kernel.

    python3 sim_vs_kernel.py KERNEL.csv SIM.csv
"""
import collections
import csv
import statistics
import sys

SPREAD = 0.05
COMMON = ("fcfs", "deadline", "anticipatory", "kyber", "vr", "scan", "sstf", "stream")


def means(path):
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in csv.DictReader(open(path)):
        if r["candidate"] in COMMON:
            runs[r["workload"]][r["candidate"]].append(float(r["throughput_mb_s"]))
    return {w: {c: statistics.fmean(v) for c, v in cs.items()} for w, cs in runs.items()}


kern, sim = means(sys.argv[1]), means(sys.argv[2])
strict = loose = n = 0
ratios = []
print("| workload | kernel winner (MB/s) | simulator winner (MB/s) | kernel's share of the "
      "simulator's winner | worst ratio of ratios (candidate) |")
print("|---|---|---|---|---|")
for w in kern:
    if w not in sim or set(sim[w]) - set(kern[w]):
        continue    # a workload the kernel's run has not finished
    k, s = kern[w], sim[w]
    kw, sw = max(k, key=k.get), max(s, key=s.get)
    share = k[sw] / k[kw] if k[kw] > 0 else 1.0
    n += 1
    strict += kw == sw
    loose += share >= 1 - SPREAD
    worst, who = 1.0, "-"
    if k.get("deadline", 0) > 0 and s.get("deadline", 0) > 0:
        for c in COMMON:
            if c in k and c in s and k[c] > 0:
                rr = (s[c] / s["deadline"]) / (k[c] / k["deadline"])
                ratios.append(rr)
                if abs(rr - 1) > abs(worst - 1):
                    worst, who = rr, c
    print(f"| {w} | {kw} {k[kw]:.1f} | {sw} {s[sw]:.1f} | {share:.2f} | {worst:.2f} ({who}) |")
inside = sum(0.8 <= r <= 1.2 for r in ratios)
print(f"\nsame winner: {strict} of {n} strictly, {loose} of {n} within {SPREAD:.0%} of the "
      f"kernel's best; candidate-to-deadline ratios within 20% of the kernel's: {inside} of "
      f"{len(ratios)}")
