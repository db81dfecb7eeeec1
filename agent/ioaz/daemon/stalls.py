"""The queue stalls of a device's scheduler switches since ioazd started, as a histogram.

A switch freezes the queue while the kernel drains it and swaps the elevator (Actuator's
stall_s). Kept as counts per bound, not a list, so that the exported histogram only ever
grows, however many switches a long-running daemon makes.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

# Seconds. Measured stalls: 1-15 ms on loop devices, 70-150 ms on the testbed's SATA disk
# under emulation (docs/testbed.md); a few bounds keep the series per device few.
BOUNDS_S = (0.005, 0.025, 0.1, 0.5, 2.5)


@dataclass
class StallHistogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(BOUNDS_S) + 1))
    total_s: float = 0.0

    def observe(self, stall_s: float) -> None:
        self.counts[bisect.bisect_left(BOUNDS_S, stall_s)] += 1
        self.total_s += stall_s

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, switches that stalled at most that long), the last bound infinite."""
        out, running = [], 0
        for bound, n in zip((*BOUNDS_S, float("inf")), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out
