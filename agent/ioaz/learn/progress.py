"""A one-line progress bar with an ETA on stderr (redrawn in place on a terminal, a line every
few percent otherwise, so logs stay readable)."""
from __future__ import annotations

import sys
import time
from typing import TextIO


def _hms(s: float) -> str:
    s = int(max(0, s))
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    def __init__(self, total: int, label: str = "", out: TextIO | None = None,
                 width: int = 30) -> None:
        self.total, self.label, self.width = max(1, total), label, width
        self.out = out or sys.stderr
        self.done = 0
        self.skipped = 0
        self.t0 = time.monotonic()
        self.tty = self.out.isatty()
        self.last_pct = -100.0

    def skip(self, n: int = 1) -> None:
        """Work already done by an earlier run: counts as done, not in the rate."""
        self.skipped += n
        self.done += n

    def step(self, what: str = "") -> None:
        self.done += 1
        pct = 100.0 * self.done / self.total
        if not self.tty and pct - self.last_pct < 5 and self.done < self.total:
            return
        self.last_pct = pct
        ran = self.done - self.skipped
        elapsed = time.monotonic() - self.t0
        eta = elapsed / ran * (self.total - self.done) if ran else 0.0
        fill = int(self.width * self.done / self.total)
        bar = "#" * fill + "." * (self.width - fill)
        line = (f"{self.label} [{bar}] {self.done}/{self.total} {pct:5.1f}% "
                f"elapsed {_hms(elapsed)} ETA {_hms(eta)} {what}")
        if self.tty:
            self.out.write("\r" + line[:150].ljust(150))
            if self.done >= self.total:
                self.out.write("\n")
        else:
            self.out.write(line + "\n")
        self.out.flush()
