"""Cell by cell, a set of matrices split by request size against one that is not: each sized
cell (CLASS/small, CLASS/large) against the unsized CLASS's policy.

    python3 cmp_sized.py UNSIZED_DIR SIZED_DIR NAME
"""
import pathlib
import sys

import yaml

old, new = map(pathlib.Path, sys.argv[1:3])
name = sys.argv[3]


def cells(p):
    d = yaml.safe_load(p.read_text())
    return {(g, k): (v if isinstance(v, str) else v.get("policy"))
            for g, tab in d["goals"].items() for k, v in tab.items()}


for f in sorted(new.glob(name + "-*.yaml")):
    a, b = cells(old / f.name), cells(f)
    ch = [(k, a.get((k[0], k[1].rsplit("/", 1)[0])), b[k]) for k in sorted(b)
          if a.get((k[0], k[1].rsplit("/", 1)[0])) != b[k]]
    print(f"{f.name}: {len(ch)} of {len(b)} sized cells name another policy than the unsized")
    for (g, k), x, y in ch:
        print(f"   {k:34s} {x} -> {y}")
