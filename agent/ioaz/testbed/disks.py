"""The guest's data disks: `--disks SPEC`, a comma list of SATA disks on AHCI controllers.

    file:SIZE            a sparse file in /dev/shm (RAM): a disk with no seek at all
    model:NAME[:SIZE]    served at the time the simulator's model NAME says (testbed.modeldisk)

SIZE takes K, M, G or T (binary). Every disk is an `ide-hd` with rotation_rate 7200, so the guest
sees rotational=1, NCQ and a writable device/queue_depth (1..32), as on a SATA hard disk. Disk i
has the serial IOAZ000i (/dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ000i): the kernel's sdX names need
not follow the order of SPEC.
"""
from __future__ import annotations

import importlib
import os
import re
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ioaz.testbed.errors import TestbedError

PORTS_PER_AHCI = 6
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclass(frozen=True)
class DiskSpec:
    kind: str                  # "file" | "model"
    size_bytes: int | None
    model: str = ""


def parse_size(text: str, where: str) -> int:
    m = re.fullmatch(r"(\d+)([KMGT]?)i?B?", text.strip(), re.IGNORECASE)
    if not m or int(m.group(1)) == 0:
        raise TestbedError(f"{where}: size {text!r} is not a positive size like 512M or 8G")
    return int(m.group(1)) * _UNITS.get(m.group(2).upper(), 1)


def parse(spec: str) -> list[DiskSpec]:
    disks = []
    for i, item in enumerate(p.strip() for p in spec.split(",") if p.strip()):
        where = f"--disks item {i + 1} ({item!r})"
        kind, _, rest = item.partition(":")
        if kind == "file":
            if not rest:
                raise TestbedError(f"{where}: file: needs a size, e.g. file:4G")
            disks.append(DiskSpec("file", parse_size(rest, where)))
        elif kind == "model":
            name, _, size = rest.partition(":")
            if not name:
                raise TestbedError(f"{where}: model: needs a model name, e.g. model:wd500")
            disks.append(DiskSpec("model", parse_size(size, where) if size else None, name))
        else:
            raise TestbedError(f"{where}: unknown disk kind {kind!r}; use file:SIZE or "
                               "model:NAME[:SIZE]")
    return disks


def qemu_args(disks: list[DiskSpec], workdir: Path, stack: ExitStack,
              credit_us: float = 0.0) -> list[str]:
    """qemu options for the disks; what backs them is released when `stack` closes."""
    args: list[str] = []
    for i, d in enumerate(disks):
        ctl, port = divmod(i, PORTS_PER_AHCI)
        if port == 0:
            args += ["-device", f"ahci,id=ahci{ctl}"]
        node = f"disk{i}"
        if d.kind == "file":
            path = Path("/dev/shm") / f"ioaz-testbed-{os.getpid()}-{node}.raw"
            with open(path, "wb") as f:
                f.truncate(d.size_bytes or 0)
            stack.callback(path.unlink, missing_ok=True)
            drive = (f"if=none,id={node},file={path},format=raw,cache=none,aio=threads,"
                     "file.locking=off")
        else:
            drive = _model_drive(d, workdir, node, stack, credit_us)
        args += ["-drive", drive,
                 "-device", f"ide-hd,drive={node},bus=ahci{ctl}.{port},rotation_rate=7200,"
                            f"serial=IOAZ{i:04d}"]
    return args


def _model_drive(d: DiskSpec, workdir: Path, node: str, stack: ExitStack,
                 credit_us: float) -> str:
    try:
        modeldisk: Any = importlib.import_module("ioaz.testbed.modeldisk")
    except ImportError:
        raise TestbedError("model disks need ioaz.testbed.modeldisk (not built yet)") from None
    handle = modeldisk.start_model_disk(d.model, workdir, node, d.size_bytes, credit_us)
    stack.callback(handle.stop)
    return str(handle.qemu_drive(node))
