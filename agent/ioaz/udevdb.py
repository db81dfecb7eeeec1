"""What udev knows of a disk: its properties (ID_MODEL, ID_SERIAL, ID_WWN, ID_PATH, ID_BUS,
ID_VENDOR, ...) from udev's database, read-only.

udev keeps one file per device, /run/udev/data/b<MAJOR>:<MINOR>, whose `E:KEY=VALUE` lines
are the properties `udevadm info --query=property` prints. Matching on them lets one matrix,
calibrated on a disk model, serve every server with that model whatever the disk is called.
Where udev does not run (a container, a minimal VM) there is no database, and every disk
has no properties: rules that ask for one then match nothing.
"""
from __future__ import annotations

import os
import re

DEFAULT_ROOT = "/run/udev/data"
# devices.include and exclude: an entry `udev:KEY=GLOB` matches a disk's udev property
UDEV_PREFIX = "udev:"
PROPERTY_NAME = re.compile(r"^[A-Za-z0-9_.]+$")
MAX_BYTES = 1 << 16       # a udev data file is a few KiB; more is not one


class UdevDb:
    def __init__(self, root: str = DEFAULT_ROOT) -> None:
        self.root = root

    def properties(self, devt: str | None) -> dict[str, str]:
        """The udev properties of the block device MAJOR:MINOR; {} when udev has none."""
        if not devt:
            return {}
        try:
            with open(os.path.join(self.root, f"b{devt}"), "rb") as f:
                data = f.read(MAX_BYTES)
        except OSError:
            return {}
        out: dict[str, str] = {}
        for raw in data.decode("utf-8", "replace").splitlines():
            if raw.startswith("E:") and "=" in raw:
                key, _, value = raw[2:].partition("=")
                out[key] = value
        return out
