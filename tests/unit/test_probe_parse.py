"""BpfSource's parsing of the raw per-CPU map values (bpf/ioaz.h), without a kernel."""
from __future__ import annotations

import re
import struct
from pathlib import Path

from ioaz.probe.bpf_source import (
    bucket_shift,
    idle_processes,
    parse_maps,
    pending_processes,
)
from ioaz.probe.layout import (
    DEV_STATS_FIELDS,
    DEV_VALUE_U64,
    PROC_ID,
    PROC_PENDING,
    SIZE_MIN_LOG2,
    SIZE_SLOTS,
    size_slot,
    size_slot_le,
)

DEV = (7 << 20) | 3   # loop3
NCPU = 2


def offset(name: str) -> int:
    i = 0
    for n, size in DEV_STATS_FIELDS:
        if n == name:
            return i
        i += size
    raise KeyError(name)


def dev_value(per_cpu: list[dict[int, int]]) -> bytes:
    """One dev_stats value: for each CPU, {u64 index: value}."""
    words = [0] * (DEV_VALUE_U64 * len(per_cpu))
    for cpu, fields in enumerate(per_cpu):
        for i, v in fields.items():
            words[cpu * DEV_VALUE_U64 + i] = v
    return struct.pack(f"<{len(words)}Q", *words)


def proc_entry(tgid: int, per_cpu: list[int], tid: int | None = None) -> tuple[bytes, bytes]:
    key = struct.pack("<IIII", DEV, tgid, tgid if tid is None else tid, 0)
    return key, struct.pack(f"<{len(per_cpu)}Q", *per_cpu)


def pid_tgid(tgid: int, tid: int | None = None) -> int:
    """bpf_get_current_pid_tgid() of a thread (the main thread when tid is None)."""
    return tgid << 32 | (tgid if tid is None else tid)


def test_counters_are_summed_over_cpus_and_pending_bios_added_to_their_process():
    bios, seq = offset("bios"), offset("bios_seq")
    stats = [(struct.pack("<I", DEV), dev_value([
        {bios: 10, seq: 4, PROC_ID: pid_tgid(100), PROC_PENDING: 3},
        {bios: 5, seq: 1, PROC_ID: pid_tgid(200), PROC_PENDING: 2}]))]
    procs = [proc_entry(100, [4, 1]), proc_entry(300, [0, 7])]
    by_dev, seen = parse_maps(stats, procs, NCPU, 123, {})
    snap = by_dev[DEV]
    assert (snap.major, snap.minor, snap.t_ns) == (7, 3, 123)
    assert snap.bios == 15 and snap.bios_seq == 5
    # flushed (4 + 1) + pending 3; 200 only pending; 300 only flushed
    assert snap.procs == {100: 8, 200: 2, 300: 7}
    assert snap.threads == {100: 8, 200: 2, 300: 7}
    assert seen == {(DEV, 100, 100): 8, (DEV, 200, 200): 2, (DEV, 300, 300): 7}


def test_threads_are_counted_apart_and_added_up_for_their_process():
    stats = [(struct.pack("<I", DEV), dev_value([
        {PROC_ID: pid_tgid(100, 101), PROC_PENDING: 2},
        {PROC_ID: pid_tgid(100, 102), PROC_PENDING: 5}]))]
    procs = [proc_entry(100, [3, 0], tid=101), proc_entry(100, [0, 4], tid=103),
             proc_entry(200, [1, 0])]
    by_dev, _ = parse_maps(stats, procs, NCPU, 0, {})
    assert by_dev[DEV].threads == {101: 5, 102: 5, 103: 4, 200: 1}
    assert by_dev[DEV].procs == {100: 14, 200: 1}


def test_a_process_count_never_goes_back_and_gone_processes_are_forgotten():
    # Last read saw 200 with 9 bios (pending); this read caught the flush half-way: the map
    # still has the old count and the CPU has moved on to another process.
    stats = [(struct.pack("<I", DEV), dev_value([{PROC_ID: pid_tgid(100), PROC_PENDING: 1},
                                                 {}]))]
    procs = [proc_entry(200, [0, 0])]
    by_dev, seen = parse_maps(stats, procs, NCPU, 0,
                              {(DEV, 200, 200): 9, (DEV, 999, 999): 50})
    assert by_dev[DEV].procs == {100: 1, 200: 9}
    assert (DEV, 999, 999) not in seen


S = 10**9   # a second in ns


def test_a_process_leaves_only_when_every_thread_on_every_device_was_idle_long_enough():
    """Idle for 120 s: the whole process goes. One thread still counting, or one entry on
    another device (a partition) still counting, keeps every entry of its process."""
    other = DEV + 1
    changed: dict = {}
    first = {(DEV, 100, 100): 5, (DEV, 100, 101): 3, (DEV, 200, 200): 7, (other, 300, 300): 1,
             (DEV, 300, 300): 2}
    assert idle_processes({}, first, changed, set(), 0, 120 * S) == set()
    assert set(changed.values()) == {0}          # every entry is new: changed now
    # 60 s on, 100's second thread counted one more bio, and 300 on the other device
    mid = {**first, (DEV, 100, 101): 4, (other, 300, 300): 2}
    assert idle_processes(first, mid, changed, set(), 60 * S, 120 * S) == set()
    # 130 s: 200 has been idle since 0; 100 and 300 since 60 s
    assert idle_processes(mid, mid, changed, set(), 130 * S, 120 * S) == {200}
    # 185 s: everyone has been idle 120 s or more, but 300 has a bio pending on a CPU
    assert idle_processes(mid, mid, changed, {300}, 185 * S, 120 * S) == {100, 200}
    # an entry gone from the map (evicted, or retired) is forgotten
    gone = {k: v for k, v in mid.items() if k[1] != 200}
    idle_processes(mid, gone, changed, set(), 186 * S, 120 * S)
    assert not any(k[1] == 200 for k in changed)


def test_pending_processes_are_read_from_each_cpus_slot():
    stats = [(struct.pack("<I", DEV), dev_value([
        {PROC_ID: pid_tgid(100, 101), PROC_PENDING: 2},
        {PROC_ID: pid_tgid(200), PROC_PENDING: 0}]))]
    assert pending_processes(stats, NCPU) == {100}


def test_bucket_is_at_least_twice_the_tolerance():
    for tol in (1, 8, 63, 64, 65, 1000):
        assert (1 << bucket_shift(tol)) >= 2 * tol
        assert (1 << (bucket_shift(tol) - 1)) < 2 * tol or tol == 0


def test_size_slots_give_each_power_of_two_its_own_bucket() -> None:
    """A power of two's bucket is (2^k - 1, 2^k], so its quantiles read 2^k (16 KiB requests
    read 16 KiB, not the 24 KiB a log2 bucket's middle gave); every size is in the bucket whose
    `le` is the first at or above it; the rule's constants are bpf/ioaz.h's."""
    les = [size_slot_le(i) for i in range(SIZE_SLOTS)]
    assert les == sorted(les) and les[-1] == float("inf")
    for v in [*range(1, 70_000, 7), *(2**k + d for k in range(9, 30) for d in (-1, 0, 1))]:
        i = size_slot(v)
        assert v <= les[i] and (i == 0 or v > les[i - 1]), v
    for k in range(12, 22):
        assert les[size_slot(2**k)] == 2**k and les[size_slot(2**k) - 1] == 2**k - 1
    header = (Path(__file__).resolve().parents[2] / "bpf" / "ioaz.h").read_text()
    assert re.search(rf"#define IOAZ_SIZE_SLOTS\s+{SIZE_SLOTS}\b", header)
    assert re.search(rf"#define IOAZ_SIZE_MIN_LOG2\s+{SIZE_MIN_LOG2}\b", header)
