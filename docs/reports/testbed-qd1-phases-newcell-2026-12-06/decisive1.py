"""Where a 1-window confirmation (the model sure, its share for the scheduler in force under T,
the matrix agreeing) would have switched at the first window of a new verdict, and whether the
next window went on to the same verdict (held it or switched to it); with `new`, only in a
window whose cell is not the last judged window's (damping.new_workload), with `any` in every
window that waited for a second:

    cd docs/reports && python3 THIS 0.5 new testbed-*-2026-1[12]-*/guest/raw/*.ioazd.log

The model is the shipped one (the logs' own verdicts came from the model of their day).
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "agent"))
from ioaz.model.file import load
m = load(Path(__file__).resolve().parents[3] / "decision_matrices/kernel/testbed-wd500-qd1-mean.model.json")
T = float(sys.argv[1]); NEWCELL = sys.argv[2] == "new"; logs = sys.argv[3:]
early = broke = 0
for log in logs:
    evs = {}
    for line in Path(log).read_text(errors="replace").splitlines():
        i = line.find("{")
        if i < 0: continue
        try: e = json.loads(line[i:])
        except ValueError: continue
        if e.get("event") == "window":
            evs.setdefault(e.get("device"), []).append((line.split()[0], e))
    for dev, ws in evs.items():
        for k, (t, e) in enumerate(ws):
            why = e.get("why") or ""
            if e.get("reason") != "hysteresis" or "unsure" in why or "leaning" in why: continue
            mm = re.search(r"seen 1 of (\d)", why)
            if not mm or "features" not in e: continue
            f = {**e["features"], "processes": e.get("processes")}
            sc = dict(m.predict_proba(m.vector_of(f)))
            pin = e["policy"]; s = sc.get(pin)
            if s is None or s > T or max(sc, key=sc.get) != e["verdict"]: continue
            # the last window before with a verdict (the daemon's DeviceState.last_cell)
            prev = next((w for _, w in reversed(ws[:k]) if w.get("cell")), None)
            if NEWCELL and not (prev and prev["cell"] != e.get("cell")):
                continue
            nxt = ws[k+1][1] if k+1 < len(ws) else None
            outcome = f"{nxt['action']} {nxt['reason']} -> {nxt.get('verdict')}" if nxt else "end"
            ok = nxt is not None and nxt.get("verdict") == e["verdict"]
            early += 1; broke += not ok
            print(f"{Path(log).name[:42]:42} {dev} {t:>7} in force {pin} {s:.2f} -> {e['verdict']} ({sc[e['verdict']]:.2f}); next: {outcome}{'' if ok else '   <-- BROKEN'}")
print(f"T={T}: {early} one-window switches, {broke} where the next window's verdict differed")
