"""Each ioazd run's switches, from its --verbose log in guest/raw: `python3 switches.py GUEST`."""
import json
import sys
from pathlib import Path

for log in sorted(Path(sys.argv[1], "raw").glob("*.ioazd.log")):
    t0, out = None, []
    for line in log.read_text().splitlines():
        at, _, rest = line.partition(" ")
        if '"event": "switch"' not in rest:
            continue
        e = json.loads(rest[rest.index("{"):])
        t0 = float(at) if t0 is None else t0
        when = "start" if e["reason"] == "idle_policy" else f"{float(at) - t0:.2f}s"
        out.append(f"{e['device']} {when} {e['to']} ({e['reason']})")
    print(f"{log.name.removesuffix('.ioazd.log'):45s} {'; '.join(out)}")
