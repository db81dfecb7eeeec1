"""What a model names on each window of an ioazd --verbose log, its top three shares:

    .venv/bin/python docs/reports/calibration-files-2026-12-05/perwin.py MODEL.model.json LOG...

(`ioaz-lab replay` gives the counts; this prints the windows, for the file system's disk sdb.)"""
import sys
from pathlib import Path

from ioaz.lab.replay import windows
from ioaz.model.file import load

m = load(sys.argv[1])
for log in sys.argv[2:]:
    print("==", log.split("/")[-1])
    for i, f in enumerate(windows(Path(log), "sdb")):
        r = m.predict_proba(m.vector_of(f))
        print("%2d r%5.1f w%5.1f fill %.2f" % (i, f["read_bytes_per_s"] / 1e6,
                                              f["write_bytes_per_s"] / 1e6,
                                              f.get("dirty_fill") or 0),
              " ".join("%s %.2f" % (p[:5], s) for p, s in r[:3]))
