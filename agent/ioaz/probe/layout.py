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

# Request sizes are mostly powers of two (4 KiB, 16 KiB, 128 KiB ...), and a log2 bucket
# [2^k, 2^(k+1)) read back by Prometheus's histogram_quantile, which interpolates inside a
# bucket, puts 16 KiB requests at 24 KiB. So each power of two has a slot of its own:
#   slot 0            v <= 512 bytes
#   slot 2(k-9) + 1   2^k < v < 2^(k+1)     (k = 9 .. 23)
#   slot 2(k-9)       v == 2^k              (k = 10 .. 24)
#   slot 31           v > 16 MiB
# A power of two's bucket is then (2^k - 1, 2^k]: its quantiles read 2^k. bpf/ioaz.bpf.c's
# size_slot() is the same rule.
SIZE_MIN_LOG2 = 9


def size_slot(nbytes: int) -> int:
    """The size histogram's slot of a request of nbytes (> 0)."""
    k = nbytes.bit_length() - 1
    if k < SIZE_MIN_LOG2:
        return 0
    slot = 2 * (k - SIZE_MIN_LOG2) + (nbytes & (nbytes - 1) != 0)
    return min(slot, SIZE_SLOTS - 1)


def size_slot_le(slot: int) -> float:
    """The largest size slot `slot` holds (inf for the last): the bucket's `le`."""
    if slot >= SIZE_SLOTS - 1:
        return float("inf")
    k = SIZE_MIN_LOG2 + (slot + 1) // 2
    return float(2 ** k if slot % 2 == 0 else 2 ** k - 1)

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
    ("lat_read_ns", 1),
    ("svc_count", 1),
    ("svc_sum_ns", 1),
    ("in_flight", 2),
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
