"""The Prometheus collector: every family is built on each scrape from the daemon's state.

No global gauges: the daemon stays the one source of truth and a scrape sees one consistent
moment of it (everything is read under `daemon.lock`). Names follow DESIGN.md: `ioaz_*`, base
units (seconds, bytes), counters end in `_total`, ratios 0..1, label `device`.

The BPF probe keeps cumulative log2 latency histograms: bucket i counts values v with
2^i <= v < 2^(i+1) nanoseconds. Values are whole numbers, so that is exactly v <= 2^(i+1) - 1,
which is the `le` we export: the Prometheus histogram is exact, not an approximation of the BPF
one. Request sizes have a bucket of their own for each power of two (probe/layout.py
size_slot), exported the same way, exactly.
"""
from __future__ import annotations

import logging
import platform
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from .. import __version__
from ..probe.layout import size_slot, size_slot_le

log = logging.getLogger("ioaz.metrics")

MODES = ("auto", "pinned", "manual", "paused")
SOURCES = ("bpf", "bcc", "diskstats")

# Buckets below these are folded into the first exported one: 1 us of latency and 4 KiB of
# request size (a page) are below what matters on a block device.
LAT_FIRST_SLOT = 9      # first le = (2^10 - 1) ns ~ 1.02 us
SIZE_FIRST_SLOT = size_slot(4096) - 1    # first le = 4095 bytes
SIZE_LAST_SLOT = size_slot(4 << 20)      # last finite le = 4 MiB: larger requests count in +Inf


LAT_LAST_SLOT = 36      # last finite le ~ 68.7 s: slower requests only matter as "+Inf"

# metrics.detail: basic (the default) keeps a fleet's series few, about 30 a disk: latency in
# buckets a factor of 4 apart from 16 us to 4.3 s (a disk's 0.1-20 ms falls in 4 of them;
# the window's p50 and p99 gauges keep the exact figures), no request-size or service-time
# histogram (the window's mean size stays), and of the scheduler and state sets only the
# member in force (every query and rule asks `== 1`). full: every log2 bucket from 1 us to
# 69 s, sizes by each power of two, service times where they differ from latency, and the
# sets with their zeros.
LAT_BASIC_SLOTS = tuple(range(13, 32, 2))   # le = 2^14 - 1 ns (16 us) .. 2^32 - 1 ns (4.3 s)


def log2_buckets(hist: Sequence[int], first: int, divisor: float,
                 last: int | None = None) -> list[tuple[str, float]]:
    """Cumulative (le, count) pairs of a log2 histogram, slots first..last, then +Inf.

    `divisor` turns the slot's unit into the exported base unit (1e9 for ns -> s).
    """
    last = len(hist) - 2 if last is None else min(last, len(hist) - 2)
    return log2_cumulative(hist, range(first, last + 1), divisor)


def log2_cumulative(hist: Sequence[int], slots: Iterable[int],
                    divisor: float) -> list[tuple[str, float]]:
    """Cumulative (le, count) pairs at the upper bounds of the given slots (ascending), then
    +Inf: a coarser histogram read off the probe's log2 one."""
    running = list(accumulate(hist))
    out = [(repr((2 ** (i + 1) - 1) / divisor), float(running[i]))
           for i in slots if i < len(hist) - 1]
    out.append(("+Inf", float(running[-1] if running else 0)))
    return out


def size_buckets(hist: Sequence[int]) -> list[tuple[str, float]]:
    """Cumulative (le, count) pairs of the size histogram (probe/layout.py size_slot: a bucket
    of its own for each power of two), from 4 KiB - 1 to 4 MiB, then +Inf."""
    out: list[tuple[str, float]] = []
    running = sum(hist[:SIZE_FIRST_SLOT])
    for i in range(SIZE_FIRST_SLOT, SIZE_LAST_SLOT + 1):
        running += hist[i]
        out.append((repr(size_slot_le(i)), float(running)))
    out.append(("+Inf", float(sum(hist))))
    return out


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


class IoazCollector(Collector):
    """Reads a running Daemon (agent/ioaz/daemon/core.py); register it with a registry."""

    def __init__(self, daemon: Any):
        self.daemon = daemon

    def describe(self) -> Iterable[Metric]:
        # Declaring nothing up front keeps registration from calling collect() on a daemon
        # that may not have started yet.
        return []

    def collect(self) -> Iterator[Metric]:
        d = self.daemon
        with d.lock:
            full = d.config.metrics_detail == "full"   # read each scrape: a reload changes it
            families = self._agent(d) + self._devices(d, full)
        yield from families

    # -- the agent ----------------------------------------------------------------------

    def _agent(self, d: Any) -> list[Metric]:
        build = InfoMetricFamily("ioaz_build", "The running ioazd: its version, Python's and "
                                 "the kernel's")
        build.add_metric([], {"version": __version__, "python": platform.python_version(),
                              "kernel": platform.release()})
        up = GaugeMetricFamily("ioaz_collector_up", "1 if the last window's probe read "
                               "succeeded, 0 if it failed (devices then keep their scheduler)")
        up.add_metric([], 1.0 if d.collector_up else 0.0)
        source = GaugeMetricFamily("ioaz_probe_source", "The probe source in use: 1 for the "
                                   "active one (bpf; bcc on a kernel without BTF; diskstats after "
                                   "a fallback)",
                                   labels=["source"])
        name = getattr(d.source, "name", "unknown")
        for s in sorted(set(SOURCES) | {name}):
            source.add_metric([s], 1.0 if s == name else 0.0)
        fallback = InfoMetricFamily("ioaz_probe_fallback", "Why the probe fell back to "
                                    "/proc/diskstats (absent when it did not)")
        if d.fallback_reason:
            fallback.add_metric([], {"reason": str(d.fallback_reason)[:200]})
        periods = CounterMetricFamily(
            "ioaz_probe_periods", "Sampling periods of the BPF probe by mode: sampled (busy "
            "disks: part of each counted) or full (every request; absent when always on)",
            labels=["mode"])
        sampler = getattr(d.source, "sampler", None)
        if sampler is not None:
            periods.add_metric(["sampled"], float(sampler.periods - sampler.full_periods))
            periods.add_metric(["full"], float(sampler.full_periods))
        window = GaugeMetricFamily("ioaz_window_length_seconds",
                                   "The window (analyzer period) the daemon waits now: "
                                   "window_s, or rest_window_s while every device is calm")
        window.add_metric([], float(d.rest.next_window_s()))
        cpu = CounterMetricFamily("ioaz_window_cpu_seconds",
                                  "CPU time the agent spent in its windows (read, decide, act) "
                                  "since it started; its rate is the share of one CPU")
        cpu.add_metric([], float(d.window_cpu_s))
        windows = CounterMetricFamily("ioaz_windows", "Windows run since the daemon started")
        windows.add_metric([], float(d.windows))
        dry = GaugeMetricFamily("ioaz_dry_run", "1 if ioazd decides without writing to sysfs")
        dry.add_metric([], 1.0 if d.config.dry_run else 0.0)
        managed = GaugeMetricFamily("ioaz_devices", "Devices ioaz manages")
        managed.add_metric([], float(len(d.devices)))
        aside = CounterMetricFamily(
            "ioaz_state_file_set_aside", "Corrupt state files (or entries) set aside since start "
            "(the originals they held are lost; the log's state_file_corrupt says where)")
        aside.add_metric([], float(d.state_set_aside))
        return [build, up, source, fallback, periods, window, cpu, windows, dry, managed, aside]

    # -- per device -----------------------------------------------------------------------

    def _devices(self, d: Any, full: bool) -> list[Metric]:
        f = _DeviceFamilies(full)
        for name in sorted(d.devices):
            try:
                f.add(d.devices[name])
            except Exception:  # one odd record must not cost the whole scrape
                log.exception("metrics: device %s skipped", name)
        return f.all()


class _DeviceFamilies:
    def __init__(self, full: bool = True) -> None:
        self.full = full
        dev = ["device"]
        self.scheduler = GaugeMetricFamily(
            "ioaz_device_scheduler", "The kernel scheduler of the device: 1 for the active "
            "one, 0 for the others it offers", labels=dev + ["scheduler"])
        self.policy = InfoMetricFamily(
            "ioaz_device_policy", "The policy ioaz put in force and the goal it serves",
            labels=dev + ["policy", "goal"])
        self.state = GaugeMetricFamily(
            "ioaz_device_state", "Who decides: auto (the matrix), pinned (an administrator's "
            "pin), manual (changed behind ioaz's back), paused; 1 for the current one",
            labels=dev + ["state"])
        self.wclass = InfoMetricFamily(
            "ioaz_device_workload_class", "The IOAZ workload class of the last window",
            labels=dev + ["class", "processes", "pattern", "mode", "depth", "size"])
        self.iops = GaugeMetricFamily("ioaz_window_iops", "Completed requests per second "
                                      "in the last window", labels=dev)
        self.bps = GaugeMetricFamily("ioaz_window_throughput_bytes_per_second",
                                     "Bytes per second in the last window",
                                     labels=dev + ["direction"])
        self.read_ratio = GaugeMetricFamily("ioaz_window_read_ratio", "Share of requests that "
                                            "were reads (0..1)", labels=dev)
        self.seq_ratio = GaugeMetricFamily("ioaz_window_sequential_ratio", "Share of bios "
                                           "that continued the previous one (0..1)",
                                           labels=dev)
        self.procs = GaugeMetricFamily("ioaz_window_processes", "Processes that submitted "
                                       "I/O in the last window", labels=dev)
        self.threads = GaugeMetricFamily("ioaz_window_threads", "Threads that submitted I/O "
                                         "in the last window (the submitters the class "
                                         "counts)", labels=dev)
        self.kept = GaugeMetricFamily("ioaz_window_class_kept", "1 when the last window had "
                                      "too few sampled bios to judge and kept the previous "
                                      "class", labels=dev)
        self.depth = GaugeMetricFamily("ioaz_window_queue_depth", "Mean requests in the block "
                                       "layer (scheduler queue and device) in the last "
                                       "window", labels=dev)
        self.size = GaugeMetricFamily("ioaz_window_request_size_bytes", "Mean request size "
                                      "in the last window", labels=dev)
        self.merge = GaugeMetricFamily("ioaz_window_merge_ratio", "Share of bios merged into "
                                       "another request (0..1)", labels=dev)
        # two gauges, not a `quantile` label: that label belongs to summaries (promtool)
        self.lat_p50 = GaugeMetricFamily("ioaz_window_latency_p50_seconds", "Median request "
                                         "latency of the last window (submission to "
                                         "completion)", labels=dev)
        self.lat_p99 = GaugeMetricFamily("ioaz_window_latency_p99_seconds", "99th percentile "
                                         "request latency of the last window (submission to "
                                         "completion)", labels=dev)
        self.lat_hist = HistogramMetricFamily(
            "ioaz_request_latency_seconds", "Request latency, submission to completion, since "
            "the probe started (BPF log2 buckets; on busy disks of the requests sampled)",
            labels=dev)
        self.svc_hist = HistogramMetricFamily(
            "ioaz_request_service_seconds", "Request service time, issue to completion, since "
            "the probe started (BPF log2 buckets; only on queues whose kernel timestamps the "
            "issue: writeback throttling, kyber, blk-iolatency)", labels=dev)
        self.size_hist = HistogramMetricFamily(
            "ioaz_request_size_bytes", "Request size at completion since the probe started "
            "(a bucket for each power of two and one for the sizes between; on busy disks of the "
            "requests sampled)", labels=dev)
        self.switches = CounterMetricFamily(
            "ioaz_switches", "Scheduler switches ioaz made, by what caused them (reason: "
            "matrix, model, pin or trial; `ioazctl explain DEVICE` says what each means)",
            labels=dev + ["from", "to", "reason"])
        self.trials = CounterMetricFamily(
            "ioaz_trials", "Trials that ended (a matrix cell's runner-up or alternative), by "
            "outcome: kept, given_back, abandoned (the workload changed)",
            labels=dev + ["outcome"])
        self.stalls = HistogramMetricFamily(
            "ioaz_switch_stall_seconds", "How long the queue stalled during each scheduler "
            "switch since the daemon started", labels=dev)
        self.decided = GaugeMetricFamily(
            "ioaz_last_decision_timestamp_seconds", "Unix time of the last decision for the "
            "device (its age: time() - this)", labels=dev)
        self.errors = CounterMetricFamily("ioaz_device_errors", "Failed windows or writes "
                                          "for the device", labels=dev)

    def add(self, rec: Any) -> None:
        n = rec.name
        active = rec.scheduler
        for s in sorted(set(rec.available) | ({active} if active else set())):
            if self.full or s == active:
                self.scheduler.add_metric([n, s], 1.0 if s == active else 0.0)
        st = rec.state
        mode = getattr(st.mode, "value", str(st.mode))
        for m in MODES:
            if self.full or m == mode:
                self.state.add_metric([n, m], 1.0 if m == mode else 0.0)
        goal = (rec.decision.goal if rec.decision else None) or st.goal or ""
        self.policy.add_metric([n, st.policy or "", goal], {})
        f = rec.features
        if f is not None:
            self._features(n, f)
        snap = rec.snapshot
        if snap is not None and snap.source == "bpf":
            self._histograms(n, snap)
        for (frm, to, reason), count in sorted(rec.switches.items()):
            self.switches.add_metric([n, frm, to, reason], float(count))
        for outcome, count in sorted(rec.trials.items()):
            self.trials.add_metric([n, outcome], float(count))
        if rec.stalls.count:
            self.stalls.add_metric([n], [(_le(b), float(c)) for b, c in rec.stalls.cumulative()],
                                   sum_value=rec.stalls.total_s)
        if rec.decision_time is not None:
            self.decided.add_metric([n], float(rec.decision_time))
        self.errors.add_metric([n], float(rec.errors))

    def _features(self, n: str, f: Any) -> None:
        self.iops.add_metric([n], float(f.iops))
        self.bps.add_metric([n, "read"], float(f.read_bytes_per_s))
        self.bps.add_metric([n, "write"], float(f.write_bytes_per_s))
        for fam, v in ((self.read_ratio, f.read_ratio), (self.seq_ratio, f.seq_ratio),
                       (self.procs, f.processes), (self.threads, f.threads),
                       (self.depth, f.avg_depth),
                       (self.size, f.mean_size_bytes), (self.merge, f.merge_ratio)):
            if v is not None:   # not measurable by this source: no sample rather than a lie
                fam.add_metric([n], float(v))
        for fam, v in ((self.lat_p50, f.p50_latency_s), (self.lat_p99, f.p99_latency_s)):
            if v is not None:
                fam.add_metric([n], float(v))
        c = f.workload_class
        if c is not None:
            self.wclass.add_metric([n, str(c), c.processes, c.pattern, c.mode, c.depth,
                                    c.size], {})
            self.kept.add_metric([n], 1.0 if c.kept else 0.0)

    def _histograms(self, n: str, snap: Any) -> None:
        if not self.full:
            lat = log2_cumulative(snap.lat_hist, LAT_BASIC_SLOTS, 1e9)
            self.lat_hist.add_metric([n], lat, snap.lat_sum_ns * 1e-9)
            return
        lat = log2_buckets(snap.lat_hist, LAT_FIRST_SLOT, 1e9, LAT_LAST_SLOT)
        self.lat_hist.add_metric([n], lat, snap.lat_sum_ns * 1e-9)
        # The block layer stamps start and issue from one cached clock inside a plug
        # (blk_time_get_ns), so a request issued in the plug that allocated it (scheduler
        # none) has a service time equal to its latency: the copy is left out.
        if snap.svc_count and (snap.svc_hist != snap.lat_hist
                               or snap.svc_sum_ns != snap.lat_sum_ns):
            svc = log2_buckets(snap.svc_hist, LAT_FIRST_SLOT, 1e9, LAT_LAST_SLOT)
            self.svc_hist.add_metric([n], svc, snap.svc_sum_ns * 1e-9)
        size = size_buckets(snap.size_hist)
        hist_bytes = snap.hist_bytes if snap.hist_bytes is not None else sum(snap.completed_bytes)
        self.size_hist.add_metric([n], size, float(hist_bytes))

    def all(self) -> list[Metric]:
        return [self.scheduler, self.policy, self.state, self.wclass, self.iops, self.bps,
                self.read_ratio, self.seq_ratio, self.procs, self.threads, self.kept,
                self.depth, self.size, self.merge, self.lat_p50, self.lat_p99,
                self.lat_hist, self.svc_hist, self.size_hist, self.switches, self.trials,
                self.stalls, self.decided, self.errors]


def exported_names() -> list[str]:
    """Every metric name a scrape can carry, as PromQL sees it (histograms: the base name)."""
    names = ["ioaz_build_info", "ioaz_collector_up", "ioaz_probe_source",
             "ioaz_probe_fallback_info",
             "ioaz_probe_periods_total",
             "ioaz_window_length_seconds", "ioaz_window_cpu_seconds_total", "ioaz_windows_total",
             "ioaz_dry_run", "ioaz_devices", "ioaz_state_file_set_aside_total"]
    suffix = {"info": "_info", "counter": "_total"}
    names += [m.name + suffix.get(m.type, "") for m in _DeviceFamilies().all()]
    return names
