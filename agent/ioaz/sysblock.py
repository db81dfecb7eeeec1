"""The door to the kernel's block sysfs: the only code that touches /sys/block and /sys/dev/block.

Every path is built from an injectable root (default /sys), so the same code runs against the real
kernel and against a fake directory tree in unit tests; the composition roots (ioazd, `ioazctl
observe`, ioaz-lab) build one BlockSysfs and hand it to everything that reads or writes a queue.
Attributes are named by their *key*, the path relative to /sys/block/DEV: "queue/scheduler",
"queue/iosched/read_expire", "queue/nr_requests", "queue/read_ahead_kb", "device/queue_depth".
Keys are what the state file, the drift memory and the results use, so an error message can always
name the exact file.

Writes raise OSError (with the kernel's errno) and leave deciding what to do about it to the
caller (actuate/actuator.py): retries, rollback and error reporting are policy, not I/O. Reads of
facts (rotational, size, queue depth, device number) return None when the file is missing or
unreadable: a device that lacks one is still a device.
"""
from __future__ import annotations

import errno
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
# writeback throttling's read-latency target (blk-wbt): 0 is off, -1 the kernel's default
WBT_LAT_USEC = "queue/wbt_lat_usec"
ROTATIONAL = "queue/rotational"
# Queue-level settings in the order apply() writes them; restore() goes the other way.
QUEUE_SETTINGS = (NR_REQUESTS, READ_AHEAD_KB, QUEUE_DEPTH, WBT_LAT_USEC)
# The elevators' request deadlines, all in milliseconds: mq-deadline's, bfq's, ioaz's (vr,
# stream). Not mq-deadline's prio_aging_expire: how long a lower I/O priority may be passed
# over, not how long a request waits.
EXPIRY_KNOBS = frozenset({"read_expire", "write_expire", "fifo_expire_sync",
                          "fifo_expire_async", "sync_expire", "async_expire"})
# how many device directories disk_of_devt keeps the disk of (then it starts afresh)
DIRS_REMEMBERED = 4096
# The attributes ioazd reads for every disk every window, which a BlockSysfs built with
# hold_open reads through a descriptor it keeps: one pread(2) in place of Python's open, fstat,
# read, read and close. Each read of a sysfs attribute runs its show() afresh, and a node the
# kernel removed answers ENODEV, so a held descriptor never reads a value that is gone.
HELD_KEYS = frozenset({"queue/scheduler", "diskseq"})
# what ioazd holds open: both keys of 16 disks (more disks are read the plain way), so a
# thousand disks cost no more descriptors than sixteen
HELD_BY_DAEMON = 32

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

    def __init__(self, root: str | os.PathLike[str] = "/sys", hold_open: int = 0) -> None:
        """hold_open: how many HELD_KEYS files to keep open at most (0: none; beyond it the
        others are opened for each read). One holding descriptors is for one thread at a
        time: a descriptor another thread let go of could be reused under a read. ioazd
        reads through it under its daemon's lock."""
        self.root = Path(root)
        self.hold_open = hold_open
        self._held: dict[str, int] = {}   # path -> its descriptor
        # Plain strings for the paths read every window: pathlib's joins cost more than the
        # read itself where Python is slow (a VM without KVM runs ioazd beside the I/O path).
        self._block = os.path.join(root, "block")
        self._dev_block = os.path.join(root, "dev", "block")
        # a device directory -> its whole disk's name. A directory's place in the tree says
        # what it is for as long as it exists (sda/sda1 is always sda's partition), so only
        # the link from the device number, which a new device may take, is read every window.
        self._disk_of_dir: dict[str, str] = {}

    def device_dir(self, device: str) -> Path:
        return self.root / "block" / device

    def path(self, device: str, key: str) -> Path:
        return self.device_dir(device) / key

    def exists(self, device: str) -> bool:
        return self.device_dir(device).is_dir()

    def has(self, device: str, key: str) -> bool:
        return self.path(device, key).is_file()

    def devices(self) -> list[str]:
        try:
            return sorted(os.listdir(self._block))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def read(self, device: str, key: str) -> str:
        """The attribute's value with the kernel's trailing newline removed."""
        path = os.path.join(self._block, device, key)
        if self.hold_open and key in HELD_KEYS:
            return self._read_held(path).decode("ascii", errors="replace").strip()
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()

    def _read_held(self, path: str) -> bytes:
        fd = self._held.get(path)
        if fd is not None:
            try:
                return os.pread(fd, 4096, 0)
            except OSError as e:
                # the disk went (ENODEV), perhaps for another of the same name: the path
                # is looked up again below; any other error is the attribute's own
                self._let_go(path)
                if e.errno != errno.ENODEV:
                    raise
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.pread(fd, 4096, 0)
        except BaseException:
            os.close(fd)
            raise
        if len(self._held) < self.hold_open:
            self._held[path] = fd
        else:
            os.close(fd)
        return data

    def _let_go(self, path: str) -> None:
        fd = self._held.pop(path, None)
        if fd is not None:
            os.close(fd)

    def let_go(self, device: str) -> None:
        """Close the descriptors held for a device (it vanished, or is no longer managed)."""
        for key in HELD_KEYS:
            self._let_go(os.path.join(self._block, device, key))

    def close(self) -> None:
        for path in list(self._held):
            self._let_go(path)

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

    def expiry_s(self, device: str) -> float:
        """The longest the active elevator lets a queued request wait before it is served by
        its deadline: the largest of its EXPIRY_KNOBS, in seconds; 0 for an elevator with
        none, or none at all."""
        d = os.path.join(self._block, device, IOSCHED_DIR)
        try:
            names = EXPIRY_KNOBS.intersection(os.listdir(d))
        except OSError:
            return 0.0
        longest = 0
        for n in names:
            try:
                longest = max(longest, int(self.read(device, knob_key(n))))
            except (OSError, ValueError):
                continue   # the elevator changed under us, or not a number: not a wait
        return longest / 1000

    def dev_number(self, device: str) -> str | None:
        """MAJOR:MINOR, to tell a reused name (a new disk called sdb) from the one we saved."""
        try:
            return self.read(device, "dev")
        except OSError:
            return None

    def identity(self, device: str) -> str | None:
        """What names this disk and no other: the kernel's diskseq (5.15 on: a new number for
        every disk attached, a loop device's every new backing file included, never reused
        until reboot), else the WWN the device reports; None when it says neither."""
        for key, label in (("diskseq", "diskseq"), ("wwid", "wwid"), ("device/wwid", "wwid")):
            try:
                value = self.read(device, key)
            except OSError:
                continue
            if value:
                return f"{label}:{value}"
        return None

    def read_int(self, device: str, key: str) -> int | None:
        try:
            return int(self.read(device, key))
        except (OSError, ValueError):
            return None

    def hw_tags(self, device: str) -> int | None:
        """How many requests the driver accepts at once (blk-mq tag depth of hardware queue 0)."""
        return self.read_int(device, "mq/0/nr_tags")

    def queue_depth(self, device: str) -> int | None:
        """The SCSI/ATA device's own queue depth (device/queue_depth), where it has one."""
        return self.read_int(device, QUEUE_DEPTH)

    def in_flight(self, device: str) -> int | None:
        """Requests the device has in flight now, reads and writes (`inflight`); None when
        it cannot be read."""
        try:
            return sum(int(v) for v in self.read(device, "inflight").split())
        except (OSError, ValueError):
            return None

    def rotational(self, device: str) -> bool | None:
        value = self.read_int(device, ROTATIONAL)
        return None if value is None else value == 1

    def size_bytes(self, device: str) -> int | None:
        """The medium's size; `size` counts 512-byte sectors whatever the logical block size."""
        sectors = self.read_int(device, "size")
        return None if sectors is None else sectors * 512

    def devt(self, device: str) -> tuple[int, int] | None:
        number = self.dev_number(device)
        try:
            major, minor = (number or "").split(":")
            return int(major), int(minor)
        except ValueError:
            return None

    def has_scheduler(self, device: str) -> bool:
        """True when queue/scheduler offers a choice (bio-based devices such as zram say 'none')."""
        try:
            return any(s != "none" for s in self.scheduler(device).available)
        except (OSError, ValueError):
            return False

    def scheduled_disks(self) -> list[str]:
        """Disks with a scheduler and a medium (an unattached loop device has size 0)."""
        return [d for d in self.devices() if self.scheduled(d)]

    def scheduled(self, device: str) -> bool:
        """It has a scheduler to choose and a medium to serve."""
        return self.has_scheduler(device) and (self.size_bytes(device) or 0) > 0

    def disk_of_devt(self, major: int, minor: int) -> str | None:
        """The whole-disk name of a device number: a partition folds into its disk.

        This runs for every device every window, where a system call is dear (a VM without
        KVM): the link is read and resolved by name, not by realpath() (an lstat of each of
        the target's ten-odd components), and a directory already seen is not looked at
        again."""
        try:
            target = os.readlink(os.path.join(self._dev_block, f"{major}:{minor}"))
        except OSError:
            return None
        disk = self._disk_of_dir.get(target)
        if disk is not None:
            return disk
        path = os.path.normpath(os.path.join(self._dev_block, target))
        if os.path.exists(os.path.join(path, "partition")):
            disk = os.path.basename(os.path.dirname(path))
        elif os.path.isdir(path):
            disk = os.path.basename(path)
        else:
            return None   # gone between the link and the look
        if len(self._disk_of_dir) >= DIRS_REMEMBERED:   # hot-plugs name new directories
            self._disk_of_dir.clear()
        self._disk_of_dir[target] = disk
        return disk

    def partitions(self, device: str) -> list[str]:
        d = self.device_dir(device)
        if not d.is_dir():
            return []
        return sorted(p.name for p in d.iterdir()
                      if p.name.startswith(device) and (p / "partition").exists())

    def holders(self, device: str, partition: str | None = None) -> list[str]:
        """What stacks on the disk or one of its partitions (device mapper, md, LVM)."""
        d = self.device_dir(device) / partition if partition else self.device_dir(device)
        h = d / "holders"
        return sorted(p.name for p in h.iterdir()) if h.is_dir() else []
