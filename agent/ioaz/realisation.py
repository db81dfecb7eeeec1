"""A concrete kernel scheduler and its knobs: what a policy becomes on a device (one entry of
decision_matrices/policies.yaml), and what the actuator is asked to apply."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Value = str | int | float


@dataclass(frozen=True)
class Realisation:
    scheduler: str
    knobs: Mapping[str, Value] = field(default_factory=dict)
    note: str | None = None          # policies.yaml's note: why this realisation

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Realisation:
        return cls(scheduler=str(d["scheduler"]), knobs=dict(d.get("knobs") or {}),
                   note=d.get("note"))
