"""What every simulator suite of the benchmark report shares: its options, one simulator run,
what counts as a tie."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ioaz.sim.devices import load_device
from ioaz.sim.engine import Simulator
from ioaz.sim.results import SimResult
from ioaz.sim.workloads import (
    Workload,
)

TRACE = Path(__file__).resolve().parents[4] / "tests" / "data" / "trace-phases-loop.csv"
# Two schedulers whose goal values are this close are a tie: the model's run-to-run
# differences between schedulers of a few tenths of a percent are not a ranking.
TIE = 0.02


@dataclass
class Opts:
    quick: bool = False
    # the device model of the adaptive part; None: ADAPTIVE_DEVICE
    adaptive_device: str | None = None

    def dur(self, full: float, quick: float) -> float:
        return quick if self.quick else full


def run_sim(device: str, sched: str, wl: Workload, *, tunables: dict[str, Any] | None = None,
            chooser: Any = None, keep_windows: bool = False, trace: Path | None = None,
            **overrides: Any) -> SimResult:
    sim = Simulator(load_device(device, **overrides), sched, wl, tunables=tunables or {},
                    chooser=chooser, keep_windows=keep_windows)
    if trace is not None:
        from ioaz.sim.trace import read_trace

        sim.replay(read_trace(str(trace)))
    return sim.run()



def finite(x: float) -> bool:
    return isinstance(x, float) and math.isfinite(x)
