"""The BCC probe (bpf/ioaz_bcc.c), compiled at start by BCC against the running kernel's headers,
behind the same methods as BpfObject: for kernels with headers but no BTF.

BCC is used only to compile, load and attach. Its maps have the CO-RE object's layouts (bpf/ioaz.h)
and are read through their file descriptors as BpfSource reads the CO-RE object's, so both probes
share one reader and one sampler. BCC's Python module comes with Debian's python3-bpfcc; it is
imported here, at open, never at import time, so ioaz runs without it.
"""
from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..home import BPF_SOURCE
from . import libbpf
from .bpf_object import ProbeUnavailable

# Program name (as BpfObject's) -> (BCC's function name, the tracepoint, raw or classic).
PROGRAMS: dict[str, tuple[str, str, bool]] = {
    "on_bio_queue": ("tracepoint__block__block_bio_queue", "block:block_bio_queue", False),
    "on_bio_backmerge": ("tracepoint__block__block_bio_backmerge", "block:block_bio_backmerge",
                         False),
    "on_bio_frontmerge": ("tracepoint__block__block_bio_frontmerge",
                          "block:block_bio_frontmerge", False),
    "on_rq_merge": ("tracepoint__block__block_rq_merge", "block:block_rq_merge", False),
    "on_getrq": ("tracepoint__block__block_getrq", "block:block_getrq", False),
    "on_rq_complete": ("raw_tracepoint__block_rq_complete", "block_rq_complete", True),
}
# BpfObject's globals, as fields of the one-entry `ctl` map: name -> its elements.
CTL_FIELDS = {"counting": 1, "lat_from": 2, "lat_until": 2, "track_slots": 1, "track_made": 1}
# ioaz.bpf.c's initial values: every bio counted, every completion recorded.
CTL_DEFAULTS = {("counting", 0): 1, ("lat_until", 0): (1 << 64) - 1, ("track_made", 0): 1}
SOURCE_NAME = "ioaz_bcc.c"


def source_dir() -> Path:
    """bpf/ beside the package: the checkout's, or the installed tree's (home.py)."""
    return BPF_SOURCE


def headers_dir(release: str | None = None) -> Path:
    """Where BCC looks for the running kernel's headers."""
    return Path("/lib/modules") / (release or platform.release()) / "build"


def unavailable_reason() -> str | None:
    """Why the BCC probe cannot be tried here (None: it can, compiling may still fail)."""
    if not headers_dir().exists():
        return f"no kernel headers at {headers_dir()} (install linux-headers-{platform.release()})"
    if not (source_dir() / SOURCE_NAME).exists():
        return f"the BCC probe's source {source_dir() / SOURCE_NAME} is missing"
    try:
        import bcc  # noqa: F401
    except ImportError as e:
        return f"BCC's Python module is not importable from this Python ({e}; Debian: " \
               "python3-bpfcc)"
    return None


class BccObject:
    """bpf/ioaz_bcc.c compiled, loaded and attached by BCC."""

    def __init__(self, settings: dict[str, int], attach: Iterable[str] | None = None,
                 source: Path | None = None):
        """settings: seq_tolerance_sectors and seq_bucket_shift (macros of the source).
        attach: the programs to attach at open (None: every one); attach() does the rest."""
        self.path = source or source_dir() / SOURCE_NAME
        self.settings = settings
        self.attach_at_open = None if attach is None else set(attach)
        self._bpf: Any = None
        self._attached: set[str] = set()

    def open(self) -> BccObject:
        if os.geteuid() != 0:
            raise ProbeUnavailable("not root: loading BPF needs CAP_BPF and CAP_PERFMON")
        why = unavailable_reason()
        if why:
            raise ProbeUnavailable(why)
        from bcc import BPF
        cflags = [f"-I{self.path.parent}", "-Wno-unused-function",
                  *(f"-D{k}={int(v)}ULL" for k, v in self.settings.items())]
        try:
            # Every TRACEPOINT_PROBE and RAW_TRACEPOINT_PROBE is attached by BCC as it loads;
            # `ctl` is all zero then, which the programs take as paused.
            self._bpf = BPF(src_file=str(self.path).encode(), cflags=cflags)
            self._attached = set(PROGRAMS)
            for (field, index), value in CTL_DEFAULTS.items():
                self.set_global(field, value, index)
            self.detach(n for n in PROGRAMS
                        if self.attach_at_open is not None and n not in self.attach_at_open)
        except Exception as e:  # noqa: BLE001 - BCC raises Exception for everything
            self.close()
            raise ProbeUnavailable(f"BCC could not load {self.path}: {e}") from e
        return self

    def close(self) -> None:
        if self._bpf is None:
            return
        try:
            self._bpf.cleanup()   # detaches every program and closes the maps
        finally:
            self._bpf = None
            self._attached.clear()

    def program_names(self) -> list[str]:
        return list(PROGRAMS)

    def _need(self) -> Any:
        if self._bpf is None:
            raise ProbeUnavailable("BCC probe is not open")
        return self._bpf

    def attach(self, names: Iterable[str]) -> None:
        b = self._need()
        for name in names:
            if name in self._attached:
                continue
            if name not in PROGRAMS:
                raise ProbeUnavailable(f"{self.path} has no program {name}")
            fn, tp, raw = PROGRAMS[name]
            try:
                if raw:
                    b.attach_raw_tracepoint(tp=tp.encode(), fn_name=fn.encode())
                else:
                    b.attach_tracepoint(tp=tp.encode(), fn_name=fn.encode())
            except Exception as e:  # noqa: BLE001
                raise ProbeUnavailable(f"attach {name} ({tp}): {e}") from e
            self._attached.add(name)

    def detach(self, names: Iterable[str]) -> None:
        b = self._need()
        for name in list(names):
            if name not in self._attached:
                continue
            _, tp, raw = PROGRAMS[name]
            if raw:
                b.detach_raw_tracepoint(tp=tp.encode())
            else:
                b.detach_tracepoint(tp=tp.encode())
            self._attached.discard(name)

    def attached(self) -> set[str]:
        return set(self._attached)

    def set_global(self, name: str, value: int, index: int = 0) -> None:
        """Store a u64 into the `ctl` field that stands for ioaz.bpf.c's global `name` (of an
        array: element `index`). Only the sampler's thread writes `ctl` once the probe runs."""
        if name not in CTL_FIELDS:
            raise ProbeUnavailable(f"the BCC probe has no global {name}")
        if not 0 <= index < CTL_FIELDS[name]:
            raise IndexError(f"{name}[{index}]: it has {CTL_FIELDS[name]} elements")
        table = self._need()["ctl"]
        key = table.Key(0)
        leaf = table[key]
        field = getattr(leaf, name)
        if CTL_FIELDS[name] == 1:
            setattr(leaf, name, value)
        else:
            field[index] = value
        table[key] = leaf

    def map_fd(self, name: str) -> int:
        try:
            return int(self._need()[name].map_fd)
        except KeyError as e:
            raise ProbeUnavailable(f"the BCC probe has no map {name}") from e

    def value_size(self, name: str) -> int:
        """The map's value size as the kernel has it (of one CPU's copy)."""
        return _info_u32(self.map_fd(name), 12, f"map {name}")  # bpf_map_info.value_size

    def program_ids(self) -> dict[str, int]:
        """Kernel ids of the loaded programs (for `bpftool prog show id N`, run-time stats)."""
        b = self._need()
        out: dict[str, int] = {}
        for name, (fn, _, _) in PROGRAMS.items():
            func = b.funcs.get(fn.encode())
            if func is not None:
                out[name] = _info_u32(func.fd, 4, f"program {name}")  # bpf_prog_info.id
        return out


def _info_u32(fd: int, offset: int, what: str) -> int:
    """A u32 of the bpf_*_info the kernel gives for a BPF file descriptor."""
    info = ctypes.create_string_buffer(64)
    size = ctypes.c_uint32(64)
    libbpf.check_int(libbpf.lib().bpf_obj_get_info_by_fd(fd, info, ctypes.byref(size)),
                     f"info of {what}")
    return int.from_bytes(info.raw[offset:offset + 4], "little")
