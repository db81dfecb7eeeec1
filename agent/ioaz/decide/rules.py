"""Which matrix file, and which goal, apply to a device: first matching rule wins.

Rules live in the `decide.matrix_rules` list of the ioazd config:

    matrix_rules:
      - match: {rotational: false, name: "nvme*", min_size: 100G}
        matrices: {mean: nonrotational-default.yaml, latency: nonrotational-default.yaml}
      - match: {rotational: true}
        matrices: {min: ioaz-table1-min.yaml, max: ioaz-table2-max.yaml, ...}

      - match: {udev: {ID_MODEL: "WDC_WD5000AAKS*"}}
        matrices: {mean: kernel/testbed-wd500-qd32-mean.yaml}

A rule matches when every condition given in `match` holds (an empty or missing `match`
matches every device); `udev` names udev properties (`udevadm info --query=property`), each
a glob its value must match (a disk without that property does not match). The first
matching rule that has a matrix for the device's goal wins.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..device import DeviceInfo

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


@dataclass(frozen=True)
class Rule:
    index: int                            # position in the config list, for explanations
    matrices: dict[str, str]              # goal -> matrix file (relative to matrix_dir)
    rotational: bool | None = None
    name: str | None = None            # glob
    min_size: int | None = None        # bytes, inclusive
    max_size: int | None = None        # bytes, inclusive
    udev: tuple[tuple[str, str], ...] = ()   # (property, glob): every one must match
    line: int = 0

    def matches(self, dev: DeviceInfo) -> bool:
        if self.rotational is not None and dev.rotational is not self.rotational:
            return False
        if self.name is not None and not fnmatch.fnmatchcase(dev.name, self.name):
            return False
        if self.min_size is not None and (dev.size_bytes is None or dev.size_bytes < self.min_size):
            return False
        for key, glob in self.udev:
            value = dev.udev_property(key)
            if value is None or not fnmatch.fnmatchcase(value, glob):
                return False
        return not (self.max_size is not None
                    and (dev.size_bytes is None or dev.size_bytes > self.max_size))

    def describe(self) -> str:
        parts = []
        if self.rotational is not None:
            parts.append(f"rotational={str(self.rotational).lower()}")
        if self.name is not None:
            parts.append(f"name={self.name}")
        if self.min_size is not None:
            parts.append(f"size>={self.min_size}")
        if self.max_size is not None:
            parts.append(f"size<={self.max_size}")
        parts += [f"{k}={v}" for k, v in self.udev]
        return f"rule {self.index + 1} ({', '.join(parts) or 'any device'})"


@dataclass(frozen=True)
class GoalRule:
    device: str  # glob
    goal: str


@dataclass(frozen=True)
class MatrixChoice:
    rule: Rule
    goal: str
    file: str


def parse_size(value: int | str) -> int:
    """512K, 100M, 4G, 1.5T (binary units) or a plain integer -> bytes."""
    if isinstance(value, int):
        return value
    text = value.strip().upper()
    unit = text[-1] if text and text[-1] in _SUFFIX else ""
    number = text[: len(text) - len(unit)]
    return int(float(number) * _SUFFIX[unit])


def rule_from_dict(index: int, d: dict[str, Any], line: int = 0) -> Rule:
    m = d.get("match") or {}
    return Rule(
        index=index,
        matrices=dict(d["matrices"]),
        rotational=m.get("rotational"),
        name=m.get("name"),
        min_size=parse_size(m["min_size"]) if "min_size" in m else None,
        max_size=parse_size(m["max_size"]) if "max_size" in m else None,
        udev=tuple(sorted((m.get("udev") or {}).items())),
        line=line,
    )


def select_matrix(rules: Sequence[Rule], dev: DeviceInfo, goal: str) -> MatrixChoice | None:
    """The matrix file for this device and goal: first matching rule that covers the goal."""
    for rule in rules:
        if goal in rule.matrices and rule.matches(dev):
            return MatrixChoice(rule, goal, rule.matrices[goal])
    return None


def goal_for(device: str, override: str | None, goal_rules: Sequence[GoalRule],
             default: str) -> str:
    """An administrator's `ioazctl goal` (override) beats a config glob, which beats the default."""
    if override:
        return override
    for g in goal_rules:
        if fnmatch.fnmatchcase(device, g.device):
            return g.goal
    return default

