"""Which block devices exist, which have an I/O scheduler, and whose partition is whose."""
from __future__ import annotations

import os

SYS_BLOCK = "/sys/block"


def has_scheduler(name: str, sys_block: str = SYS_BLOCK) -> bool:
    """True when queue/scheduler offers a choice (bio-based devices such as zram say 'none')."""
    try:
        with open(os.path.join(sys_block, name, "queue", "scheduler")) as f:
            choices = f.read().replace("[", "").replace("]", "").split()
    except OSError:
        return False
    return any(c != "none" for c in choices)


def size_sectors(name: str, sys_block: str = SYS_BLOCK) -> int:
    try:
        with open(os.path.join(sys_block, name, "size")) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def scheduled_disks(sys_block: str = SYS_BLOCK) -> list[str]:
    """Disks with a scheduler and a medium (an unattached loop device has size 0)."""
    try:
        names = sorted(os.listdir(sys_block))
    except OSError:
        return []
    return [n for n in names if has_scheduler(n, sys_block) and size_sectors(n, sys_block) > 0]


def devt_of(name: str, sys_block: str = SYS_BLOCK) -> tuple[int, int] | None:
    try:
        with open(os.path.join(sys_block, name, "dev")) as f:
            major, minor = f.read().strip().split(":")
        return int(major), int(minor)
    except (OSError, ValueError):
        return None


def disk_of_devt(major: int, minor: int, sys_dev_block: str = "/sys/dev/block") -> str | None:
    """The whole-disk name of a device number: a partition folds into its disk."""
    real = os.path.realpath(os.path.join(sys_dev_block, f"{major}:{minor}"))
    if not os.path.isdir(real):
        return None
    if os.path.exists(os.path.join(real, "partition")):
        return os.path.basename(os.path.dirname(real))
    return os.path.basename(real)


def exists(name: str, sys_block: str = SYS_BLOCK) -> bool:
    return os.path.isdir(os.path.join(sys_block, name))
