"""The kernel elevators reproduce every dispatch-order vector of tests/vectors/ in a real kernel.

Each vector runs in the VM on null_blk (one request at a time, 50 ms timer completions); the
dispatch order is read from tracefs block_rq_issue and mapped back to the vector's ids. Each
vector runs twice; the first run that kept the vector's clock (vmharness.clock_error: every arrival
after the completions the vector plans, every request 50 ms on the device) is the one judged.
"""
from __future__ import annotations

import pytest
import vmharness
import vmscripts

VECTORS = vmscripts.load_vectors()


def priming(v: dict) -> tuple[int, int]:
    return (v["head"]["sector"] - vmscripts.PRIMING_SECTORS, vmscripts.PRIMING_SECTORS)


def dispatch_ids(v: dict, lines: list[str]) -> list[str]:
    """Issue order as vector ids; the priming request must come first and is dropped."""
    by_pos = {(r["sector"], r["sectors"]): r["id"] for r in v["requests"]}
    prime = priming(v)
    seen = [(s, n) for s, n, _ in vmharness.issued(lines)]
    assert seen and seen[0] == prime, f"first issue {seen[:1]} is not the priming {prime}"
    return [by_pos.get(p, f"?{p[0]}+{p[1]}") for p in seen[1:]]


@pytest.mark.slow
@pytest.mark.parametrize("v", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_dispatch_order(functional_boot: vmharness.Boot, v: dict) -> None:
    if v["head"]["direction"] != "up":
        pytest.skip("the VM harness primes the head moving up only")
    runs = vmscripts.vector_tags(v)
    clock = {tag: vmharness.clock_error(v, functional_boot.section(tag), priming(v))
             for tag in runs}
    kept = [tag for tag in runs if clock[tag] is None]
    assert kept, f"no run kept the vector's clock (a host too loaded for 50 ms steps): {clock}"
    if kept[0] != runs[0]:
        print(f"{v['name']}: first run off the vector's clock ({clock[runs[0]]}); "
              f"judging {kept[0]}")
    lines = functional_boot.section(kept[0])
    assert not any("refused" in line for line in lines), lines
    vals = functional_boot.values(kept[0])
    assert vals.get("errors") == "0" and vals.get("completed") == str(len(v["requests"]) + 1)
    assert dispatch_ids(v, lines) == v["expected_order"]
    for name, want in v.get("expected_counters", {}).items():
        assert int(vals[f"counter_{name}"]) == want, f"counter {name}"
