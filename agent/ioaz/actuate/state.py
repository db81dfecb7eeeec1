"""The originals of every device the actuator has changed, in one JSON file that survives a crash.

The file is the only memory that outlives a SIGKILL: a device's entry is written (and fsynced)
before the first change to it, and removed only once every value in it is back. A new process that
finds the file knows exactly what to put back (recover.py).

Layout of STATE_DIR/actuate-state.json:
    {"version": 1,
     "devices": {"loop0": {"dev": "7:0", "saved_at": 1763687000.0,
                           "scheduler": "none",
                           "knobs": {"queue/iosched/read_expire": "500", ...},
                           "queue": {"queue/nr_requests": "128", "queue/read_ahead_kb": "128"},
                           "changed": ["queue/scheduler", "queue/nr_requests"]}}}
"changed" lists the keys in the order they were first changed, so restore can go backwards.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

STATE_FILE = "actuate-state.json"
DEFAULT_STATE_DIR = "/run/ioaz"
VERSION = 1


class StateStore:
    def __init__(self, state_dir: str | os.PathLike[str] = DEFAULT_STATE_DIR) -> None:
        self.dir = Path(state_dir)
        self.path = self.dir / STATE_FILE

    def load(self) -> dict[str, dict[str, Any]]:
        """device -> originals; an absent file is an empty state (nothing was ever changed).

        A corrupt file raises ValueError: silently treating it as empty would lose the originals.
        """
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{self.path}:{e.lineno}: corrupt state file: {e.msg}") from e
        if not isinstance(data, dict) or not isinstance(data.get("devices"), dict):
            # A corrupt file, like the JSON error above: same exception for the caller.
            raise ValueError(  # noqa: TRY004
                f"{self.path}: expected an object with a 'devices' object")
        return data["devices"]

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
        if not devices:
            try:
                self.path.unlink()
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
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        self._fsync_dir()

    def _fsync_dir(self) -> None:
        fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
