import csv, sys, collections, statistics as st
rows = list(csv.DictReader(open(sys.argv[1])))
agg = collections.defaultdict(lambda: collections.defaultdict(list))
for r in rows:
    agg[r["workload"]][r["policy"]].append(r)
for w, d in agg.items():
    print(w)
    best = max(st.fmean(float(r["throughput_mb_s"]) for r in v) for v in d.values())
    for p, v in sorted(d.items(), key=lambda kv: -st.fmean(float(r["throughput_mb_s"]) for r in kv[1])):
        t = [float(r["throughput_mb_s"]) for r in v]
        print(f"  {p:13s} {st.fmean(t):6.1f} MB/s ({', '.join(f'{x:.1f}' for x in t)}) x{st.fmean(t)/best:.3f} "
              f"p99 {st.fmean(float(r['p99_latency_s']) for r in v)*1e3:5.2f} ms dirty {v[0].get('f_dirty_fill')}")
