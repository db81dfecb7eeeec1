"""`ioazctl export --udev | --tuned`: what ioazd has set on each disk, frozen as a udev rule or a
TuneD profile, for an operator who wants the choice without the daemon.

"What ioazd has set" is exact: the keys its state file lists as changed (it saves a disk's
originals before the first write and drops the entry once they are back), with the values in
force now. So the export needs ioazd running (or killed before it could restore); a stopped
ioazd has put everything back and there is nothing to freeze.

Disks are matched by model (sysfs device/model, and vendor) when every managed disk of that
model has the same settings, so one rule serves every server with those disks; else by the
disk's WWN; a disk that reports neither (a loop device, some virtual disks) by its kernel name,
which may change across boots (the output says so).
"""
from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from ..actuate.state import STATE_FILE, entry_problem
from ..daemon.config import DEFAULT_CONFIG, INSTALLED_CONFIG, ConfigError, load_config
from ..sysblock import SCHEDULER, BlockSysfs

# The elevator is chosen first: writing it resets the old elevator's knobs, and nr_requests.
_ORDER = (SCHEDULER, "queue/iosched/", "queue/", "device/")


@dataclass(frozen=True)
class Disk:
    name: str
    settings: tuple[tuple[str, str], ...]   # (sysfs key, value in force), in writing order
    model: str | None = None
    vendor: str | None = None
    wwid: str | None = None


@dataclass(frozen=True)
class Group:
    """Disks one rule serves: all of a model, or one disk."""
    match: tuple[tuple[str, str], ...]      # (udev key, value)
    disks: tuple[str, ...]
    settings: tuple[tuple[str, str], ...]
    note: str = ""


def _order(key: str) -> tuple[int, str]:
    return next(i for i, p in enumerate((*_ORDER, "")) if key.startswith(p)), key


def read_disks(sysfs: BlockSysfs, entries: dict[str, dict], only: Sequence[str] = ()) -> list[Disk]:
    """The disks in the state file (`only`: those named), with what ioazd changed on each, as
    it is now."""
    out = []
    for name in sorted(entries):
        if only and name not in only:
            continue
        keys = sorted(set(entries[name].get("changed") or ()), key=_order)
        values = []
        for key in keys:
            try:
                v = sysfs.scheduler(name).active if key == SCHEDULER else sysfs.read(name, key)
            except OSError:
                continue   # the disk or the knob went away: nothing to freeze
            values.append((key, v))
        if not values:
            continue

        out.append(Disk(name, tuple(values), _attr(sysfs, name, "device/model"),
                        _attr(sysfs, name, "device/vendor"),
                        _attr(sysfs, name, "device/wwid") or _attr(sysfs, name, "wwid")))
    return out


def _attr(sysfs: BlockSysfs, name: str, key: str) -> str | None:
    try:
        return sysfs.read(name, key).strip() or None
    except OSError:
        return None


def group(disks: Sequence[Disk]) -> list[Group]:
    by_model: dict[tuple[str | None, str], list[Disk]] = {}
    for d in disks:
        if d.model:
            by_model.setdefault((d.vendor, d.model), []).append(d)
    out = []
    done: set[str] = set()
    for (vendor, model), ds in sorted(by_model.items(), key=lambda kv: kv[0][1]):
        if len({d.settings for d in ds}) == 1:
            match = ((("ATTRS{vendor}", vendor),) if vendor else ()) + (("ATTRS{model}", model),)
            out.append(Group(match, tuple(d.name for d in ds), ds[0].settings))
            done |= {d.name for d in ds}
    for d in disks:
        if d.name in done:
            continue
        if d.wwid:
            note = "ioazd chose differently for other disks of this model" if d.model else ""
            out.append(Group((("ATTRS{wwid}", d.wwid),), (d.name,), d.settings, note))
        else:
            out.append(Group((("KERNEL", d.name),), (d.name,), d.settings,
                             "no model or WWN: matched by name, which may change across boots"))
    return out


def _quote(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"')


def udev_rules(groups: Sequence[Group], header: str) -> str:
    lines = [f"# {header}", "# Install as /etc/udev/rules.d/60-ioaz.rules; applied when a disk "
             "appears (add) and on `udevadm trigger`.", ""]
    for g in groups:
        lines.append(f"# {', '.join(g.disks)}" + (f" ({g.note})" if g.note else ""))
        conds = ['ACTION=="add|change"', 'SUBSYSTEM=="block"', 'ENV{DEVTYPE}=="disk"']
        conds += [f'{k}=="{_quote(v)}"' for k, v in g.match]
        sets = [f'ATTR{{{k}}}="{_quote(v)}"' for k, v in g.settings]
        lines.append(", ".join(conds + sets))
        lines.append("")
    return "\n".join(lines)


def tuned_profile(groups: Sequence[Group], header: str) -> str:
    """TuneD's disk plugin sets the elevator; its sysfs plugin every other key, by path.
    TuneD names devices, not models: the profile holds on the disks as named here."""
    lines = [f"# {header}", "# Install as /etc/tuned/ioaz/tuned.conf, then `tuned-adm profile "
             "ioaz`.", "", "[main]", "summary=ioaz's choices, frozen (ioazctl export --tuned)", ""]
    sysfs_lines = []
    kernel = BlockSysfs()   # only for the paths' text: the kernel's /sys, not a test's tree
    for i, g in enumerate(groups):
        elevator = dict(g.settings).get(SCHEDULER)
        if elevator:
            lines += [f"[ioaz_disk{i}]", "type=disk", f"devices={','.join(g.disks)}",
                      f"elevator={elevator}", ""]
        for disk in g.disks:
            sysfs_lines += [f"{kernel.path(disk, k)}={v}" for k, v in g.settings
                            if k != SCHEDULER]
    if sysfs_lines:
        lines += ["[ioaz_sysfs]", "type=sysfs", *sysfs_lines, ""]
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    kind = p.add_mutually_exclusive_group(required=True)
    kind.add_argument("--udev", action="store_const", const="udev", dest="format",
                      help="print a udev rule (match by disk model, else WWN, else name)")
    kind.add_argument("--tuned", action="store_const", const="tuned", dest="format",
                      help="print a TuneD profile (disk and sysfs plugins, by disk name)")
    p.add_argument("device", nargs="*", metavar="DEVICE",
                   help="disks to export (sda, /dev/sdb); default: every disk ioazd changed")
    p.add_argument("--config", "-c", metavar="FILE",
                   help=f"ioazd's configuration, for its state_dir (default {INSTALLED_CONFIG} "
                        "when it exists, else the shipped one)")


class StateUnreadable(Exception):
    pass


def read_state(state_dir: str) -> dict[str, dict]:
    """The daemon's state file, read only (ioazd alone sets a bad one aside); entries of the
    wrong shape are left out."""
    path = f"{state_dir}/{STATE_FILE}"
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise StateUnreadable(f"{path}: {getattr(e, 'strerror', None) or e}") from e
    devices = data.get("devices") if isinstance(data, dict) else None
    if not isinstance(devices, dict):
        raise StateUnreadable(f"{path}: expected an object with a 'devices' object")
    return {d: e for d, e in devices.items() if not entry_problem(d, e)}


def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr,
        sysfs: BlockSysfs | None = None) -> int:
    sysfs = sysfs or BlockSysfs()
    config_file = args.config or (INSTALLED_CONFIG if INSTALLED_CONFIG.exists()
                                  else DEFAULT_CONFIG)
    try:
        config = load_config(config_file, dry_run=True)
    except ConfigError as e:
        print(f"ioazctl export: configuration refused:\n{e}", file=err)
        return 2
    only = [d.removeprefix("/dev/") for d in args.device]
    try:
        entries = read_state(str(config.state_dir))
    except StateUnreadable as e:
        print(f"ioazctl export: {e}", file=err)
        return 1
    unknown = [d for d in only if d not in entries]
    if unknown:
        print(f"ioazctl export: ioazd has changed nothing on {', '.join(unknown)} (state file "
              f"{config.state_dir}; managed and changed: {', '.join(sorted(entries)) or 'none'})",
              file=err)
        return 2
    disks = read_disks(sysfs, entries, only)
    if not disks:
        print(f"ioazctl export: ioazd has changed nothing that is in force (state file in "
              f"{config.state_dir}): is it running?", file=err)
        return 1
    header = (f"What ioazd had set on {socket.gethostname()} at "
              f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')} (ioazctl export --{args.format})")
    render = udev_rules if args.format == "udev" else tuned_profile
    out.write(render(group(disks), header))
    return 0
