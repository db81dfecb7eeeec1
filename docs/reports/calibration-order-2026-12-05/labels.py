# The best candidate per workload (goal mean: proc_mean_mb_s; and throughput) with and without each workload's first run
import csv, glob, collections, statistics as st, sys
files = sys.argv[1:] or sorted(glob.glob("decision_matrices/kernel/testbed-wd500-qd1*.csv"))
for f in files:
    rows = list(csv.DictReader(open(f)))
    byw = collections.OrderedDict()
    for r in rows: byw.setdefault(r["workload"], []).append(r)
    for measure in ("proc_mean_mb_s", "throughput_mb_s"):
        flips = []
        for w, rs in byw.items():
            def means(rs_):
                d = collections.defaultdict(list)
                for r in rs_: d[r["policy"]].append(float(r[measure] or 0))
                return {p: st.fmean(v) for p, v in d.items()}
            a = means(rs); b = means(rs[1:])
            ba, bb = max(a, key=a.get), max(b, key=b.get)
            first = rs[0]["policy"]
            share_a = a[first] / a[ba]; share_b = b.get(first, 0) / b[bb]
            if ba != bb or abs(share_a - share_b) > 0.03:
                flips.append(f"    {w}: best {ba} -> {bb}; {first} {share_a:.3f} -> {share_b:.3f} of best")
        print(f"{f.split('/')[-1]} [{measure}]: {len(byw)} workloads, {sum('->' in x and x.split('best ')[1].split(' ->')[0] != x.split('-> ')[1].split(';')[0] for x in flips)} change best")
        print("\n".join(flips))
