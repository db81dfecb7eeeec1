"""What the daemon keeps about each device and each switch: read by the window, the metrics and
the API (views.py), written only by core.Daemon under its lock."""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

from ..classify.types import WindowFeatures
from ..decide import Decision, DeviceState
from ..probe.snapshot import DeviceSnapshot
from .stalls import StallHistogram


@dataclass
class SwitchRecord:
    time: float                 # unix time
    device: str
    from_scheduler: str | None
    to_scheduler: str | None
    from_policy: str | None
    to_policy: str | None
    reason: str
    why: str
    stall_s: float | None
    ok: bool
    dry_run: bool
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class DeviceRecord:
    """Everything the daemon knows about one device (read by metrics and the API)."""

    name: str
    state: DeviceState
    scheduler: str | None = None            # active in the kernel, read each window
    available: tuple[str, ...] = ()
    features: WindowFeatures | None = None  # the last window
    snapshot: DeviceSnapshot | None = None  # cumulative counters (histograms for metrics)
    decision: Decision | None = None
    decision_time: float | None = None      # unix time of the last decision
    switches: collections.Counter = field(default_factory=collections.Counter)  # (from,to,reason)
    trials: collections.Counter = field(default_factory=collections.Counter)    # outcome
    stalls: StallHistogram = field(default_factory=StallHistogram)
    errors: int = 0
    last_error: str | None = None
