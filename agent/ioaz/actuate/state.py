"""The originals of every device the actuator has changed, in one JSON file that survives a crash.

The file is the only memory that outlives a SIGKILL: a device's entry is written (and fsynced)
before the first change to it, and removed only once every value in it is back. A new process that
finds the file knows exactly what to put back (recover.py).

Layout of STATE_DIR/actuate-state.json:
    {"version": 1,
     "devices": {"loop0": {"dev": "7:0", "identity": "diskseq:9", "saved_at": 1763687000.0,
                           "scheduler": "none",
                           "knobs": {"queue/iosched/read_expire": "500", ...},
                           "queue": {"queue/nr_requests": "128", "queue/read_ahead_kb": "128"},
                           "changed": ["queue/scheduler", "queue/nr_requests"]}}}
"changed" lists the keys in the order they were first changed, so restore can go backwards.
"identity" (sysblock.identity: the kernel's diskseq, else the WWN) tells the disk saved from
another that has its name since: a loop device is always 7:N, a new disk takes the free sdb.

A file that cannot be trusted (not JSON: a bad disk, a hand edit) is set aside as
actuate-state.json.corrupt-TIME, logged at error and counted (`set_aside`), and ioazd goes on
from the values in force: refusing to start would be a crash loop under systemd, and refusing
every later write would leave no original saved at all. An entry of the wrong shape is dropped
the same way (a copy of the file set aside); the other devices' entries are kept. The
file a write replaces stays beside it as actuate-state.json.prev, the last good state for the
operator. Temporary files a kill left mid-write are removed at start (clean_leftovers).
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("ioaz.actuate")

STATE_FILE = "actuate-state.json"
DEFAULT_STATE_DIR = "/run/ioaz"
VERSION = 1


def entry_problem(device: Any, e: Any) -> str | None:
    """What is wrong with one device's entry, or None when it has the shape restore needs."""
    if not isinstance(device, str) or not device:
        return f"device name {device!r} is not a name"
    if not isinstance(e, dict):
        return f"{device}: entry is {type(e).__name__}, expected an object"
    if not isinstance(e.get("scheduler"), str):
        return f"{device}: scheduler is {e.get('scheduler')!r}, expected a name"
    if e.get("dev") is not None and not isinstance(e["dev"], str):
        return f"{device}: dev is {e['dev']!r}, expected MAJOR:MINOR"
    if e.get("identity") is not None and not isinstance(e["identity"], str):
        return f"{device}: identity is {e['identity']!r}, expected diskseq:N or wwid:..."
    for key in ("knobs", "queue"):
        v = e.get(key, {})
        if not isinstance(v, dict) or not all(
                isinstance(k, str) and isinstance(x, str) for k, x in v.items()):
            return f"{device}: {key} is {v!r}, expected an object of texts"
    ch = e.get("changed", [])
    if not isinstance(ch, list) or not all(isinstance(k, str) for k in ch):
        return f"{device}: changed is {ch!r}, expected a list of keys"
    return None


class StateStore:
    def __init__(self, state_dir: str | os.PathLike[str] = DEFAULT_STATE_DIR) -> None:
        self.dir = Path(state_dir)
        self.path = self.dir / STATE_FILE
        self.prev = self.dir / (STATE_FILE + ".prev")
        self.set_aside = 0                      # corrupt files moved away since start
        self.last_set_aside: str | None = None  # where the last one went, and why

    def load(self) -> dict[str, dict[str, Any]]:
        """device -> originals; an absent file is an empty state (nothing was ever changed),
        and so is a corrupt one, once it is set aside (see the module's docstring)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except UnicodeDecodeError as e:
            return self._put_aside(f"not UTF-8 (byte {e.start})")
        except IsADirectoryError:
            return self._put_aside("a directory, not a file")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as e:
            line = getattr(e, "lineno", 1)
            return self._put_aside(f"line {line}: not JSON ({getattr(e, 'msg', e)})")
        if not isinstance(data, dict) or not isinstance(data.get("devices"), dict):
            return self._put_aside("expected an object with a 'devices' object")
        bad = {d: why for d, e in data["devices"].items() if (why := entry_problem(d, e))}
        if not bad:
            return data["devices"]
        # the other devices' originals are sound: keep them, and the whole file aside
        good = {d: e for d, e in data["devices"].items() if d not in bad}
        self._put_aside("; ".join(bad.values()), keep=text)
        try:
            self._write(good)
        except OSError as e:
            log.error(json.dumps({"event": "state_file_unwritable", "file": str(self.path),
                                  "error": e.strerror or str(e)}))
        return good

    def _put_aside(self, why: str, keep: str | None = None) -> dict[str, dict[str, Any]]:
        """Move the file aside (keep: copy its text there instead, the file is rewritten)."""
        aside = self.path.with_name(f"{STATE_FILE}.corrupt-{time.time():.0f}")
        try:
            if keep is None:
                os.replace(self.path, aside)
            else:
                aside.write_text(keep, encoding="utf-8")
            where = f"set aside as {aside}"
        except OSError as e:
            where = f"could not be set aside ({e.strerror or e}); it stays"
        self.set_aside += 1
        self.last_set_aside = f"{aside}: {why}"
        log.error(json.dumps({"event": "state_file_corrupt", "file": str(self.path),
                              "why": why, "now": where, "previous_good": str(self.prev)
                              if self.prev.exists() else None}))
        return {}

    def clean_leftovers(self) -> list[Path]:
        """Remove the temporary files of writes a kill interrupted (before the rename, so the
        state file itself is whole); only at start, when nothing else is writing."""
        gone = []
        for p in self.dir.glob(".actuate-state.*.tmp"):
            try:
                p.unlink()
                gone.append(p)
            except OSError:
                pass
        return gone

    def get(self, device: str) -> dict[str, Any] | None:
        return self.load().get(device)

    def put(self, device: str, entry: dict[str, Any]) -> None:
        devices = self.load()
        devices[device] = entry
        self._write(devices)

    def remove(self, device: str) -> None:
        devices = self.load()
        if devices.pop(device, None) is not None:
            self._write(devices)

    def _write(self, devices: dict[str, dict[str, Any]]) -> None:
        """Replace the file atomically: a crash leaves either the old file or the new, never half.

        The temporary file is fsynced before the rename and the directory after it, so the rename
        itself is on disk too (for a state dir on a real file system; /run is tmpfs, where this is
        cheap and the file only has to survive the process, not a reboot).
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        if not devices:   # everything is back: neither the state nor its predecessor applies
            for p in (self.path, self.prev):
                try:
                    p.unlink()
                except FileNotFoundError:
                    pass
            self._fsync_dir()
            return
        text = json.dumps({"version": VERSION, "devices": devices}, indent=1, sort_keys=True)
        fd, tmp = tempfile.mkstemp(prefix=".actuate-state.", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text + "\n")
                f.flush()
                os.fsync(f.fileno())
            self._keep_previous()
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        self._fsync_dir()

    def _keep_previous(self) -> None:
        """The file about to be replaced, linked as .prev: a second name, so that a kill at any
        moment leaves the state file itself whole (old or new)."""
        try:
            self.prev.unlink()
        except FileNotFoundError:
            pass
        try:
            os.link(self.path, self.prev)
        except FileNotFoundError:
            pass

    def _fsync_dir(self) -> None:
        fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
