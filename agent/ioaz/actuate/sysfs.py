"""Reading and writing one block device's queue attributes in sysfs, and nothing else.

Every path is built from an injectable root (default /sys), so the same code runs against the real
kernel and against a fake directory tree in unit tests. Attributes are named by their *key*, the
path relative to /sys/block/DEV: "queue/scheduler", "queue/iosched/read_expire",
"queue/nr_requests", "queue/read_ahead_kb", "device/queue_depth". Keys are what the state file,
the drift memory and the results use, so an error message can always name the exact file.

This module raises OSError (with the kernel's errno) and leaves deciding what to do about it to the
caller (actuator.py): retries, rollback and error reporting are policy, not I/O.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

SCHEDULER = "queue/scheduler"
IOSCHED_DIR = "queue/iosched"
NR_REQUESTS = "queue/nr_requests"
READ_AHEAD_KB = "queue/read_ahead_kb"
QUEUE_DEPTH = "device/queue_depth"
# Queue-level settings in the order apply() writes them; restore() goes the other way.
QUEUE_SETTINGS = (NR_REQUESTS, READ_AHEAD_KB, QUEUE_DEPTH)

_BRACKETED = re.compile(r"\[([^\]]+)\]")


def knob_key(knob: str) -> str:
    return f"{IOSCHED_DIR}/{knob}"


def is_knob_key(key: str) -> bool:
    return key.startswith(IOSCHED_DIR + "/")


@dataclass(frozen=True)
class SchedulerLine:
    """queue/scheduler parsed: the active elevator and the ones that could be switched to."""

    active: str
    available: tuple[str, ...]


def parse_scheduler(text: str) -> SchedulerLine:
    """Parse "none [mq-deadline] kyber bfq" into active and available.

    The kernel brackets the active elevator of a blk-mq queue. A line without brackets that says
    only "none" belongs to a queue that cannot take an elevator (older kernels print that for
    bio-based devices); anything else is not a scheduler line and is refused.
    """
    names = tuple(text.replace("[", " ").replace("]", " ").split())
    found = _BRACKETED.findall(text)
    if len(found) == 1:
        return SchedulerLine(active=found[0].strip(), available=names)
    if names == ("none",):
        return SchedulerLine(active="none", available=())
    raise ValueError(f"not a queue/scheduler line: {text!r}")


class BlockSysfs:
    """The /sys/block/DEV attribute files of every block device, under an injectable root."""

    def __init__(self, root: str | os.PathLike[str] = "/sys") -> None:
        self.root = Path(root)

    def device_dir(self, device: str) -> Path:
        return self.root / "block" / device

    def path(self, device: str, key: str) -> Path:
        return self.device_dir(device) / key

    def exists(self, device: str) -> bool:
        return self.device_dir(device).is_dir()

    def has(self, device: str, key: str) -> bool:
        return self.path(device, key).is_file()

    def devices(self) -> list[str]:
        base = self.root / "block"
        return sorted(p.name for p in base.iterdir()) if base.is_dir() else []

    def read(self, device: str, key: str) -> str:
        """The attribute's value with the kernel's trailing newline removed."""
        with open(self.path(device, key), encoding="ascii", errors="replace") as f:
            return f.read().strip()

    def write(self, device: str, key: str, value: str) -> None:
        """One write(2) of the value, as `echo VALUE > FILE` does.

        A single unbuffered write matters: sysfs hands each write(2) to the attribute's store
        function, so Python's buffered text layer could split or delay it and hide the errno.
        """
        fd = os.open(self.path(device, key), os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, value.encode("ascii"))
        finally:
            os.close(fd)

    def scheduler(self, device: str) -> SchedulerLine:
        return parse_scheduler(self.read(device, SCHEDULER))

    def knobs(self, device: str) -> dict[str, str]:
        """Every readable and writable knob of the active elevator, by key.

        Read-only files (mode 0444) are left out because restore() could not put them back.
        The owner's write bit is tested, not access(2): root passes access(2) for any file.
        """
        d = self.device_dir(device) / IOSCHED_DIR
        if not d.is_dir():
            return {}
        out: dict[str, str] = {}
        for p in sorted(d.iterdir()):
            if p.is_file() and p.stat().st_mode & stat.S_IWUSR:
                out[knob_key(p.name)] = self.read(device, knob_key(p.name))
        return out

    def dev_number(self, device: str) -> str | None:
        """MAJOR:MINOR, to tell a reused name (a new disk called sdb) from the one we saved."""
        try:
            return self.read(device, "dev")
        except OSError:
            return None

    def hw_tags(self, device: str) -> int | None:
        """How many requests the driver accepts at once (blk-mq tag depth of hardware queue 0)."""
        try:
            return int(self.read(device, "mq/0/nr_tags"))
        except (OSError, ValueError):
            return None
