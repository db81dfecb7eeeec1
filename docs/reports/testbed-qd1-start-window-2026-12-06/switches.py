"""Per ioazd log: its switches after the workload started (seconds from the workload's start,
scheduler, reason), the idle policy's at start marked as such.

    python3 switches.py guest/raw/*.ioazd.log
"""
import json, sys
for log in sorted(sys.argv[1:]):
    start, out = None, []
    for line in open(log):
        head = line.split()
        if "@@ workload start" in line:
            start = float(head[0])
            continue
        i = line.find("{")
        if i < 0:
            continue
        try:
            e = json.loads(line[i:])
        except ValueError:
            continue
        if e.get("event") != "switch":
            continue
        t = float(head[0])
        at = "start" if start is None else f"{t - start:.1f}s"
        out.append(f'{e["device"]} {at} {e["to"]} ({e["reason"]})')
    name = log.split("/")[-1].replace(".ioazd.log", "")
    print(f"{name:45s} " + "; ".join(out))
