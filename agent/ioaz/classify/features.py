"""WindowFeatures: what one device did over one window, from two cumulative snapshots."""
from __future__ import annotations

from ..probe.layout import DIRS
from ..probe.snapshot import DeviceSnapshot
from .counters import delta, delta_list, log2_percentile
from .types import DEFAULT_PROCESS_SHARE, WindowFeatures

READ, WRITE, DISCARD = DIRS.index("read"), DIRS.index("write"), DIRS.index("discard")


def _ratio(num: float, den: float) -> float | None:
    return None if den <= 0 else max(0.0, min(1.0, num / den))


def process_bios(new: dict[int, int] | None, old: dict[int, int] | None) -> dict[int, int]:
    """Bios each process submitted in the window (those that submitted any)."""
    old = old or {}
    per = {t: delta(n, old.get(t, 0)) for t, n in (new or {}).items()}
    return {t: n for t, n in per.items() if n > 0}


def active_processes(new: dict[int, int] | None, old: dict[int, int] | None,
                     min_share: float) -> int | None:
    """Processes that submitted at least `min_share` of the window's bios.

    The share cut keeps a process that touched the device once (a shell, a monitoring agent,
    the flusher with one inode) from moving a workload into a higher IOAZ process class.
    """
    if new is None:
        return None
    return _active(process_bios(new, old), min_share)


def _active(per: dict[int, int], min_share: float) -> int:
    return len(pids_over_share(per, min_share))


def pids_over_share(per: dict[int, int], min_share: float) -> tuple[int, ...]:
    """The processes (pid -> bios in a window) that submitted at least min_share of them."""
    total = sum(per.values())
    return tuple(sorted(p for p, n in per.items() if total > 0 and n > 0
                        and n >= min_share * total))


def compute_features(old: DeviceSnapshot, new: DeviceSnapshot,
                     min_process_share: float = DEFAULT_PROCESS_SHARE) -> WindowFeatures:
    """The features of the window between two snapshots of the same device."""
    window_s = max((new.t_ns - old.t_ns) / 1e9, 1e-9)
    done = delta_list(new.completed, old.completed)
    done_bytes = delta_list(new.completed_bytes, old.completed_bytes)
    reads, writes = done[READ], done[WRITE]
    # Data requests only: flushes carry no data and fio does not count them either.
    data_reqs = reads + writes + done[DISCARD]
    rw_bytes = done_bytes[READ] + done_bytes[WRITE]

    seq_ratio = None
    bios = None
    if new.bios is not None and old.bios is not None:
        bios = delta(new.bios, old.bios)
        seq_ratio = _ratio(delta(new.bios_seq or 0, old.bios_seq or 0), bios)

    merges = delta(new.bio_merges, old.bio_merges) + delta(new.rq_merges, old.rq_merges)
    if bios is not None and not new.sampled:
        merge_ratio = _ratio(merges, bios)
    else:  # diskstats' counts: merged requests against requests that reached the device
        merge_ratio = _ratio(merges, merges + data_reqs)

    # Little's law, as iostat's aqu-sz: the time-averaged number of requests in flight is the
    # sum of their times in flight over the window's length.
    # The kernel's own time in queue when the source has it (diskstats, the sampled probe),
    # else the probe's latency sum (every request seen).
    if new.time_in_queue_ms is not None and old.time_in_queue_ms is not None:
        avg_depth = delta(new.time_in_queue_ms, old.time_in_queue_ms) / (window_s * 1000)
    elif new.source == "bpf":
        avg_depth = delta(new.lat_sum_ns, old.lat_sum_ns) / (window_s * 1e9)
    else:
        avg_depth = None
    # The reads alone, by the same law: their times in flight summed (diskstats' ms spent
    # reading, where the depth came from diskstats; the probe's, where from the probe).
    read_depth = None
    if avg_depth is not None and new.lat_read_ns is not None and old.lat_read_ns is not None:
        read_depth = min(avg_depth, delta(new.lat_read_ns, old.lat_read_ns) / (window_s * 1e9))

    # Requests in flight at both the window's ends (the fewer of the two counts): those an
    # elevator held through the window, which Little's law above counts only once they complete
    # (classify/held.py). Not a single instant's: a write-back burst at the window's end alone
    # is not a queue the window had.
    in_flight = None
    if old.in_flight is not None and new.in_flight is not None:
        in_flight = (min(old.in_flight[0], new.in_flight[0]),
                     min(old.in_flight[1], new.in_flight[1]))

    lat_hist = delta_list(new.lat_hist, old.lat_hist)
    size_hist = delta_list(new.size_hist, old.size_hist)
    # each map's per-window counts once: they give both the bios and the active count
    procs = process_bios(new.procs, old.procs)
    threads = process_bios(new.threads, old.threads)
    p50 = log2_percentile(lat_hist, 0.50)
    p99 = log2_percentile(lat_hist, 0.99)
    if p50 is None and data_reqs and new.source == "diskstats":
        # No distribution: the mean is the best we have for the median; no p99.
        p50 = delta(new.lat_sum_ns, old.lat_sum_ns) / max(sum(done), 1)

    return WindowFeatures(
        device=new.name,
        window_s=round(window_s, 6),
        iops=data_reqs / window_s,
        read_bytes_per_s=done_bytes[READ] / window_s,
        write_bytes_per_s=done_bytes[WRITE] / window_s,
        read_ratio=_ratio(reads, reads + writes),
        seq_ratio=seq_ratio,
        processes=None if new.procs is None else _active(procs, min_process_share),
        avg_depth=avg_depth,
        read_depth=read_depth,
        in_flight=in_flight,
        mean_size_bytes=(rw_bytes / (reads + writes)) if reads + writes else None,
        p50_latency_s=None if p50 is None else p50 / 1e9,
        p99_latency_s=None if p99 is None else p99 / 1e9,
        merge_ratio=merge_ratio,
        source=new.source,
        requests=data_reqs,
        latency_hist={i: n for i, n in enumerate(lat_hist) if n},
        size_hist={i: n for i, n in enumerate(size_hist) if n},
        process_bios=procs,
        threads=None if new.threads is None else _active(threads, min_process_share),
        thread_bios=threads,
        bios=bios,
        process_share=min_process_share,
    )
