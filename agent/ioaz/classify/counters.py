"""Counter arithmetic: deltas of cumulative counters, and percentiles of log2 histograms."""
from __future__ import annotations

from collections.abc import Sequence

from .. import quantile

U64 = 1 << 64


def delta(new: int, old: int, bits: int = 64) -> int:
    """new - old for a cumulative counter of `bits` bits.

    A counter that wrapped gives a small modular difference; a counter that went back by more
    than half its range was reset (probe reloaded, device re-created): count from zero.
    """
    mod = 1 << bits
    d = (new - old) % mod
    if d > mod // 2:
        return new
    return d


def delta_list(new: Sequence[int], old: Sequence[int]) -> list[int]:
    return [delta(a, b) for a, b in zip(new, old, strict=True)]


def log2_percentile(hist: Sequence[int], q: float) -> float | None:
    """The q-quantile (0..1) of values counted in log2 buckets, interpolated within its bucket
    (the nearest rank of ioaz.quantile).

    Bucket i holds values in [2**i, 2**(i+1)) (bucket 0 also holds 0 and 1), as bpf/ioaz.bpf.c
    fills it. None when the histogram is empty.
    """
    found = quantile.of_counts(enumerate(hist), q)
    if found is None:
        return None
    i, frac = found
    lo = 0.0 if i == 0 else float(1 << i)
    return lo + (float(1 << (i + 1)) - lo) * frac
