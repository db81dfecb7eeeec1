"""Per workload, contender B over contender A (mean and each round) and the geometric mean:
`python3 next_vs_shipped.py GUEST ioazd-kernel ioazd-kernel-next`."""
import sys, math, statistics as st
from pathlib import Path
from ioaz.lab.testbench import bench
t = bench.collect(Path(sys.argv[1]))
a, b = sys.argv[2], sys.argv[3]
logs = []
for w, cs in t.items():
    ra = {r["round"]: r["mb_s"] for r in cs.get(a, []) if r.get("mb_s")}
    rb = {r["round"]: r["mb_s"] for r in cs.get(b, []) if r.get("mb_s")}
    per = [rb[k] / ra[k] for k in sorted(ra) if k in rb]
    m = st.mean(rb.values()) / st.mean(ra.values())
    logs.append(math.log(m))
    print(f"{w:16s} {b} / {a}: {m:.3f}  rounds " + ", ".join(f"{x:.3f}" for x in per))
print(f"geometric mean over {len(logs)}: {math.exp(st.mean(logs)):.3f}")
