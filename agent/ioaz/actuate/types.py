"""What the actuator is asked to do and what it reports back.

Results are values, never exceptions: the daemon loop handles many devices, and one bad device
(a write the kernel refuses, a disk unplugged mid-window) must come back as a result that names the
device, the file and the value, so the loop can log it and move on.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ioaz.realisation import Value


def sysfs_text(value: Value) -> str:
    """How a value is written to sysfs: integers as integers (a float 32.0 would be refused)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


@dataclass(frozen=True)
class QueueSettings:
    """Device-level settings; None leaves the kernel's value alone."""

    nr_requests: int | None = None
    read_ahead_kb: int | None = None
    queue_depth: int | None = None
    wbt_lat_usec: int | None = None     # writeback throttling's target; 0 turns it off

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> QueueSettings:
        return cls(nr_requests=d.get("nr_requests"), read_ahead_kb=d.get("read_ahead_kb"),
                   queue_depth=d.get("queue_depth"), wbt_lat_usec=d.get("wbt_lat_usec"))


@dataclass
class WriteStep:
    """One attribute write and its read-back."""

    device: str
    key: str            # relative to the device directory, e.g. "queue/iosched/read_expire"
    path: str           # the full file name, for messages
    wanted: str
    before: str | None = None
    got: str | None = None
    ok: bool = False
    errno: int | None = None
    error: str | None = None
    attempts: int = 0
    elapsed_s: float = 0.0   # the last write(2) alone: for queue/scheduler this is the stall

    @property
    def clamped(self) -> bool:
        """The kernel accepted the write but keeps a different value (nr_requests 2 -> 4)."""
        return self.ok and self.got is not None and self.got != self.wanted

    def message(self) -> str:
        if self.ok:
            took = f"took {self.got!r}" if self.clamped else "took"
            return f"{self.device}: {self.wanted!r} -> {self.path}: {took}"
        return (f"{self.device}: writing {self.wanted!r} to {self.path} failed: {self.error}"
                f" (after {self.attempts} attempt{'s' if self.attempts != 1 else ''})")


@dataclass
class ActuationResult:
    """What apply() did to one device."""

    device: str
    ok: bool = True
    steps: list[WriteStep] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    scheduler_before: str | None = None
    scheduler_after: str | None = None
    switched: bool = False          # queue/scheduler was written and took
    stall_s: float | None = None  # time the write to queue/scheduler blocked (queue frozen)
    rolled_back: bool = False       # the switch failed and the previous scheduler was put back
    saved_originals: bool = False   # this call saved the device's originals (its first change)
    notes: list[str] = field(default_factory=list)  # things skipped on purpose, rule reasons

    def fail(self, msg: str) -> None:
        self.ok = False
        self.errors.append(msg)

    def took(self) -> dict[str, str | None]:
        """key -> the value read back after the write."""
        return {s.key: s.got for s in self.steps if s.ok}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RestoreResult:
    device: str
    ok: bool = True
    restored: bool = False      # every saved value is back and the state entry is gone
    vanished: bool = False      # the device is gone; the entry stays until it can be restored
    replaced: bool = False      # another disk has the name now: nothing written, entry dropped
    # every value is back but the state file could not be updated (full, read-only): why.
    # The entry stays, and the next start finds nothing left to write and clears it.
    state_kept: str | None = None
    steps: list[WriteStep] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def fail(self, msg: str) -> None:
        self.ok = False
        self.errors.append(msg)


@dataclass(frozen=True)
class Drift:
    """A value that differs from what the actuator last wrote: someone else changed it."""

    device: str
    key: str
    expected: str
    actual: str | None   # None: the file is gone (device removed, or the scheduler changed)

    def message(self) -> str:
        return (f"{self.device}: {self.key} is {self.actual!r}, ioaz last wrote "
                f"{self.expected!r}")
