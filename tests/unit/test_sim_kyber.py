"""kyber in the simulator keeps dispatching after a spent batch (it used to stall the device)."""
from __future__ import annotations

import pytest
from ioaz.sim.devices import load_device
from ioaz.sim.engine import simulate
from ioaz.sim.workloads import Phase, ProcSpec, Workload


@pytest.mark.parametrize("op", ["read", "write"])
def test_kyber_serves_a_deep_single_direction_stream_like_noop(op):
    w = Workload("deep", [Phase(2.0, [ProcSpec(op=op, sync=False, depth=8)])])
    ky = simulate(load_device("carroll-hp72"), "kyber", w)
    noop = simulate(load_device("carroll-hp72"), "noop", w)
    assert noop.requests > 1000
    assert ky.requests >= 0.95 * noop.requests, (ky.requests, noop.requests)
