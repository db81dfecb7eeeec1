# Each workload's first run (always bfq before 6017ea4) against the same candidate's other runs of
# that workload, and every other run against its own candidate's others: python3 firstrun.py CSV...
import csv, glob, collections, statistics as st, sys
files = sys.argv[1:] or sorted(glob.glob("decision_matrices/kernel/testbed-wd500-qd1*.csv"))
for f in files:
    rows = list(csv.DictReader(open(f)))
    byw = collections.OrderedDict()
    for r in rows:
        byw.setdefault(r["workload"], []).append(r)
    firsts, others = [], []
    firstpol = collections.Counter()
    for w, rs in byw.items():
        first = rs[0]
        firstpol[first["policy"]] += 1
        for r in rs:
            same = [float(x["throughput_mb_s"]) for x in rs if x["policy"] == r["policy"] and x is not r]
            if not same or st.fmean(same) <= 0: continue
            ratio = float(r["throughput_mb_s"]) / st.fmean(same)
            (firsts if r is first else others).append(ratio)
    if firsts:
        print(f"{f.split('/')[-1]:40s} workloads {len(byw):3d}: first run / same candidate's other runs: "
              f"median {st.median(firsts):.3f} (n={len(firsts)}, below 0.9: {sum(x<0.9 for x in firsts)}); "
              f"every other run: median {st.median(others):.3f} (below 0.9: {sum(x<0.9 for x in others)} of {len(others)}); first candidate {dict(firstpol)}")
