"""Percentiles, one definition for all of ioaz: the nearest rank.

The q-quantile of n values is the smallest value with at least q*n values at or below it (the
1-based rank ceil(q*n), at least 1). The probe's log2 latency histogram, fio's latency bins,
the simulator's log-spaced histogram and its sorted lists all answer through it, so a p99 in
a report, a metric and a decision means the same thing.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TypeVar

K = TypeVar("K")


def rank(n: int, q: float) -> int:
    """The 1-based nearest rank of the q-quantile (q in 0..1) among n values."""
    return max(1, min(n, math.ceil(min(max(q, 0.0), 1.0) * n)))


def of_sorted(values: Sequence[float], q: float) -> float | None:
    """The q-quantile of an ascending sequence; None when it is empty."""
    if not values:
        return None
    return values[rank(len(values), q) - 1]


def of_counts(counts: Iterable[tuple[K, int]], q: float) -> tuple[K, float] | None:
    """The bucket holding the q-quantile of counts given as (key, count) in ascending key
    order, and how far into that bucket's count the quantile falls (0..1, for a caller that
    interpolates inside the bucket); None when nothing was counted."""
    pairs = [(k, c) for k, c in counts if c > 0]
    total = sum(c for _, c in pairs)
    if total <= 0:
        return None
    want = rank(total, q)
    exact = min(max(q, 0.0), 1.0) * total
    seen = 0
    for k, c in pairs:
        if seen + c >= want:
            return k, min(1.0, max(0.0, (exact - seen) / c))
        seen += c
    raise AssertionError("unreachable: the last bucket reaches the total")
