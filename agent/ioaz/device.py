"""What ioaz knows of a device that does not change while it runs: read once from the block
sysfs door by the daemon, passed to the rules that pick a matrix and to the knob rules."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceInfo:
    name: str                        # kernel name: sda, nvme0n1, loop3
    rotational: bool | None = None   # queue/rotational; None when unknown
    size_bytes: int | None = None    # size * 512
    queue_depth: int | None = None   # device/queue_depth (SCSI, SATA NCQ, RAID controllers)
    hw_tags: int | None = None       # blk-mq tags of hardware queue 0: requests accepted at once
    raid: bool = False               # said by the configuration's `raid` globs
    udev: tuple[tuple[str, str], ...] = ()   # udev's properties (ioaz.udevdb), sorted

    def udev_property(self, key: str) -> str | None:
        return dict(self.udev).get(key)

    @property
    def queues_commands(self) -> bool:
        """The device takes more than one request at a time (command queueing, Carroll 2.1.3)."""
        depth = self.queue_depth if self.queue_depth is not None else self.hw_tags
        return depth is not None and depth > 1
