"""Print each candidate's MB/s and p99 over kyber's of the same repetition (summary.txt)."""
import collections
import statistics as st
import sys

d: dict[int, dict[str, tuple[float, float]]] = collections.defaultdict(dict)
for line in open(sys.argv[1] if len(sys.argv) > 1 else "summary.txt"):
    p = line.split()
    d[int(p[1])][p[0]] = (float(p[4]), float(p[-1]))
for c in ("kyber", "stream", "stream-noidle", "vr", "mq-deadline", "bfq"):
    r = [d[k][c][0] / d[k]["kyber"][0] for k in d]
    q = [d[k][c][1] / d[k]["kyber"][1] for k in d]
    print(f"{c:14s} MB/s {st.mean(d[k][c][0] for k in d):6.2f} x kyber "
          f"{' '.join(f'{x:.3f}' for x in r)} mean {st.mean(r):.3f}  "
          f"p99 {st.mean(d[k][c][1] for k in d):.2f} ms x kyber {st.mean(q):.2f}")
