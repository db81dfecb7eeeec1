"""The few libbpf.so.1 calls ioaz needs, through ctypes (no compiler, no per-event callbacks).

libbpf >= 1.0 semantics: pointer-returning calls give NULL and set errno; int-returning calls
give a negative errno.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

c_void_p = ctypes.c_void_p


class LibbpfError(OSError):
    """A libbpf call failed; carries the errno and what was being done."""


class _BtfType(ctypes.Structure):
    _fields_ = [("name_off", ctypes.c_uint32), ("info", ctypes.c_uint32),
                ("size_or_type", ctypes.c_uint32)]


BTF_KIND_PTR = 2
BTF_KIND_TYPEDEF = 8
BTF_KIND_FUNC_PROTO = 13


def _load() -> ctypes.CDLL:
    for name in ("libbpf.so.1", ctypes.util.find_library("bpf")):
        if not name:
            continue
        try:
            return ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
    raise LibbpfError(0, "libbpf.so.1 not found (Debian: apt-get install libbpf1)")


_lib: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    """The library with argument types declared, loaded on first use."""
    global _lib
    if _lib is not None:
        return _lib
    L = _load()
    sig = {
        "bpf_object__open_file": (c_void_p, [ctypes.c_char_p, c_void_p]),
        "bpf_object__load": (ctypes.c_int, [c_void_p]),
        "bpf_object__close": (None, [c_void_p]),
        "bpf_object__next_map": (c_void_p, [c_void_p, c_void_p]),
        "bpf_object__next_program": (c_void_p, [c_void_p, c_void_p]),
        "bpf_object__find_map_by_name": (c_void_p, [c_void_p, ctypes.c_char_p]),
        "bpf_map__name": (ctypes.c_char_p, [c_void_p]),
        "bpf_map__fd": (ctypes.c_int, [c_void_p]),
        "bpf_map__value_size": (ctypes.c_uint32, [c_void_p]),
        "bpf_map__key_size": (ctypes.c_uint32, [c_void_p]),
        "bpf_map__initial_value": (c_void_p, [c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
        "bpf_program__name": (ctypes.c_char_p, [c_void_p]),
        "bpf_program__attach": (c_void_p, [c_void_p]),
        "bpf_program__fd": (ctypes.c_int, [c_void_p]),
        "bpf_obj_get_info_by_fd": (ctypes.c_int, [ctypes.c_int, c_void_p,
                                                  ctypes.POINTER(ctypes.c_uint32)]),
        "bpf_link__destroy": (ctypes.c_int, [c_void_p]),
        "bpf_map_get_next_key": (ctypes.c_int, [ctypes.c_int, c_void_p, c_void_p]),
        "bpf_map_lookup_elem": (ctypes.c_int, [ctypes.c_int, c_void_p, c_void_p]),
        "bpf_map_update_elem": (ctypes.c_int, [ctypes.c_int, c_void_p, c_void_p,
                                               ctypes.c_uint64]),
        "bpf_map_delete_elem": (ctypes.c_int, [ctypes.c_int, c_void_p]),
        "bpf_map_lookup_batch": (ctypes.c_int, [ctypes.c_int, c_void_p, c_void_p, c_void_p,
                                                c_void_p, ctypes.POINTER(ctypes.c_uint32),
                                                c_void_p]),
        "libbpf_num_possible_cpus": (ctypes.c_int, []),
        "btf__load_vmlinux_btf": (c_void_p, []),
        "btf__free": (None, [c_void_p]),
        "btf__find_by_name_kind": (ctypes.c_int32, [c_void_p, ctypes.c_char_p, ctypes.c_uint32]),
        "btf__type_by_id": (ctypes.POINTER(_BtfType), [c_void_p, ctypes.c_uint32]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(L, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = L
    return L


def check_ptr(ptr: int | None, what: str) -> int:
    if not ptr:
        err = ctypes.get_errno()
        raise LibbpfError(err, f"{what}: {os.strerror(err) if err else 'failed'}")
    return ptr


def check_int(ret: int, what: str) -> int:
    if ret < 0:
        raise LibbpfError(-ret, f"{what}: {os.strerror(-ret)}")
    return ret


def btf_func_proto_params(typedef_name: str) -> int | None:
    """Number of parameters of the function-pointer typedef `typedef_name` in the kernel's BTF.

    For `btf_trace_<tracepoint>` typedefs the first parameter is the tracepoint's `void *`
    context, so the tracepoint's own arguments are this count minus one. None when the kernel
    has no such typedef (or no BTF).
    """
    L = lib()
    btf = L.btf__load_vmlinux_btf()
    if not btf:
        return None
    try:
        tid = L.btf__find_by_name_kind(btf, typedef_name.encode(), BTF_KIND_TYPEDEF)
        if tid < 0:
            return None
        for _ in range(4):  # typedef -> pointer -> func_proto
            t = L.btf__type_by_id(btf, tid).contents
            kind = (t.info >> 24) & 0x1F
            if kind == BTF_KIND_FUNC_PROTO:
                return t.info & 0xFFFF
            if kind not in (BTF_KIND_TYPEDEF, BTF_KIND_PTR):
                return None
            tid = t.size_or_type
        return None
    finally:
        L.btf__free(btf)
