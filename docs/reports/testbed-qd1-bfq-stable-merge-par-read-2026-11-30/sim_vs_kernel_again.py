"""The bench's simulator column again, for a finished run's results.json, with the simulator
as it is now (the run's own column was computed with the simulator of its day):

    PYTHONPATH=agent python3 THIS results.json [phase_s runtime_s queue_depth tags]

prints, per workload, the kernel's and the simulator's winner and each scheduler's ratio to it.
"""
import json
import sys

from ioaz.lab.testbench import bench_sim

res = json.load(open(sys.argv[1]))["testbed"]
meta, wl = res["meta"], res["analysis"]["workloads"]
phase_s = float(sys.argv[2]) if len(sys.argv) > 2 else meta["phase_s"]
runtime_s = float(sys.argv[3]) if len(sys.argv) > 3 else meta["runtime_s"]
qd = int(sys.argv[4]) if len(sys.argv) > 4 else meta.get("queue_depth") or 32
tags = int(sys.argv[5]) if len(sys.argv) > 5 else 32
real: dict = {}
for w, row in wl.items():
    for c, v in row["contenders"].items():
        if c not in bench_sim.STAND_IN or v.get("mb_s") is None:
            continue
        if v.get("phases"):
            for p, pv in v["phases"].items():
                real.setdefault(f"{w}:{p}", {})[c] = pv["mb_s"]
        else:
            real.setdefault(w, {})[c] = v["mb_s"]
scheds = sorted({c for r in real.values() for c in r})
sim = bench_sim.simulate(meta["model"], qd, phase_s, runtime_s, scheds, tags)
cmp = bench_sim.compare(real, sim)
same = sum(r["same_winner"] for r in cmp.values())
within = sum(r["ratios_within_20pct"] for r in cmp.values())
pairs = sum(r["n"] for r in cmp.values())
for w, r in cmp.items():
    ratios = ", ".join(f"{k} {a:.2f}/{b:.2f}" for k, (a, b) in sorted(r["ratios"].items()))
    print(f"{w}: kernel {r['real_winner']}, simulator {r['sim_winner']}, "
          f"{'same' if r['same_winner'] else 'differs'}; kernel/simulator x winner: {ratios}")
    print("   simulator MB/s: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(sim[w].items())))
print(f"same winner on {same} of {len(cmp)}; ratios within 20% on {within} of {pairs} pairs")
