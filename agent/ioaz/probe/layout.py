"""The map value layouts of bpf/ioaz.h, as Python sees them.

struct ioaz_dev (struct ioaz_dev_stats, then struct ioaz_cpu_state) is all __u64, so a value is
read as an array of u64 and cut into the named fields below, in the header's order. A test checks
the total against the size libbpf reports.
"""
from __future__ import annotations

DIRS = ("read", "write", "discard", "flush", "other")
N_DIRS = len(DIRS)
LAT_SLOTS = 48
SIZE_SLOTS = 32

# (field, number of u64) in struct ioaz_dev_stats order.
DEV_STATS_FIELDS: tuple[tuple[str, int], ...] = (
    ("completed", N_DIRS),
    ("completed_bytes", N_DIRS),
    ("bios", 1),
    ("bios_seq", 1),
    ("bio_merges", 1),
    ("rq_merges", 1),
    ("lat_sum_ns", 1),
    ("lat_untimed", 1),
    ("svc_count", 1),
    ("svc_sum_ns", 1),
    ("lat_hist", LAT_SLOTS),
    ("svc_hist", LAT_SLOTS),
    ("size_hist", SIZE_SLOTS),
)
DEV_STATS_U64 = sum(n for _, n in DEV_STATS_FIELDS)

# struct ioaz_cpu_state: per-CPU working state after the counters; never summed.
STREAM_HEADS = 64 * 2                 # IOAZ_STREAM_SETS * IOAZ_STREAM_WAYS
CPU_STATE_U64 = STREAM_HEADS + 3      # stream_end[], clock, proc_id, proc_pending
PROC_ID = DEV_STATS_U64 + STREAM_HEADS + 1      # u64 offsets within one CPU's value
PROC_PENDING = DEV_STATS_U64 + STREAM_HEADS + 2
DEV_VALUE_U64 = DEV_STATS_U64 + CPU_STATE_U64
DEV_VALUE_SIZE = 8 * DEV_VALUE_U64

PROC_KEY_SIZE = 16   # struct ioaz_proc_key {u32 dev; u32 tgid; u32 tid; u32 pad}
PROC_VAL_SIZE = 8    # struct ioaz_proc_val {u64 bios}, one per CPU (LRU_PERCPU_HASH)


def split_dev_stats(values: list[int]) -> dict[str, object]:
    """Cut a flat u64 list (already summed over CPUs) into the named fields."""
    out: dict[str, object] = {}
    i = 0
    for name, n in DEV_STATS_FIELDS:
        out[name] = values[i] if n == 1 else list(values[i:i + n])
        i += n
    return out


def dev_t_split(dev: int) -> tuple[int, int]:
    """Kernel dev_t (major << 20 | minor), as the tracepoints report it."""
    return dev >> 20, dev & 0xFFFFF
