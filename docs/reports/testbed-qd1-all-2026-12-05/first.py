"""Per ioazd --verbose log: the verdicts of the judged windows before ioazd's first choice of its own
(not the idle policy), and on which judged window it came:

    python3 first.py guest/raw/*.ioazd-kernel-model.0.ioazd.log
"""
import json, sys
for log in sys.argv[1:]:
    per = {}
    for line in open(log):
        i = line.find("{")
        if i < 0:
            continue
        try:
            e = json.loads(line[i:])
        except ValueError:
            continue
        if e.get("event") != "window" or e.get("verdict") is None:
            continue
        d = per.setdefault(e["device"], {"v": [], "done": None})
        if d["done"] is not None:
            continue
        d["v"].append(f'{e["verdict"][:5]}/{e["action"][0]}')
        if e["action"] == "switch":
            d["done"] = (len(d["v"]), e["reason"], line.split()[0])
    for dev, d in per.items():
        if len(d["v"]) < 3 and d["done"] is None:
            continue
        print(f'{log.split("/")[-1].split(".ioazd")[0]:28s} {dev} first switch at judged window '
              f'{d["done"][0] if d["done"] else "-"} ({d["done"][1] if d["done"] else "none"}, t {d["done"][2] if d["done"] else "-"}):',
              " ".join(d["v"][:12]))
