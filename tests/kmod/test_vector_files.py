"""The vector files are well-formed and keep the timing margins their README promises.

No VM needed: this guards the contract itself, so a vector that a VM's timer jitter could
flip is caught before it reaches the kernel or the simulator.
"""
from __future__ import annotations

import pytest
import vmscripts

VECTORS = vmscripts.load_vectors()
MARGIN_MS = 25  # tests/vectors/README.md: arrivals keep 25 ms from decision times


def test_there_are_vectors_for_fifo_and_each_r() -> None:
    have = {(v["scheduler"], v["tunables"].get("rev_penalty")) for v in VECTORS}
    assert {("fifo", None), ("vr", 0), ("vr", 1), ("vr", 10)} <= have
    assert any(v.get("expected_counters", {}).get("expired", 0) > 0 for v in VECTORS)


@pytest.mark.parametrize("v", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_is_well_formed(v: dict) -> None:
    ids = [r["id"] for r in v["requests"]]
    assert len(set(ids)) == len(ids), "ids must be unique"
    assert sorted(v["expected_order"]) == sorted(ids), "expected_order must be a permutation"
    assert [r["arrive_ms"] for r in v["requests"]] == sorted(r["arrive_ms"] for r in v["requests"])
    assert v["reasoning"], "every vector carries its hand derivation"
    spans = sorted((r["sector"], r["sector"] + r["sectors"]) for r in v["requests"])
    prime = (v["head"]["sector"] - vmscripts.PRIMING_SECTORS, v["head"]["sector"])
    for a, b in zip(spans, spans[1:], strict=False):
        assert a[1] <= b[0], f"requests overlap: {a} {b}"
    for s in spans:
        assert s[1] <= prime[0] or s[0] >= prime[1], f"request {s} overlaps the priming {prime}"


@pytest.mark.parametrize("v", VECTORS, ids=[v["name"] for v in VECTORS])
def test_arrivals_keep_away_from_decision_times(v: dict) -> None:
    svc = v["service_ms"]
    for r in v["requests"]:
        t = r["arrive_ms"]
        if t == 0:
            continue
        nearest = min(abs(t - k * svc) for k in range(1, len(v["requests"]) + 2))
        assert nearest >= MARGIN_MS or t < svc - MARGIN_MS // 2, (r["id"], t)


def test_spec_primes_the_head() -> None:
    v = VECTORS[0]
    first = vmscripts.vector_spec(v).splitlines()[0].split()
    assert first == ["P", str(v["head"]["sector"] - 8), "8", "r"]
