"""Where the matrix's measured shares would confirm a switch sooner: every window of the given
ioazd logs that held for hysteresis in its first window of a new verdict, the verdict the
matrix's own (not a sure model's) and the cell's policy today's, the scheduler in force under
T of the best by today's cell shares. `new`: only in a window whose cell is not the last
judged window's (one window decides); `any`: inside a cell too (two windows decide). Says
whether the next window went on to the same verdict.

    cd docs/reports && python3 THIS 0.5 new testbed-*-2026-1[12]-*/guest/raw/*.ioazd.log
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "agent"))
from ioaz.decide.matrix import load_matrix  # noqa: E402
from ioaz.lab.testbench.lag import events  # noqa: E402

M = load_matrix(Path(__file__).resolve().parents[3]
                / "decision_matrices/kernel/testbed-wd500-qd1-mean.yaml").tables["mean"]
T = float(sys.argv[1])
NEWCELL = sys.argv[2] == "new"
early = broke = matrix_windows = 0
for log in sys.argv[3:]:
    evs: dict = {}
    for t, e in events(Path(log)):
        if e.get("event") == "window":
            evs.setdefault(e.get("device"), []).append((t, e))
    for dev, ws in evs.items():
        for k, (t, e) in enumerate(ws):
            why = e.get("why") or ""
            cell = M.get(e.get("cell") or "")
            if cell is None or e.get("reason") != "hysteresis" or "seen 1 of" not in why:
                continue
            if why.startswith("model ") and "unsure" not in why:
                continue             # a sure model decided: its own shares, not the matrix's
            if "leans to" in why or e.get("verdict") != cell.policy:
                continue
            matrix_windows += 1
            pin = e["policy"]
            s = dict(cell.shares).get(pin)
            if s is None or s >= T:
                continue
            prev = next((w for _, w in reversed(ws[:k]) if w.get("cell")), None)
            if NEWCELL and not (prev and prev["cell"] != e["cell"]):
                continue
            nxt = ws[k + 1][1] if k + 1 < len(ws) else None
            outcome = f"{nxt['action']} {nxt['reason']} -> {nxt.get('verdict')}" if nxt else "end"
            ok = nxt is not None and nxt.get("verdict") == e["verdict"]
            early += 1
            broke += not ok
            print(f"{Path(log).name[:44]:44} {dev} {t:>7} {e['cell']:28} in force {pin} {s:.2f}"
                  f" -> {e['verdict']}; next: {outcome}{'' if ok else '   <-- BROKEN'}")
print(f"T={T} {'new cell' if NEWCELL else 'any window'}: {matrix_windows} first windows of a "
      f"matrix verdict held for hysteresis; {early} would switch sooner, {broke} where the next "
      "window's verdict differed")
