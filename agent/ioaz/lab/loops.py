"""Loop devices over files in /dev/shm for the lab's benchmarks on the real kernel."""
from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path


class Loops:
    """Loop devices over files in /dev/shm, detached on exit."""

    def __init__(self, n: int, size_mb: int):
        self.n, self.size_mb = n, size_mb
        self.devs: list[str] = []
        self.files: list[Path] = []

    def __enter__(self) -> list[str]:
        for _ in range(self.n):
            f = Path("/dev/shm") / f"ioaz-bench-{uuid.uuid4().hex[:8]}.img"
            with open(f, "wb") as fh:
                fh.truncate(self.size_mb << 20)
            self.files.append(f)
            dev = subprocess.run(["losetup", "-f", "--show", str(f)], check=True,
                                 capture_output=True, text=True).stdout.strip()
            self.devs.append(dev)
        return [os.path.basename(d) for d in self.devs]

    def __exit__(self, *exc: object) -> None:
        for d in self.devs:
            subprocess.run(["losetup", "-d", d], capture_output=True)
        for f in self.files:
            f.unlink(missing_ok=True)
