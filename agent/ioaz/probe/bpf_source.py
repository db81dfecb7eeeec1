"""The eBPF probe: loads bpf/build/ioaz.bpf.o through libbpf (or, on a kernel without BTF,
bpf/ioaz_bcc.c through BCC) and reads its maps once a window."""
from __future__ import annotations

import ctypes
import errno
import operator
import os
import struct
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from ..sysblock import BlockSysfs
from . import libbpf
from .bcc_object import BccObject
from .bpf_object import BpfObject, ProbeUnavailable, object_path, tracepoint_nargs
from .diskstats_source import parse_diskstats
from .in_flight import InFlight
from .layout import (
    DEV_STATS_U64,
    DEV_VALUE_SIZE,
    DEV_VALUE_U64,
    PROC_ID,
    PROC_KEY_SIZE,
    PROC_PENDING,
    PROC_VAL_SIZE,
    dev_t_split,
    split_dev_stats,
)
from .sampler import SamplePlan, Sampler, completed_requests
from .snapshot import DeviceSnapshot, Snapshot

__all__ = ["BpfSource", "ProbeUnavailable", "default_object_path", "tracepoint_nargs"]


def default_object_path() -> Path:
    """IOAZ_BPF_OBJECT, else the build tree next to the package, else the installed copy."""
    return object_path("ioaz.bpf.o", env="IOAZ_BPF_OBJECT")


def bucket_shift(tolerance: int) -> int:
    """log2 of the stream-table bucket width: at least 2 * tolerance sectors (ioaz.bpf.c)."""
    return max(1, (2 * tolerance - 1).bit_length())


# Unsampled, every program is attached the whole time.
ALWAYS_ON = ("on_bio_queue", "on_getrq", "on_bio_backmerge", "on_bio_frontmerge", "on_rq_merge",
             "on_rq_complete")


# A process none of whose threads submitted a bio for this long leaves the `procs` map (see
# idle_processes). Without it the map holds every thread that ever did I/O, up to its 8,192
# entries, and each read parses them all: on a machine that starts processes all day (the
# soak: about one new fio thread a second) memory and the window's CPU grow for hours. Two
# minutes is far beyond any span the daemon compares (one window) or the class's process
# horizon (a few seconds), so a snapshot still counts every process that submitted since the
# read before it.
RETIRE_IDLE_S = 120.0
# A map is read in batches of at most this many bytes of values (and at most 256 entries).
DUMP_BYTES = 64 << 10


class BpfSource:
    """Cumulative per-device counters from the in-kernel probe."""

    def __init__(self, object_path: Path | None = None, seq_tolerance_sectors: int = 0,
                 sample: SamplePlan | None = None, diskstats_path: str = "/proc/diskstats",
                 sysfs: BlockSysfs | None = None, loader: str = "libbpf",
                 retire_idle_s: float = RETIRE_IDLE_S):
        """sample: attach the bio-side programs for part of each period only (sampler.py);
        None or fraction 1: every request seen, every count from the probe.
        loader: "libbpf" (the CO-RE object, needs BTF) or "bcc" (compiled here from the
        source, needs the kernel's headers); the source is named "bpf" or "bcc" after it."""
        if not 0 <= seq_tolerance_sectors <= 1 << 20:
            raise ValueError(f"seq_tolerance_sectors {seq_tolerance_sectors}: 0..{1 << 20}")
        self.plan = sample if sample is not None and sample.sampled else None
        self.diskstats_path = diskstats_path
        self.sysfs = sysfs or BlockSysfs()
        settings = {"seq_tolerance_sectors": seq_tolerance_sectors,
                    "seq_bucket_shift": bucket_shift(seq_tolerance_sectors)}
        attach = ["on_rq_complete"] if self.plan else ALWAYS_ON
        self.obj: BpfObject | BccObject
        if loader == "bcc":
            self.name = "bcc"
            self.obj = BccObject(settings, attach=attach)
        elif loader == "libbpf":
            self.name = "bpf"
            self.object_path = Path(object_path) if object_path else default_object_path()
            self.obj = BpfObject(self.object_path, settings, attach=attach)
        else:
            raise ValueError(f"loader {loader!r}: expected libbpf or bcc")
        # Sampled, the merge programs are never attached: diskstats counts merges exactly.
        self.sampler: Sampler | None = None
        self._fds: dict[str, int] = {}
        self._ncpu = 0
        # (dev, tgid, tid) -> the highest count returned: see read().
        self._proc_seen: dict[tuple[int, int, int], int] = {}
        # (dev, tgid, tid) -> when its count last changed (monotonic ns)
        self._proc_changed: dict[tuple[int, int, int], int] = {}
        self.retire_idle_ns = int(retire_idle_s * 1e9)
        self._bufs: dict[int, tuple[Any, Any, int]] = {}   # map fd -> its batch buffers
        self.in_flight = InFlight()
        # Odd while the programs count every request; each suspend() and resume() moves it on,
        # as the programs missed what came between (in_flight.py).
        self._attached_epoch = 1

    def open(self) -> BpfSource:
        if self.plan:
            # The exact counts come from here: fail now, not at the first read.
            with open(self.diskstats_path):
                pass
        self.obj.open()
        try:
            if self.plan:
                self.sampler = Sampler(self.obj, self.plan, requests=lambda: completed_requests(
                    self.diskstats_path, self.sysfs)).start()
            vsize = self.obj.value_size("dev_stats")
            if vsize != DEV_VALUE_SIZE:
                raise ProbeUnavailable(f"dev_stats value is {vsize} bytes, layout.py expects "
                                       f"{DEV_VALUE_SIZE}: bpf/ioaz.h and layout.py disagree")
            self._fds = {m: self.obj.map_fd(m) for m in ("dev_stats", "procs")}
            self._ncpu = libbpf.check_int(libbpf.lib().libbpf_num_possible_cpus(),
                                          "possible CPUs")
        except (libbpf.LibbpfError, ProbeUnavailable) as e:
            self.close()
            raise ProbeUnavailable(str(e)) from e
        return self

    def close(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler = None
        self.obj.close()
        self._bufs.clear()   # a map opened again may get another fd
        self._fds.clear()

    def suspend(self) -> None:
        """Detach every program (the maps stay): the probe costs nothing until resume().
        For measuring what it costs (ioaz-lab bench probe)."""
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler = None
        self.obj.detach(self.obj.program_names())
        self._attached_epoch += 1

    def resume(self) -> None:
        """Attach again as open() did."""
        if self.plan:
            self.obj.attach(["on_rq_complete"])
            self.sampler = Sampler(self.obj, self.plan, requests=lambda: completed_requests(
                    self.diskstats_path, self.sysfs)).start()
        else:
            self.obj.attach(ALWAYS_ON)
        self._attached_epoch += 1

    def made_epoch(self) -> tuple[int, ...] | None:
        """The epoch of the in-flight counting (in_flight.py), None while it is off: changed
        whenever it stopped or started."""
        if self._attached_epoch % 2 == 0:
            return None
        key: tuple[int, ...] = (self._attached_epoch,)
        if self.sampler is not None:
            if self.sampler.made_epoch % 2 == 0:
                return None
            key += (self.sampler.made_epoch,)
        return key

    def program_ids(self) -> dict[str, int]:
        return self.obj.program_ids()

    def __enter__(self) -> BpfSource:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading --

    def _buffers(self, fd: int, key_size: int, value_size: int) -> tuple[Any, Any, int]:
        """The batch buffers of a map, made at its first read and kept: a window's dump must
        not zero-fill and copy a megabyte (dev_stats' per-CPU values are 2 KiB a CPU), which
        under an emulated CPU is a measurable part of the window."""
        bufs = self._bufs.get(fd)
        if bufs is None:
            chunk = max(1, min(256, DUMP_BYTES // value_size))
            bufs = self._bufs[fd] = (ctypes.create_string_buffer(key_size * chunk),
                                     ctypes.create_string_buffer(value_size * chunk), chunk)
        return bufs

    def _dump(self, fd: int, key_size: int, value_size: int) -> list[tuple[bytes, bytes]]:
        """All (key, value) pairs of a hash map, by batch lookup, by iteration if unsupported."""
        L = libbpf.lib()
        out: list[tuple[bytes, bytes]] = []
        keys, vals, chunk = self._buffers(fd, key_size, value_size)
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
            # only what the kernel filled: .raw would copy the whole buffer
            raw_k = ctypes.string_at(keys, count.value * key_size)
            raw_v = ctypes.string_at(vals, count.value * value_size)
            for i in range(count.value):
                out.append((raw_k[i * key_size:(i + 1) * key_size],
                            raw_v[i * value_size:(i + 1) * value_size]))
            if ret < 0:
                return out
            in_tok.value = out_tok.value
            first = False

    @property
    def threads_held(self) -> int:
        """The (device, thread) counts the reader holds, as many as the kernel's map has."""
        return len(self._proc_seen)

    def _retire(self, tgids: set[int]) -> None:
        """Delete every `procs` entry of these processes. An entry already gone (the LRU
        evicted it) is no error."""
        L = libbpf.lib()
        fd = self._fds["procs"]
        for key in [k for k in self._proc_seen if k[1] in tgids]:
            raw = struct.pack("<IIII", *key, 0)   # struct ioaz_proc_key, its pad last
            ret = L.bpf_map_delete_elem(fd, raw)
            if ret < 0 and -ret != errno.ENOENT:
                raise libbpf.LibbpfError(-ret, f"delete from procs: {os.strerror(-ret)}")
            del self._proc_seen[key]
            self._proc_changed.pop(key, None)

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

    def read(self, names: Collection[str] | None = None) -> Snapshot:
        if not self._fds:
            raise ProbeUnavailable("probe is not open")
        # procs before dev_stats: a process's count is its flushed bios (procs) plus the bios
        # still pending on a CPU (dev_stats). A flush between the two reads then makes this
        # read short, never double; parse_maps keeps every count from going back.
        # The kernel's counts before the maps: it counts a completion after the tracepoint the
        # probe counts it at, so read first they can only run behind the probe's. Read after,
        # a request completing between the two reads counted as a miss, and took the count in
        # flight down, so it read high for the next minute (in_flight.py).
        try:
            with open(self.diskstats_path) as f:
                kernel_text: str | None = f.read()
        except OSError:
            if self.plan is not None:
                raise
            kernel_text = None   # unsampled, the counts need it not; the requests in flight do
        epoch = self.made_epoch()
        procs = self._dump(self._fds["procs"], PROC_KEY_SIZE, PROC_VAL_SIZE * self._ncpu)
        stats = self._dump(self._fds["dev_stats"], 4, DEV_VALUE_SIZE * self._ncpu)
        t_ns = time.monotonic_ns()
        if self.made_epoch() != epoch:
            epoch = None   # the counting started or stopped while the maps were read
        before = self._proc_seen
        by_dev, self._proc_seen = parse_maps(stats, procs, self._ncpu, t_ns, before)
        # after this read's snapshot is built: it still holds them, the next one will not
        idle = idle_processes(before, self._proc_seen, self._proc_changed,
                              pending_processes(stats, self._ncpu), t_ns, self.retire_idle_ns)
        if idle:
            self._retire(idle)
        snap = fold_partitions(by_dev.values(), self.sysfs)
        if names is None:
            wanted = set(self.sysfs.devices()) | set(snap)   # every whole disk
        else:
            wanted = set(names)   # the window's disks: the others' counts would be dropped
        exact = None if kernel_text is None else parse_diskstats(kernel_text, t_ns,
                                                                 wanted | set(snap))
        # Sampled, the probe's completion counts leave out the requests started between two
        # periods, which it still took off the count in flight: set against the kernel's,
        # they read as misses, and took the count down by 5 in 10 s (hundred-and-twenty-second
        # run). So only the unsampled probe's are.
        self.in_flight.count(snap, epoch, exact if self.plan is None else None)
        if self.plan is None or exact is None:   # sampled, exact was read or this raised
            return snap
        if names is not None:
            snap = {n: s for n, s in snap.items() if n in wanted}
        return with_exact_counts(snap, exact, wanted)


ProcSeen = dict[tuple[int, int, int], int]


def parse_maps(stats: list[tuple[bytes, bytes]], procs: list[tuple[bytes, bytes]], ncpu: int,
               now_ns: int, proc_seen: ProcSeen) -> tuple[dict[int, DeviceSnapshot], ProcSeen]:
    """Snapshots by dev_t from raw dev_stats and procs entries (per-CPU values).

    Counters are summed over CPUs; a CPU's pending bios (proc_id = tgid << 32 | tid,
    proc_pending) are added to that thread's count from `procs`. Each snapshot gets the bios
    per thread (`threads`) and per process (`procs`, the sum of its threads). `proc_seen` holds
    the counts returned last time: a count never goes back (a flush between the two map reads
    makes one read short). The returned map holds only what is still there, so it does not
    grow with every thread ever seen.
    """
    by_dev: dict[int, DeviceSnapshot] = {}
    counts: dict[int, dict[tuple[int, int], int]] = {}   # dev -> (tgid, tid) -> bios
    for k, v in stats:
        dev = int.from_bytes(k, "little")
        flat = memoryview(v).cast("Q")
        # the fields summed over CPUs a CPU at a time (map runs the adds in C), not one u64
        # at a time: this runs for every device every window
        summed = flat[:DEV_STATS_U64].tolist()
        for b in range(DEV_VALUE_U64, ncpu * DEV_VALUE_U64, DEV_VALUE_U64):
            summed = list(map(operator.add, summed, flat[b:b + DEV_STATS_U64]))
        pending = counts.setdefault(dev, {})
        for cpu in range(ncpu):
            base = cpu * DEV_VALUE_U64
            n = flat[base + PROC_PENDING]
            if n:
                pid_tgid = flat[base + PROC_ID]
                key = (pid_tgid >> 32, pid_tgid & 0xFFFFFFFF)
                pending[key] = pending.get(key, 0) + n
        f = split_dev_stats(summed)
        major, minor = dev_t_split(dev)
        by_dev[dev] = DeviceSnapshot(name="", major=major, minor=minor, t_ns=now_ns,
                                     source="bpf", procs={}, threads={},
                                     **f)  # type: ignore[arg-type]
    for k, v in procs:
        dev = int.from_bytes(k[0:4], "little")
        key = (int.from_bytes(k[4:8], "little"), int.from_bytes(k[8:12], "little"))
        per = counts.setdefault(dev, {})
        per[key] = per.get(key, 0) + sum(memoryview(v).cast("Q"))  # u64 per CPU
    seen: ProcSeen = {}
    for dev, per in counts.items():
        snap = by_dev.get(dev)
        if snap is None or snap.procs is None or snap.threads is None:
            continue
        for (tgid, tid), n in per.items():
            n = max(n, proc_seen.get((dev, tgid, tid), 0))
            seen[(dev, tgid, tid)] = n
            snap.threads[tid] = snap.threads.get(tid, 0) + n
            snap.procs[tgid] = snap.procs.get(tgid, 0) + n
    return by_dev, seen


def pending_processes(stats: list[tuple[bytes, bytes]], ncpu: int) -> set[int]:
    """Processes with bios still pending on a CPU (dev_stats' proc_id, not yet in `procs`)."""
    out: set[int] = set()
    for _, v in stats:
        flat = memoryview(v).cast("Q")
        for cpu in range(ncpu):
            base = cpu * DEV_VALUE_U64
            if flat[base + PROC_PENDING]:
                out.add(flat[base + PROC_ID] >> 32)
    return out


def idle_processes(before: ProcSeen, now: ProcSeen, changed_ns: dict[tuple[int, int, int], int],
                   pending: set[int], now_ns: int, idle_ns: int) -> set[int]:
    """The processes whose `procs` entries can go: none of their threads, on any device,
    submitted a bio for `idle_ns`, and none has bios pending. Updates `changed_ns` (when each
    entry's count last changed; a new entry counts as changed now).

    Whole processes, never single threads, and over every device at once: a snapshot's
    per-process count is the sum of its threads' (and a disk's of its partitions'), and a part
    dropped from that sum would make it go back, which the window's delta reads as a counter
    reset. A pending bio would be flushed into a deleted entry and come back as a new count."""
    for key in [k for k in changed_ns if k not in now]:
        del changed_ns[key]       # evicted by the LRU, or retired
    busy: set[int] = set(pending)
    for key, n in now.items():
        if before.get(key) != n or key not in changed_ns:
            changed_ns[key] = now_ns
        if now_ns - changed_ns[key] < idle_ns:
            busy.add(key[1])
    return {tgid for (_, tgid, _) in now} - busy


def with_exact_counts(sampled: Snapshot, exact: Snapshot, wanted: set[str]) -> Snapshot:
    """The sampled probe's view with the counts replaced by the kernel's exact ones.

    Every disk of `wanted` or of the probe that /proc/diskstats has gets a snapshot: a disk the
    probe has not sampled yet still has its counts. Requests and bytes by direction, merges and
    the time in queue and the reads' part of it (for the average depth) come from diskstats,
    the rest stays the sample's.
    """
    out: Snapshot = {}
    for name in wanted | set(sampled):
        disk = exact.get(name)
        if disk is None:
            continue  # gone, or not a whole disk
        s = sampled.get(name)
        if s is None:
            s = DeviceSnapshot(name=name, major=disk.major, minor=disk.minor, t_ns=disk.t_ns,
                               source="bpf", bios=0, bios_seq=0, procs={}, threads={})
        s.hist_bytes = sum(s.completed_bytes)  # of the sampled requests, before replacing
        s.completed = list(disk.completed)
        s.completed_bytes = list(disk.completed_bytes)
        s.time_in_queue_ms = disk.time_in_queue_ms
        s.lat_read_ns = disk.lat_read_ns   # the reads' share of that time, by the same clock
        s.bio_merges, s.rq_merges = disk.bio_merges, disk.rq_merges
        s.sampled = True
        out[name] = s
    return out


def fold_partitions(snaps: Iterable[DeviceSnapshot], sysfs: BlockSysfs) -> Snapshot:
    """Name each snapshot by its whole disk and add partitions into their disk."""
    out: Snapshot = {}
    for s in snaps:
        disk = sysfs.disk_of_devt(s.major, s.minor)
        if disk is None:
            continue  # the device is gone
        s.name = disk
        if disk in out:
            out[disk].add(s)
        else:
            out[disk] = s
    return out
