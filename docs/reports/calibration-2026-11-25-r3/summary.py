"""The calibration's dataset, per workload: each candidate's mean MB/s over its repetitions,
as a share of the workload's best, and how far a candidate's repetitions are from each other.

    python3 summary.py DATASET.csv
"""
import collections
import csv
import statistics
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for r in rows:
    runs[r["workload"]][r["candidate"]].append(float(r["throughput_mb_s"]))

spreads = []
print("| workload | best (mean MB/s) | mq-deadline | bfq | none | kyber | vr | stream | "
      "runner-up, points behind |")
print("|---|---|---|---|---|---|---|---|---|")
for w, cands in runs.items():
    mean = {c: statistics.fmean(v) for c, v in cands.items()}
    for v in cands.values():
        if len(v) > 1 and max(v) > 0:
            spreads.append((max(v) - min(v)) / statistics.fmean(v))
    best = max(mean, key=mean.get)
    order = sorted(mean, key=mean.get, reverse=True)
    share = {c: mean[c] / mean[best] for c in mean}

    def s(c):
        return f"{share[c]:.2f}" if c in share else "-"
    print(f"| {w} | {best} {mean[best]:.1f} | {s('deadline')} | {s('anticipatory')} | "
          f"{s('fcfs')} | {s('kyber')} | {s('vr')} | {s('stream')} | "
          f"{order[1]} {100 * (1 - share[order[1]]):.1f} |")
spreads.sort()
print(f"\nrepetitions of one candidate on one workload: (max - min) / mean, median "
      f"{100 * statistics.median(spreads):.1f}%, 90th percentile "
      f"{100 * spreads[int(0.9 * (len(spreads) - 1))]:.1f}%, widest {100 * spreads[-1]:.1f}% "
      f"({len(spreads)} candidates x workloads)")
