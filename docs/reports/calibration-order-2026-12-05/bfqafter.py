# Each bfq run against the mean of the same workload's bfq runs set anew right after another candidate's
# run, by what came before it: the warm-up or bfq (the same elevator, before 288a8f8), another
# workload, or another candidate: python3 bfqafter.py CSV...
import csv, glob, collections, statistics as st, sys
files = sys.argv[1:]
for f in files:
    rows = list(csv.DictReader(open(f)))
    # the ratio of each bfq run to the mean of the same workload's bfq runs set anew right after another candidate's run of it
    fresh = collections.defaultdict(list); kinds = []
    for i, r in enumerate(rows):
        if r["policy"] != "anticipatory": continue
        prev = rows[i-1] if i else None
        if prev is None: kind = "after the warm-up (same instance)"
        elif prev["workload"] != r["workload"]: kind = "first of its workload (set anew)"
        elif prev["policy"] == "anticipatory": kind = "after bfq (same instance)"
        else: kind = "after another candidate (set anew)"
        kinds.append((kind, r))
        if kind.startswith("after another"): fresh[r["workload"]].append(float(r["throughput_mb_s"]))
    out = collections.defaultdict(list)
    for kind, r in kinds:
        if kind.startswith("after another"):
            others = [x for x in fresh[r["workload"]]]
            others.remove(float(r["throughput_mb_s"]))
        else:
            others = fresh[r["workload"]]
        if others: out[kind].append(float(r["throughput_mb_s"]) / st.fmean(others))
    print(f.split("/")[-1])
    for k, v in out.items():
        print(f"   {k:40s} n={len(v):3d} median {st.median(v):.3f}, below 0.9: {sum(x < 0.9 for x in v)}, values {' '.join(f'{x:.2f}' for x in v) if len(v) < 12 else ''}")
