"""Where a 2-window confirmation (the model sure, its share for the scheduler in force under T)
would have switched a window early, and whether the next window made that switch anyway:

    cd docs/reports && python3 testbed-qd1-decisive-2026-12-06/decisive.py 0.5 \
        testbed-qd1-*-2026-12-0[5-6]/guest/raw/*.ioazd.log

The model is the shipped one (the logs' own verdicts came from the model of their day).
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "agent"))
from ioaz.model.file import load
m = load(Path(__file__).resolve().parents[3] / "decision_matrices/kernel/testbed-wd500-qd1-mean.model.json")
T = float(sys.argv[1]); logs = sys.argv[2:]
early = broke = 0
for log in logs:
    evs = []
    for line in Path(log).read_text(errors="replace").splitlines():
        i = line.find("{")
        if i < 0: continue
        try: e = json.loads(line[i:])
        except ValueError: continue
        if e.get("event") == "window" and e.get("device") == "sdb": evs.append((line.split()[0], e))
    for k, (t, e) in enumerate(evs):
        why = e.get("why") or ""
        if e.get("reason") != "hysteresis" or "unsure" in why: continue
        mm = re.search(r"seen (\d) of 3", why)
        if not mm or mm.group(1) != "2": continue
        if "features" not in e: continue
        f = {**e["features"], "processes": e.get("processes")}
        sc = dict(m.predict_proba(m.vector_of(f)))
        pin = e["policy"]; s = sc.get(pin)
        if s is None or s > T: continue
        nxt = evs[k+1][1] if k+1 < len(evs) else None
        outcome = f"{nxt['action']} {nxt['reason']} -> {nxt.get('verdict')}" if nxt else "end"
        ok = nxt is not None and nxt["action"] == "switch" and nxt["verdict"] == e["verdict"]
        early += 1; broke += not ok
        print(f"{Path(log).name[:45]:45} {t:>7} in force {pin} {s:.2f} -> {e['verdict']} ({sc[e['verdict']]:.2f}); next: {outcome}")
print(f"T={T}: {early} early switches, {broke} where the next window did not switch the same way")
