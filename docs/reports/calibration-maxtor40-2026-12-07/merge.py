"""A dataset with some workloads measured again: the old rows of those workloads replaced by
the new ones, every other row kept in its place.

    python3 merge.py OLD.csv NEW.csv OUT.csv
"""
import csv
import sys

old_path, new_path, out_path = sys.argv[1:4]
with open(old_path, newline="") as f:
    r = csv.DictReader(f)
    fields, old = r.fieldnames, list(r)
with open(new_path, newline="") as f:
    r = csv.DictReader(f)
    assert r.fieldnames == fields, "the two datasets' columns differ"
    new = list(r)
again = {row["workload"] for row in new}
kept = [row for row in old if row["workload"] not in again]
with open(out_path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(kept + new)
print(f"{len(old) - len(kept)} rows of {len(again)} workloads replaced by {len(new)}; "
      f"{len(kept) + len(new)} rows")
