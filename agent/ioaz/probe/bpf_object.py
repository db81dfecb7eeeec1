"""A CO-RE BPF object through libbpf: open, set its settings, load, attach, read maps, close.

The life cycle of libbpf-bootstrap, in Python over ctypes: open -> set `const volatile`
settings in .rodata -> load -> attach every program; close() undoes whatever was done, whatever
step failed. Used by the always-on probe (bpf_source.py) and the trace recorder (recorder.py).
"""
from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from ..home import BPF_BUILD
from . import libbpf

BUILD_DIR = BPF_BUILD
INSTALL_DIR = Path("/usr/lib/ioaz")


class ProbeUnavailable(RuntimeError):
    """BPF cannot run here; the message says why (for the fallback warning)."""


def object_path(name: str, env: str | None = None) -> Path:
    """$env if set, else the build tree next to the package, else the installed copy."""
    if env and os.environ.get(env):
        return Path(os.environ[env])
    tree = BUILD_DIR / name
    return tree if tree.exists() else INSTALL_DIR / name


class ProbeObject(Protocol):
    """What the sampler and the reader need of a loaded probe: BpfObject, or BccObject."""

    def attach(self, names: Iterable[str]) -> None: ...

    def detach(self, names: Iterable[str]) -> None: ...

    def set_global(self, name: str, value: int, index: int = 0) -> None: ...

    def map_fd(self, name: str) -> int: ...


class _BtfVarSecinfo(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("offset", ctypes.c_uint32),
                ("size", ctypes.c_uint32)]


# rodata setting -> the tracepoint whose argument count it carries (bpf/core_fixes.bpf.h).
TRACEPOINT_ARGS = {
    "nargs_bio_queue": "block_bio_queue",
    "nargs_bio_merge": "block_bio_backmerge",
    "nargs_rq_merge": "block_rq_merge",
    "nargs_getrq": "block_getrq",
}


def tracepoint_nargs() -> dict[str, int]:
    """Each tracepoint's argument count, read from its btf_trace_* prototype in the kernel BTF.

    Linux 5.11 dropped leading arguments from the block tracepoints; the BPF side takes the last
    argument, so it only needs the count (bcc's biolatency probes BTF the same way).
    """
    out = {}
    for setting, tp in TRACEPOINT_ARGS.items():
        n = libbpf.btf_func_proto_params(f"btf_trace_{tp}")
        if n is None:
            raise ProbeUnavailable(f"the kernel's BTF has no tracepoint {tp}")
        out[setting] = n - 1  # the first parameter is the tracepoint's context
    return out


class BpfObject:
    """One loaded and attached BPF object file."""

    def __init__(self, path: Path, settings: dict[str, int],
                 attach: Iterable[str] | None = None):
        """attach: the programs to attach at open (None: every one); attach() does the rest."""
        self.path = path
        self.settings = settings
        self.attach_at_open = None if attach is None else set(attach)
        self._obj: int | None = None
        self._progs: dict[str, int] = {}   # name -> struct bpf_program *
        self._links: dict[str, int] = {}   # name -> struct bpf_link *, while attached
        self._mmaps: list[mmap.mmap] = []
        self._globals: dict[str, tuple[mmap.mmap, int, int]] = {}  # name -> (mapping, off, size)

    def open(self) -> BpfObject:
        if os.geteuid() != 0:
            raise ProbeUnavailable("not root: loading BPF needs CAP_BPF and CAP_PERFMON")
        if not os.path.exists("/sys/kernel/btf/vmlinux"):
            raise ProbeUnavailable("the kernel has no BTF (/sys/kernel/btf/vmlinux is missing)")
        if not self.path.exists():
            raise ProbeUnavailable(f"BPF object {self.path} not found (run `make bpf`)")
        try:
            L = libbpf.lib()
            settings = {**tracepoint_nargs(), **self.settings}
            ctypes.set_errno(0)
            self._obj = libbpf.check_ptr(
                L.bpf_object__open_file(str(self.path).encode(), None), f"open {self.path}")
            self._set_rodata(settings)
            libbpf.check_int(L.bpf_object__load(self._obj), f"load {self.path}")
            prog = None
            while True:
                prog = L.bpf_object__next_program(self._obj, prog)
                if not prog:
                    break
                self._progs[L.bpf_program__name(prog).decode()] = prog
            self.attach(n for n in self._progs
                        if self.attach_at_open is None or n in self.attach_at_open)
        except libbpf.LibbpfError as e:
            self.close()
            raise ProbeUnavailable(str(e)) from e
        except ProbeUnavailable:
            self.close()
            raise
        return self

    def close(self) -> None:
        if self._obj is None:
            return
        L = libbpf.lib()
        self.detach(list(self._links))
        self._globals.clear()
        for mm in self._mmaps:
            mm.close()
        self._mmaps.clear()
        L.bpf_object__close(self._obj)
        self._obj = None
        self._progs.clear()

    def program_names(self) -> list[str]:
        return list(self._progs)

    def attach(self, names: Iterable[str]) -> None:
        """Attach these programs (those already attached stay as they are)."""
        L = libbpf.lib()
        for name in names:
            if name in self._links:
                continue
            if name not in self._progs:
                raise ProbeUnavailable(f"{self.path} has no program {name}")
            ctypes.set_errno(0)
            self._links[name] = libbpf.check_ptr(L.bpf_program__attach(self._progs[name]),
                                                 f"attach {name}")

    def detach(self, names: Iterable[str]) -> None:
        """Detach these programs; one not attached is left alone."""
        L = libbpf.lib()
        for name in list(names):
            link = self._links.pop(name, None)
            if link is not None:
                L.bpf_link__destroy(link)

    def attached(self) -> set[str]:
        return set(self._links)

    def set_global(self, name: str, value: int, index: int = 0) -> None:
        """Store a u64 into a global of the object's .data or .bss while it runs (of an array:
        element `index`), through the map's shared mapping: the programs see it at once."""
        if not self._globals:
            self._map_globals()
        if name not in self._globals:
            raise ProbeUnavailable(f"the BPF object has no global {name} in .data or .bss")
        mm, off, size = self._globals[name]
        if not 0 <= index < size // 8:
            raise IndexError(f"{name}[{index}]: it has {size // 8} elements")
        ctypes.c_uint64.from_buffer(mm, off + 8 * index).value = value

    def _map_globals(self) -> None:
        L = libbpf.lib()
        # A zero-initialised global lands in .bss, any other in .data.
        for section in (".data", ".bss"):
            try:
                m = self._internal_map(section)
            except ProbeUnavailable:
                continue
            size = int(L.bpf_map__value_size(m))
            # The kernel maps whole pages; libbpf makes its global-data maps mmapable.
            length = -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
            mm = mmap.mmap(int(L.bpf_map__fd(m)), length, mmap.MAP_SHARED,
                           mmap.PROT_READ | mmap.PROT_WRITE)
            self._mmaps.append(mm)
            for name, (off, sz) in self._section_vars(section).items():
                self._globals[name] = (mm, off, sz)

    def map(self, name: str) -> int:
        """The libbpf `struct bpf_map *` of a map by name."""
        if self._obj is None:
            raise ProbeUnavailable("BPF object is not open")
        return libbpf.check_ptr(libbpf.lib().bpf_object__find_map_by_name(
            self._obj, name.encode()), f"map {name}")

    def map_fd(self, name: str) -> int:
        return int(libbpf.lib().bpf_map__fd(self.map(name)))

    def value_size(self, name: str) -> int:
        return int(libbpf.lib().bpf_map__value_size(self.map(name)))

    def program_ids(self) -> dict[str, int]:
        """Kernel ids of the loaded programs (for `bpftool prog show id N`, run-time stats)."""
        L = libbpf.lib()
        out: dict[str, int] = {}
        prog = None
        while self._obj is not None:
            prog = L.bpf_object__next_program(self._obj, prog)
            if not prog:
                break
            info = ctypes.create_string_buffer(256)
            size = ctypes.c_uint32(8)  # struct bpf_prog_info: u32 type, u32 id, ...
            fd = L.bpf_program__fd(prog)
            if L.bpf_obj_get_info_by_fd(fd, info, ctypes.byref(size)) == 0:
                out[L.bpf_program__name(prog).decode()] = int.from_bytes(info.raw[4:8], "little")
        return out

    def _section_vars(self, section: str) -> dict[str, tuple[int, int]]:
        """name -> (offset, size) of the globals in a data section, from the object's BTF."""
        L = libbpf.lib()
        L.bpf_object__btf.restype = ctypes.c_void_p
        L.bpf_object__btf.argtypes = [ctypes.c_void_p]
        L.btf__name_by_offset.restype = ctypes.c_char_p
        L.btf__name_by_offset.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        btf = libbpf.check_ptr(L.bpf_object__btf(self._obj), "object BTF")
        sec_id = L.btf__find_by_name_kind(btf, section.encode(), 15)  # BTF_KIND_DATASEC
        if sec_id < 0:
            raise ProbeUnavailable(f"the BPF object has no {section} section in its BTF")
        sec = L.btf__type_by_id(btf, sec_id)
        vlen = sec.contents.info & 0xFFFF
        infos = ctypes.cast(ctypes.addressof(sec.contents) + ctypes.sizeof(sec.contents),
                            ctypes.POINTER(_BtfVarSecinfo))
        offsets: dict[str, tuple[int, int]] = {}
        for i in range(vlen):
            var = L.btf__type_by_id(btf, infos[i].type).contents
            offsets[L.btf__name_by_offset(btf, var.name_off).decode()] = (
                infos[i].offset, infos[i].size)
        return offsets

    def _internal_map(self, suffix: str) -> int:
        """libbpf names a global-data map after the object: "<obj>.rodata", "<obj>.data"."""
        L = libbpf.lib()
        m = None
        while True:
            m = L.bpf_object__next_map(self._obj, m)
            if not m:
                raise ProbeUnavailable(f"the BPF object has no {suffix} map")
            if L.bpf_map__name(m).decode().endswith(suffix):
                return int(m)

    def _set_rodata(self, values: dict[str, int]) -> None:
        """Write `const volatile` globals into .rodata before load, found by the object's BTF."""
        offsets = self._section_vars(".rodata")
        size = ctypes.c_size_t(0)
        base = libbpf.check_ptr(libbpf.lib().bpf_map__initial_value(
            self._internal_map(".rodata"), ctypes.byref(size)), ".rodata initial value")
        for name, value in values.items():
            if name not in offsets:
                raise ProbeUnavailable(f"the BPF object has no setting {name}")
            off, sz = offsets[name]
            ctypes.memmove(base + off, int(value).to_bytes(sz, "little"), sz)
