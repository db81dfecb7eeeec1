"""policies.yaml: each policy -> ordered kernel realisations; resolve against what a device offers.

Resolution is a pure function of the policy, the table and the schedulers the device lists
in queue/scheduler, so the simulator and tests use it without a kernel. When the first
choice is missing (our fifo/vr/stream modules on a kernel without them) it says so.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..home import MATRICES
from ..located import Doc, ValidationError, load_file
from ..realisation import Realisation, Value
from .schema import Schema

DEFAULT_POLICIES = MATRICES / "policies.yaml"


@dataclass(frozen=True)
class PolicyTable:
    path: str
    realisations: dict[str, tuple[Realisation, ...]]  # policy -> in order of preference

    def policies(self) -> tuple[str, ...]:
        return tuple(self.realisations)


@dataclass(frozen=True)
class Resolution:
    """What a policy becomes on one device."""

    policy: str
    scheduler: str | None             # None: the device offers none of the realisations
    knobs: dict[str, Value]
    fell_back: bool                      # not the first choice
    reason: str                          # human text; says what was missing
    skipped: tuple[str, ...] = ()        # schedulers tried first and not offered

    def as_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "scheduler": self.scheduler, "knobs": dict(self.knobs),
                "fell_back": self.fell_back, "reason": self.reason,
                "skipped": list(self.skipped)}


def load_policies(path: str | Path | None = None,
                  schema: Schema | None = None) -> PolicyTable:
    """Load and validate policies.yaml; raise ValidationError (FILE:LINE) on any issue."""
    doc = load_file(path or DEFAULT_POLICIES)
    return policies_from_doc(doc, schema or Schema.load())


def policies_from_doc(doc: Doc, schema: Schema) -> PolicyTable:
    issues = schema.check(doc, "policies")
    if issues:
        raise ValidationError(issues)
    table = {
        name: tuple(Realisation(r["scheduler"], dict(r.get("knobs") or {}), r.get("note"))
                    for r in entry["realisations"])
        for name, entry in doc.data["policies"].items()
    }
    return PolicyTable(doc.file, table)




def resolve(policy: str, table: PolicyTable, available: Sequence[str]) -> Resolution:
    """The first realisation of `policy` whose scheduler is in `available`."""
    choices = table.realisations.get(policy)
    if not choices:
        return Resolution(policy, None, {}, True, f"policy {policy!r} is not in {table.path}")
    offered = set(available)
    skipped: list[str] = []
    for i, r in enumerate(choices):
        if r.scheduler in offered:
            if i == 0:
                reason = f"{policy} -> {r.scheduler} (first choice)"
            else:
                reason = (f"{policy} -> {r.scheduler} (choice {i + 1}): "
                          f"{', '.join(skipped)} not offered by the kernel "
                          f"(queue/scheduler lists {' '.join(available) or 'nothing'})")
            return Resolution(policy, r.scheduler, dict(r.knobs), i > 0, reason, tuple(skipped))
        skipped.append(r.scheduler)
    return Resolution(policy, None, {}, True,
                      f"{policy}: none of {', '.join(skipped)} offered by the kernel "
                      f"(queue/scheduler lists {' '.join(available) or 'nothing'})",
                      tuple(skipped))
