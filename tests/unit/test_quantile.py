"""One percentile for all of ioaz (ioaz.quantile): the nearest rank, and every histogram that
reports a percentile answering through it, so a probe's, fio's and the simulator's p99 of the
same values agree (each to its bucket's resolution)."""
from __future__ import annotations

import math

import pytest
from ioaz import quantile
from ioaz.classify.counters import log2_percentile
from ioaz.lab.testbench.measure import bins_percentile
from ioaz.sim.results import HIST_PER_OCTAVE, LatencyHistogram


def test_nearest_rank_of_a_sorted_list():
    v = list(range(1, 101))
    assert [quantile.of_sorted(v, q) for q in (0.0, 0.01, 0.5, 0.99, 1.0)] == [1, 1, 50, 99, 100]
    assert quantile.of_sorted([7.0], 0.99) == 7.0
    assert quantile.of_sorted([], 0.5) is None
    # a q outside 0..1 is held to it, not an index error
    assert quantile.of_sorted(v, 1.5) == 100 and quantile.of_sorted(v, -1) == 1
    assert quantile.of_sorted([1, 2, 3, 4], 0.5) == 2   # the smallest with half at or below


def test_counts_give_the_bucket_and_how_far_into_it():
    c = [(10, 1), (20, 0), (30, 3)]
    assert quantile.of_counts(c, 0.25) == (10, 1.0)
    k, frac = quantile.of_counts(c, 0.5)
    assert k == 30 and frac == pytest.approx(1 / 3)
    assert quantile.of_counts(c, 1.0) == (30, 1.0)
    assert quantile.of_counts([(1, 0), (2, 0)], 0.5) is None
    assert quantile.of_counts([], 0.5) is None


def test_every_histogram_agrees_with_the_sorted_values():
    # latencies spread over four decades, some repeated
    values = sorted([1e-4 * 1.07 ** i for i in range(200)] + [5e-3] * 40)
    for q in (0.5, 0.9, 0.99):
        exact = quantile.of_sorted(values, q)
        # fio's bins: one bin per distinct value (ns), exact
        bins: dict[int, int] = {}
        for v in values:
            bins[round(v * 1e9)] = bins.get(round(v * 1e9), 0) + 1
        assert bins_percentile(bins, q) == round(exact * 1e9)
        # the simulator's log-spaced histogram: within half a bucket
        h = LatencyHistogram()
        for v in values:
            h.add(v)
        got = h.percentile(q)
        assert abs(math.log2(got / exact)) <= 1 / HIST_PER_OCTAVE, (q, got, exact)
        # the probe's log2 buckets (ns): inside the octave that holds it
        hist = [0] * 40
        for v in values:
            hist[max(0, int(v * 1e9).bit_length() - 1)] += 1
        p = log2_percentile(hist, q)
        lo = 1 << (int(exact * 1e9).bit_length() - 1)
        assert lo <= p <= 2 * lo, (q, p, exact)
