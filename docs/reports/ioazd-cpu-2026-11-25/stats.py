# Paired ratios to a base contender from a res.txt (round contender kBps=N daemon_ticks=N):
# python3 stats.py before-after.txt none
import re, statistics as st, sys, math
rows = [l.split() for l in open(sys.argv[1])]
d = {}
for r in rows:
    d.setdefault(r[1], {})[int(r[0])] = (int(r[2].split("=")[1]), int(r[3].split("=")[1]))
base = sys.argv[2]
T = {3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447}
for c, runs in d.items():
    bw = [v[0] for v in runs.values()]; ticks = [v[1] for v in runs.values()]
    ratios = [runs[k][0] / d[base][k][0] for k in runs if k in d[base]]
    n = len(ratios); m = st.mean(ratios); h = T.get(n, 2) * st.stdev(ratios) / math.sqrt(n) if n > 1 else 0
    print(f"{c:6} n={len(bw)} MB/s={st.mean(bw)/1024:.2f} x{base}={m:.3f}±{h:.3f} cpu%={st.mean(ticks)/20:.1f}")
