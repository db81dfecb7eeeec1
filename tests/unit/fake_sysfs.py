"""A fake /sys/block tree that behaves like the kernel where ioaz depends on it (a BlockSysfs
over a tmp dir with the real layout). tests/unit/test_actuate_fake_kernel.py checks it against
the kernel's behaviour; the actuator, observer and daemon tests build their devices with it.

The behaviours copied from the kernel (checked on 6.18 loop devices, see the integration tests):
writing a name to queue/scheduler brackets it and replaces queue/iosched/ with the new elevator's
default knobs and resets nr_requests (128 under none, 256 with an elevator); an unknown name is
EINVAL; nr_requests below 4 is raised to 4. Faults the kernel gives only under load (EBUSY, a
switch that fails half way) are injected on demand.
"""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from ioaz import sysblock as sf
from ioaz.sysblock import BlockSysfs

DEFAULT_KNOBS = {
    "none": {},
    "mq-deadline": {"read_expire": "500", "write_expire": "5000", "fifo_batch": "16",
                    "writes_starved": "2", "front_merges": "1"},
    "kyber": {"read_lat_nsec": "2000000", "write_lat_nsec": "10000000"},
    "bfq": {"slice_idle": "8", "slice_idle_us": "8000", "low_latency": "1", "max_budget": "0"},
}
NR_REQUESTS_DEFAULT = {"none": "128"}  # any elevator: 256


class FakeKernel(BlockSysfs):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.log: list[tuple[str, str, str]] = []       # (device, key, value) of every write
        self.faults: dict[tuple[str, str], list[int]] = {}  # errnos to raise, one per write
        self.on_write = None  # called before each write, to observe the world at that moment
        # A switch that fails leaves this scheduler active (the kernel falls back to none when
        # it cannot set up the new elevator and the old one is gone).
        self.failed_switch_leaves: str | None = None
        self.diskseq = 0   # the kernel numbers every disk attached, never again this boot

    def add_device(self, name: str, active: str = "none",
                   available: tuple[str, ...] = ("none", "mq-deadline", "kyber", "bfq"),
                   queue_depth: int | None = None, dev: str = "7:0", rotational: bool = False,
                   size_sectors: int = 2097152) -> None:
        d = self.device_dir(name)
        (d / "queue").mkdir(parents=True)
        (d / "dev").write_text(dev + "\n")
        self.diskseq += 1
        (d / "diskseq").write_text(f"{self.diskseq}\n")
        (d / "size").write_text(f"{size_sectors}\n")
        (d / "queue" / "read_ahead_kb").write_text("128\n")
        (d / "queue" / "rotational").write_text(f"{int(rotational)}\n")
        (d / "mq" / "0").mkdir(parents=True)
        (d / "mq" / "0" / "nr_tags").write_text("128\n")
        if queue_depth is not None:
            (d / "device").mkdir()
            (d / "device" / "queue_depth").write_text(f"{queue_depth}\n")
        self._available = available
        self._set_scheduler(name, active)
        self._link_devt(name, dev)

    def add_partition(self, disk: str, name: str, dev: str) -> None:
        d = self.device_dir(disk) / name
        d.mkdir()
        (d / "partition").write_text("1\n")
        (d / "dev").write_text(dev + "\n")
        self._link_devt(f"{disk}/{name}", dev)

    def _link_devt(self, rel: str, dev: str) -> None:
        """/sys/dev/block/MAJ:MIN points at the device's directory by a relative path, as
        the kernel's does."""
        link = self.root / "dev" / "block" / dev
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(self.root / "block" / rel, link.parent))

    def _set_scheduler(self, device: str, name: str) -> None:
        d = self.device_dir(device) / "queue"
        line = " ".join(f"[{s}]" if s == name else s for s in self._available)
        (d / "scheduler").write_text(line + " \n")
        shutil.rmtree(d / "iosched", ignore_errors=True)
        if name != "none":
            (d / "iosched").mkdir()
            for k, v in DEFAULT_KNOBS[name].items():
                (d / "iosched" / k).write_text(v + "\n")
        (d / "nr_requests").write_text(NR_REQUESTS_DEFAULT.get(name, "256") + "\n")

    def write(self, device: str, key: str, value: str) -> None:
        if self.on_write:
            self.on_write(device, key, value)
        self.log.append((device, key, value))
        pending = self.faults.get((device, key))
        if pending:
            code = pending.pop(0)
            if key == sf.SCHEDULER and self.failed_switch_leaves is not None:
                self._set_scheduler(device, self.failed_switch_leaves)
            raise OSError(code, os.strerror(code))
        if not self.path(device, key).is_file():
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
        if key == sf.SCHEDULER:
            if value not in self._available:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            self._set_scheduler(device, value)
            return
        if not value.lstrip("-").isdigit():
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        if key == sf.NR_REQUESTS:
            value = str(max(4, int(value)))
        super().write(device, key, value)

    def remove_device(self, name: str) -> None:
        dev = (self.device_dir(name) / "dev").read_text().strip()
        shutil.rmtree(self.device_dir(name))
        (self.root / "dev" / "block" / dev).unlink(missing_ok=True)


def fake_disks(tmp_path: Path, *names: str) -> FakeKernel:
    """A fake tree holding the named disks (8:0, 8:16, ...), each with a scheduler."""
    kernel = FakeKernel(tmp_path / "sys")
    for i, name in enumerate(names):
        kernel.add_device(name, dev=f"8:{16 * i}")
    return kernel
