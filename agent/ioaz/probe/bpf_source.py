"""The eBPF probe: loads bpf/build/ioaz.bpf.o through libbpf and reads its maps once a window."""
from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Iterable
from pathlib import Path

from . import libbpf
from .devices import disk_of_devt
from .layout import (
    DEV_STATS_SIZE,
    DEV_STATS_U64,
    PROC_KEY_SIZE,
    PROC_VAL_SIZE,
    dev_t_split,
    split_dev_stats,
)
from .snapshot import DeviceSnapshot, Snapshot


class ProbeUnavailable(RuntimeError):
    """The BPF probe cannot run here; the message says why (for the fallback warning)."""


def default_object_path() -> Path:
    """IOAZ_BPF_OBJECT, else the build tree next to the package, else the installed copy."""
    env = os.environ.get("IOAZ_BPF_OBJECT")
    if env:
        return Path(env)
    tree = Path(__file__).resolve().parents[3] / "bpf" / "build" / "ioaz.bpf.o"
    if tree.exists():
        return tree
    return Path("/usr/lib/ioaz/ioaz.bpf.o")


class _BtfVarSecinfo(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("offset", ctypes.c_uint32),
                ("size", ctypes.c_uint32)]


# rodata setting -> the tracepoint whose argument count it carries.
TRACEPOINT_ARGS = {
    "nargs_bio_queue": "block_bio_queue",
    "nargs_bio_merge": "block_bio_backmerge",
    "nargs_rq_issue": "block_rq_issue",
    "nargs_rq_merge": "block_rq_merge",
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


class BpfSource:
    """Cumulative per-device counters from the in-kernel probe."""

    name = "bpf"

    def __init__(self, object_path: Path | None = None, seq_tolerance_sectors: int = 64):
        self.object_path = Path(object_path) if object_path else default_object_path()
        self.seq_tolerance_sectors = seq_tolerance_sectors
        self._obj: int | None = None
        self._links: list[int] = []
        self._fds: dict[str, int] = {}
        self._ncpu = 0

    # -- life cycle: open -> set rodata -> load -> attach; close() undoes whatever was done --

    def open(self) -> BpfSource:
        if os.geteuid() != 0:
            raise ProbeUnavailable("not root: loading BPF needs CAP_BPF and CAP_PERFMON")
        if not os.path.exists("/sys/kernel/btf/vmlinux"):
            raise ProbeUnavailable("the kernel has no BTF (/sys/kernel/btf/vmlinux is missing)")
        if not self.object_path.exists():
            raise ProbeUnavailable(f"BPF object {self.object_path} not found (run `make bpf`)")
        try:
            L = libbpf.lib()
            nargs = tracepoint_nargs()
            ctypes.set_errno(0)
            self._obj = libbpf.check_ptr(
                L.bpf_object__open_file(str(self.object_path).encode(), None),
                f"open {self.object_path}")
            self._set_rodata({**nargs, "seq_tolerance_sectors": self.seq_tolerance_sectors})
            libbpf.check_int(L.bpf_object__load(self._obj), f"load {self.object_path}")
            prog = None
            while True:
                prog = L.bpf_object__next_program(self._obj, prog)
                if not prog:
                    break
                pname = L.bpf_program__name(prog).decode()
                ctypes.set_errno(0)
                self._links.append(libbpf.check_ptr(L.bpf_program__attach(prog),
                                                    f"attach {pname}"))
            for m in ("dev_stats", "procs"):
                mp = libbpf.check_ptr(L.bpf_object__find_map_by_name(self._obj, m.encode()),
                                      f"map {m}")
                self._fds[m] = L.bpf_map__fd(mp)
            vsize = L.bpf_map__value_size(
                L.bpf_object__find_map_by_name(self._obj, b"dev_stats"))
            if vsize != DEV_STATS_SIZE:
                raise ProbeUnavailable(f"dev_stats value is {vsize} bytes, layout.py expects "
                                       f"{DEV_STATS_SIZE}: bpf/ioaz.h and layout.py disagree")
            self._ncpu = libbpf.check_int(L.libbpf_num_possible_cpus(), "possible CPUs")
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
        for link in self._links:
            L.bpf_link__destroy(link)
        self._links.clear()
        L.bpf_object__close(self._obj)
        self._obj = None
        self._fds.clear()

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
            if L.bpf_obj_get_info_by_fd(L.bpf_program__fd(prog), info, ctypes.byref(size)) == 0:
                out[L.bpf_program__name(prog).decode()] = int.from_bytes(info.raw[4:8], "little")
        return out

    def __enter__(self) -> BpfSource:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _set_rodata(self, values: dict[str, int]) -> None:
        """Write `const volatile` globals into .rodata before load, found by the object's BTF."""
        L = libbpf.lib()
        L.bpf_object__btf.restype = ctypes.c_void_p
        L.bpf_object__btf.argtypes = [ctypes.c_void_p]
        L.btf__name_by_offset.restype = ctypes.c_char_p
        L.btf__name_by_offset.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        btf = libbpf.check_ptr(L.bpf_object__btf(self._obj), "object BTF")
        sec_id = L.btf__find_by_name_kind(btf, b".rodata", 15)  # BTF_KIND_DATASEC
        if sec_id < 0:
            raise ProbeUnavailable("the BPF object has no .rodata section in its BTF")
        sec = L.btf__type_by_id(btf, sec_id)
        vlen = sec.contents.info & 0xFFFF
        infos = ctypes.cast(ctypes.addressof(sec.contents) + ctypes.sizeof(sec.contents),
                            ctypes.POINTER(_BtfVarSecinfo))
        offsets: dict[str, tuple[int, int]] = {}
        for i in range(vlen):
            var = L.btf__type_by_id(btf, infos[i].type).contents
            offsets[L.btf__name_by_offset(btf, var.name_off).decode()] = (
                infos[i].offset, infos[i].size)
        rodata = None
        m = None
        while True:
            m = L.bpf_object__next_map(self._obj, m)
            if not m:
                break
            if L.bpf_map__name(m).decode().endswith(".rodata"):
                rodata = m
                break
        if rodata is None:
            raise ProbeUnavailable("the BPF object has no .rodata map")
        size = ctypes.c_size_t(0)
        base = libbpf.check_ptr(L.bpf_map__initial_value(rodata, ctypes.byref(size)),
                                ".rodata initial value")
        for name, value in values.items():
            if name not in offsets:
                raise ProbeUnavailable(f"the BPF object has no setting {name}")
            off, sz = offsets[name]
            ctypes.memmove(base + off, int(value).to_bytes(sz, "little"), sz)

    # -- reading --

    def _dump(self, fd: int, key_size: int, value_size: int) -> list[tuple[bytes, bytes]]:
        """All (key, value) pairs of a hash map, by batch lookup, by iteration if unsupported."""
        L = libbpf.lib()
        out: list[tuple[bytes, bytes]] = []
        chunk = 256
        keys = ctypes.create_string_buffer(key_size * chunk)
        vals = ctypes.create_string_buffer(value_size * chunk)
        in_tok = ctypes.c_uint64(0)
        out_tok = ctypes.c_uint64(0)
        first = True
        while True:
            count = ctypes.c_uint32(chunk)
            ret = L.bpf_map_lookup_batch(fd, None if first else ctypes.byref(in_tok),
                                         ctypes.byref(out_tok), keys, vals,
                                         ctypes.byref(count), None)
            if ret < 0 and -ret not in (2,):  # ENOENT ends the walk
                if first and -ret in (22, 95, 524):  # EINVAL/ENOTSUP/ENOTSUPP: old kernel
                    return self._dump_by_iteration(fd, key_size, value_size)
                raise libbpf.LibbpfError(-ret, f"batch lookup: {os.strerror(-ret)}")
            raw_k, raw_v = keys.raw, vals.raw
            for i in range(count.value):
                out.append((raw_k[i * key_size:(i + 1) * key_size],
                            raw_v[i * value_size:(i + 1) * value_size]))
            if ret < 0:
                return out
            in_tok.value = out_tok.value
            first = False

    def _dump_by_iteration(self, fd: int, key_size: int,
                           value_size: int) -> list[tuple[bytes, bytes]]:
        L = libbpf.lib()
        out = []
        key = ctypes.create_string_buffer(key_size)
        nxt = ctypes.create_string_buffer(key_size)
        val = ctypes.create_string_buffer(value_size)
        prev = None
        while L.bpf_map_get_next_key(fd, prev, nxt) == 0:
            if L.bpf_map_lookup_elem(fd, nxt, val) == 0:
                out.append((nxt.raw, val.raw))
            ctypes.memmove(key, nxt, key_size)
            prev = key
        return out

    def read(self) -> Snapshot:
        if self._obj is None:
            raise ProbeUnavailable("probe is not open")
        per_cpu = DEV_STATS_SIZE  # already a multiple of 8
        stats = self._dump(self._fds["dev_stats"], 4, per_cpu * self._ncpu)
        procs = self._dump(self._fds["procs"], PROC_KEY_SIZE, PROC_VAL_SIZE * self._ncpu)
        now = time.monotonic_ns()

        by_dev: dict[int, DeviceSnapshot] = {}
        for k, v in stats:
            dev = int.from_bytes(k, "little")
            flat = memoryview(v).cast("Q")
            summed = [0] * DEV_STATS_U64
            for cpu in range(self._ncpu):
                base = cpu * DEV_STATS_U64
                for i in range(DEV_STATS_U64):
                    summed[i] += flat[base + i]
            f = split_dev_stats(summed)
            major, minor = dev_t_split(dev)
            by_dev[dev] = DeviceSnapshot(name="", major=major, minor=minor, t_ns=now,
                                         source="bpf", procs={}, **f)  # type: ignore[arg-type]
        for k, v in procs:
            dev = int.from_bytes(k[0:4], "little")
            tgid = int.from_bytes(k[4:8], "little")
            bios = sum(memoryview(v).cast("Q"))  # one u64 per CPU
            snap = by_dev.get(dev)
            if snap is not None and snap.procs is not None:
                snap.procs[tgid] = bios
        return fold_partitions(by_dev.values())


def fold_partitions(snaps: Iterable[DeviceSnapshot]) -> Snapshot:
    """Name each snapshot by its whole disk and add partitions into their disk."""
    out: Snapshot = {}
    for s in snaps:
        disk = disk_of_devt(s.major, s.minor)
        if disk is None:
            continue  # the device is gone
        s.name = disk
        if disk in out:
            out[disk].add(s)
        else:
            out[disk] = s
    return out
