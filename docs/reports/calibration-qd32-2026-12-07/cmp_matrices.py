"""Cell by cell: which policy each goal's cell names in two sets of matrix files."""
import sys, yaml, pathlib
old, new = map(pathlib.Path, sys.argv[1:3])
names = sys.argv[3:]
def cells(p):
    d = yaml.safe_load(p.read_text())
    out = {}
    for goal, tab in d["goals"].items():
        for k, v in tab.items():
            out[(goal, k)] = v if isinstance(v, str) else v.get("policy")
    return out
for n in names:
    for f in sorted(new.glob(n + "-*.yaml")):
        a, b = cells(old / f.name), cells(f)
        ch = [(k, a.get(k), b[k]) for k in sorted(b) if a.get(k) != b[k]]
        print(f"{f.name}: {len(ch)} of {len(b)} cells changed")
        for k, x, y in ch:
            print(f"   {k[1]:32s} {x} -> {y}")
