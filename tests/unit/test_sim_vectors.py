"""The simulator's fifo and vr reproduce every shared dispatch-order vector (tests/vectors/)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from ioaz.sim.devices import FixedDevice, FixedParams
from ioaz.sim.engine import Simulator
from ioaz.sim.request import Request
from ioaz.sim.workloads import Phase, Workload

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
# vector scheduler -> simulator scheduler: the kernel module's stream runs on V(R)
SIM_SCHEDULERS = {"fifo": "fifo", "vr": "vr", "stream": "stream-vr"}


def _vectors() -> list[Path]:
    return sorted(VECTORS.glob("*.json"))


def run_vector(v: dict) -> tuple[list[str], Simulator]:
    """Play a vector through the engine with the README's time model: the priming request
    [head-8, head) starts service at t=0 on an empty scheduler, the device serves one request
    every service_ms, requests arrive at arrive_ms in file order."""
    tun = dict(v.get("tunables", {}))   # the simulator's knobs carry the same _ms names
    dev = FixedDevice(FixedParams(service_ms=v["service_ms"]))
    idle = Workload("vector", [Phase(None, [])])
    sim = Simulator(dev, SIM_SCHEDULERS[v["scheduler"]], idle, tunables=tun, window_s=3600.0)
    sim.issue_log = []
    head = v["head"]["sector"]
    assert v["head"].get("direction", "up") == "up", "the priming request always moves the head up"
    sim.inject(Request("__prime__", 1, head - 8, 8, False, True, 0.0))
    for r in v["requests"]:
        sim.inject(Request(r["id"], 2, r["sector"], r["sectors"], r["op"] == "write",
                           bool(r.get("sync", True)), r["arrive_ms"] / 1e3))
    n = len(v["requests"]) + 1
    sim.run(max_s=(n + 2) * v["service_ms"] / 1e3)
    order = [rq.id for rq in sim.issue_log]
    assert order[0] == "__prime__"
    return [str(i) for i in order[1:]], sim


def test_vectors_exist() -> None:
    # The vectors are the contract with the kernel module: fifo, vr and stream must be covered.
    names = {p.stem.split("_")[0] for p in _vectors()}
    assert {"fifo", "vr", "stream"} <= names, f"vectors in {VECTORS}: {sorted(names)}"


@pytest.mark.parametrize("path", _vectors(), ids=lambda p: p.stem)
def test_vector(path: Path) -> None:
    v = json.loads(path.read_text())
    if v["scheduler"] not in SIM_SCHEDULERS:
        pytest.skip(f"{path.name}: scheduler {v['scheduler']!r} has no simulator conformance yet")
    order, sim = run_vector(v)
    assert order == v["expected_order"], "\n".join(v.get("reasoning", []))
    for name, want in v.get("expected_counters", {}).items():
        if name == "merged":
            assert sim.total_merges == want
        elif hasattr(sim.sched, name):   # expired, waits, waits_paid, waits_timeout, waits_cut
            assert getattr(sim.sched, name) == want, name
        else:
            pytest.fail(f"{path.name}: counter {name!r} unknown to the simulator")


def test_a_wrong_order_is_caught() -> None:
    """The harness can fail: swapping rev_penalty from 1 to 0 changes vr_r1_sstf's order."""
    p = VECTORS / "vr_r1_sstf.json"
    if not p.exists():
        pytest.skip("vr_r1_sstf.json not written yet")
    v = json.loads(p.read_text())
    v["tunables"]["rev_penalty"] = 0
    assert run_vector(v)[0] != v["expected_order"]
