"""What each model family, fitted on the kernel calibration with the disk's dirty data, names
on S "5 5 seq"'s windows under bfq, with dirty_fill as logged or set to a value.

    .venv/bin/python docs/reports/calibration-dirty-2026-12-05/families.py RAW_LOG_DIR \
        [--fill X] FAMILY...

RAW_LOG_DIR: a bench's guest/raw/ with ioazd --verbose logs (their window lines' features).
"""
import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "agent"))
from ioaz.lab.replay import windows  # noqa: E402
from ioaz.learn import trainer  # noqa: E402
from ioaz.learn.dataset import merged, read_rows, with_direct_dirty_zero, without_candidates  # noqa: E402
from ioaz.model.features import vector_from_dict  # noqa: E402

K = Path(__file__).resolve().parents[3] / "decision_matrices" / "kernel"
a = argparse.ArgumentParser()
a.add_argument("logs")
a.add_argument("--fill", type=float, action="append",
               help="dirty_fill to set (default: as logged)")
a.add_argument("families", nargs="+")
args = a.parse_args()
rows = merged([read_rows(K / "testbed-wd500-qd1.csv"),
               read_rows(K / "testbed-wd500-qd1-dirty.csv")])
rows, _ = without_candidates(rows, "fifo", K)
rows, _ = with_direct_dirty_zero(rows)
split = trainer.make_split(rows, "mean", 0.04)
feats = [f for p in sorted(Path(args.logs).glob("*.ioazd.log")) for f in windows(p, None)]
print(f"{len(feats)} windows")
for fam in args.families:
    est = trainer._fit(fam, split)
    for fill in args.fill or [None]:
        X = [vector_from_dict(f if fill is None else {**f, "dirty_fill": fill}) for f in feats]
        pred, _ = trainer._predict(est, X)
        print(fam, "as logged" if fill is None else fill, Counter(pred).most_common(4))
