"""The file system a calibration of workloads on files (grid.WorkSpec.files) makes on the disk.

ext4, made with its inode tables and journal written at once (lazy_itable_init=0,
lazy_journal_init=0): made lazily, the kernel's ext4lazyinit thread writes them in the
background for minutes after the mount, under the first runs. Mounted under the
calibration's state directory for the calibration only; a calibration killed before it
unmounts leaves it mounted, and the next one is refused (check_device: the disk is mounted)
until the operator unmounts it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MKFS = ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]


class FileSystemError(RuntimeError):
    pass


def _run(cmd: list[str], what: str, timeout: float) -> None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise FileSystemError(f"{what}: {cmd[0]} is not installed (workloads on files, -f, "
                              "need it)") from None
    except subprocess.TimeoutExpired:
        raise FileSystemError(f"{what}: {cmd[0]} took more than {timeout:g} s") from None
    if p.returncode != 0:
        raise FileSystemError(f"{what}: {' '.join(cmd)} exited {p.returncode}: "
                              f"{(p.stderr or p.stdout).strip()[:300]}")


@contextmanager
def mounted(dev: str, mount_dir: Path) -> Iterator[Path]:
    """A new ext4 file system on `dev` (everything on it is lost), mounted on `mount_dir`
    for the duration of the block, unmounted after it."""
    _run([*MKFS, dev], f"making a file system on {dev}", timeout=600)
    mount_dir.mkdir(parents=True, exist_ok=True)
    _run(["mount", "-t", "ext4", dev, str(mount_dir)], f"mounting {dev} on {mount_dir}", 60)
    try:
        yield mount_dir
    finally:
        try:
            _run(["umount", str(mount_dir)], f"unmounting {mount_dir}", timeout=600)
        except FileSystemError as e:
            print(f"{e}; unmount it by hand before the next calibration of {dev}",
                  file=sys.stderr)


def lay_out(directory: Path, names: list[str], size_bytes: int) -> list[str]:
    """Write the files in `names` that `directory` does not hold at `size_bytes` yet, one
    after another (each then lies in one piece, as a file written once and read since
    does), through fio in 1 MiB O_DIRECT writes. Returns the names written."""
    todo = [n for n in names if not _full(directory / n, size_bytes)]
    if not todo:
        return []
    jobs = ["[global]", f"directory={directory}", f"size={size_bytes}", "bs=1m", "rw=write",
            "direct=1", "ioengine=psync", "end_fsync=1"]
    for n in todo:
        jobs += [f"[{n}]", "stonewall", f"filename={n}"]
    with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as jf:
        jf.write("\n".join(jobs) + "\n")
    try:
        _run(["fio", "--output-format=terse", jf.name], f"laying out {', '.join(todo)} in "
             f"{directory}", timeout=max(600.0, size_bytes / 5e6 * len(todo)))
    finally:
        os.unlink(jf.name)
    return todo


def free_bytes(directory: Path) -> int:
    """What the file system at `directory` has free for files."""
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def _full(path: Path, size_bytes: int) -> bool:
    try:
        return path.stat().st_size >= size_bytes
    except OSError:
        return False
