"""The discrete-event engine: processes submit requests, a scheduler orders them, a device serves
them; every window it emits WindowFeatures and may switch scheduler through a chooser hook.

Events live in one heap of (time, sequence, fn, arg); fn(time, arg) runs when the clock reaches
time. Nothing per request is kept after it completes (only counters and a latency histogram),
so memory is bounded by the requests in flight and a one-hour run needs no more than a minute.

Switching follows the Linux procedure the IOAZ paper describes (sections 3.2 and 4.3): new
requests are blocked, the queue drains under the old scheduler (requests on the device included),
then the new scheduler starts (after an optional fixed switch_cost_s) and the blocked requests
enter it. Processes waiting on blocked requests stall meanwhile, which is the cost IOAZ saw.
"""
from __future__ import annotations

import heapq
import math
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import replace
from itertools import repeat
from typing import Any

from ioaz import quantile
from ioaz.classify.types import DEFAULT_PROCESS_SHARE, WindowFeatures
from ioaz.probe.layout import size_slot
from ioaz.sim.device_base import Device
from ioaz.sim.request import SECTOR, Request
from ioaz.sim.results import HIST_PER_OCTAVE, LatencyHistogram, SimResult, WindowCounts
from ioaz.sim.schedulers import Scheduler, make_scheduler
from ioaz.sim.workloads import (
    GB,
    Process,
    SimProcess,
    Workload,
    fit_layout,
    make_process,
)

Chooser = Callable[[WindowFeatures], str | None]

SEQ_STREAMS = 16         # stream heads remembered, as the probe does (IOAZ_STREAM_AGE)
SEQ_CONFIRM = 3          # continuations before a stream counts (bpf/ioaz.bpf.c IOAZ_STREAM_CONFIRM)
_log2 = math.log2
_NS = 1e9


def _completes(sched: Scheduler) -> bool:
    """Whether the scheduler does anything on completion (the base's completed() does not)."""
    return type(sched).completed is not Scheduler.completed


class Simulator:
    def __init__(self, device: Device, scheduler: str | Scheduler, workload: Workload, *,
                 tunables: dict[str, Any] | None = None, window_s: float = 1.0,
                 chooser: Chooser | None = None, switch_cost_s: float = 0.0, seed: int = 1,
                 device_name: str = "sim0", keep_windows: bool = True,
                 nr_requests: Callable[[str], int] | None = None) -> None:
        self.device = device
        self.tunables = dict(tunables or {})
        self.sched = (make_scheduler(scheduler, device, **self.tunables)
                      if isinstance(scheduler, str) else scheduler)
        self.start_name = self.sched.name
        self.sched_completes = _completes(self.sched)
        self.workload = workload
        self.window_s = window_s
        self.chooser = chooser
        self.switch_cost_s = switch_cost_s
        self.seed = seed
        self.device_name = device_name
        self.keep_windows = keep_windows
        self.heap: list[tuple[float, int, Callable[[float, Any], None], Any]] = []
        self.seq = 0
        self.now = 0.0
        self.wake_at = -1.0
        self.procs: dict[int, SimProcess] = {}
        self.finished_pids: set[int] = set()   # processes of this phase that ended early
        self.all_procs: list[SimProcess] = []
        self.phase_idx = -1
        self.live = 0                   # processes of the current phase not yet finished
        self.finished = False
        self.frozen = False             # switching: submissions blocked
        self.switch_to: str | None = None
        self.switch_t0 = 0.0
        self.blocked: list[Request] = []
        # The block layer's request limit (queue/nr_requests) for each scheduler, when the run
        # models one (blk_mq_nr_requests): a bio that merges nowhere and finds every request
        # taken waits for one (its submitter sleeps for a tag). None: no limit, as the 2.6
        # queues the papers measured never held that many.
        self.nr_requests_of = nr_requests
        self.rq_limit = nr_requests(self.sched.name) if nr_requests else 0
        self.allocated = 0                # requests queued in the scheduler or on the device
        self.peak_allocated = 0
        self.tag_wait: deque[Request] = deque()
        self.switches: list[dict[str, Any]] = []
        self.sched_since = 0.0
        self.sched_time: dict[str, float] = {}
        self.win = WindowCounts()
        self.windows: list[WindowFeatures] = []
        # end sector of a recent stream -> continuations that led to it (up to SEQ_CONFIRM),
        # oldest first
        self.stream_heads: dict[int, int] = {}
        self.own_stream: dict[int, tuple[int, int]] = {}   # pid -> (end, run) of its last bio
        self.hist = LatencyHistogram()
        self.total_requests = 0
        self.total_bytes = 0
        self.total_merges = 0
        self.next_pid = 1000
        self.cpu_s = 0.0
        self.feeders = 0                 # open trace feeders (trace.TraceFeeder)
        self.tracing = False
        self.completing = False
        self.last_window_t = 0.0
        self.issue_log: list[Request] | None = None   # set to a list to record dispatch order
        self.complete_log: list[Request] | None = None  # ... and every bio's completion
        device.bind(self.at, self._on_complete)

    # --- the clock -------------------------------------------------------------------------
    def at(self, t: float, fn: Callable[[float, Any], None], arg: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, fn, arg))

    # --- requests --------------------------------------------------------------------------
    def submit(self, rq: Request) -> None:
        now = rq.submit
        w = self.win
        w.bios += 1
        pids = w.pids
        pid = rq.pid
        pids[pid] = pids.get(pid, 0) + 1
        # The probe's seq test: does the bio start exactly where one of the last SEQ_STREAMS
        # streams ended, or where the same process's last bio ended? A stream counts once
        # SEQ_CONFIRM bios have continued it, the ones before then with it, so random bios
        # packed in a small region that meet a head by chance stay random (bpf/ioaz.bpf.c,
        # continues_stream).
        heads = self.stream_heads
        run = heads.pop(rq.sector, -1)
        own = self.own_stream.get(pid)
        if run < 0 and own is not None and own[0] == rq.sector:
            run = own[1]   # the process's own stream (the probe's task_stream)
        if run >= 0:
            w.seq += SEQ_CONFIRM if run == SEQ_CONFIRM - 1 else 1 if run == SEQ_CONFIRM else 0
        run = min(run + 1, SEQ_CONFIRM)
        heads[rq.sector + rq.nsec] = run
        self.own_stream[pid] = (rq.sector + rq.nsec, run)
        if len(heads) > SEQ_STREAMS:
            del heads[next(iter(heads))]
        if self.frozen:
            self.blocked.append(rq)
            return
        if self._enqueue(rq, now):
            return
        # a completion kicks once after its processes resubmit; a busy device takes nothing
        if not self.completing:
            dev = self.device
            if dev.inflight < dev.queue_depth:
                self._kick(now)

    def _enqueue(self, rq: Request, now: float) -> bool:
        """Hand rq to the scheduler; True when it went no further (merged, or waiting for a
        request under the limit)."""
        limit = self.rq_limit
        if limit:
            if self.allocated >= limit:
                # the block layer tries a merge before it allocates a request
                if self.sched.back_merge(rq) is None:
                    self.tag_wait.append(rq)
                    return True
                self.win.merges += 1
                self.total_merges += 1
                return True
            self.allocated += 1
            if self.allocated > self.peak_allocated:
                self.peak_allocated = self.allocated
        if self.sched.add(rq, now) is not None:
            if limit:
                self.allocated -= 1
            self.win.merges += 1
            self.total_merges += 1
            return True
        return False

    def _free_request(self, now: float) -> None:
        """A request completed: the limit lets the longest-waiting bios in."""
        self.allocated -= 1
        tw = self.tag_wait
        while tw and self.allocated < self.rq_limit and not self.frozen:
            self._enqueue(tw.popleft(), now)

    def inject(self, rq: Request) -> None:
        """Submit a request at its own rq.submit time, outside any process (traces, vectors)."""
        self.at(rq.submit, self._inject_event, rq)

    def _inject_event(self, now: float, rq: Request) -> None:
        self.submit(rq)

    def _kick(self, now: float) -> None:
        dev = self.device
        if dev.inflight >= dev.queue_depth:
            return
        dispatch = self.sched.dispatch
        log = self.issue_log
        while True:
            r = dispatch(now)
            if r is None:
                return
            if r.__class__ is float:
                if self.wake_at <= now or r < self.wake_at:
                    self.wake_at = r  # type: ignore[assignment]
                    self.at(r, self._wake, None)  # type: ignore[arg-type]
                return
            r.issue = now  # type: ignore[union-attr]
            if log is not None:
                log.append(r)  # type: ignore[arg-type]
            dev.submit(r, now)  # type: ignore[arg-type]
            if dev.inflight >= dev.queue_depth:
                return

    def _wake(self, now: float, _: Any) -> None:
        if now >= self.wake_at:
            self.wake_at = -1.0
        self._kick(now)

    def _on_complete(self, rq: Request, now: float) -> None:
        self.completing = True
        rq.complete = now
        if self.rq_limit:
            self._free_request(now)
        if self.sched_completes:
            self.sched.completed(rq, now)
        w = self.win
        w.done += 1
        nsec = rq.nsec
        nbytes = nsec * SECTOR
        took = now - rq.submit   # the probe's latency: submit to complete
        if rq.write:
            w.wbytes += nbytes
        else:
            w.reads += 1
            w.rbytes += nbytes
            w.read_lat += took
        w.lat.append(took)
        sb = size_slot(nbytes)   # the probe's size histogram slot
        sh = w.size_hist
        sh[sb] = sh.get(sb, 0) + 1
        procs = self.procs
        merged = rq.merged
        if self.complete_log is not None:
            self.complete_log.append(rq)
            self.complete_log.extend(merged or ())
        hist = self.hist
        if merged is None:
            self.total_requests += 1
            self.total_bytes += nbytes
            # hist.add(now - rq.submit), inlined
            lat = now - rq.submit
            hb = int(_log2(lat * 1e9 if lat > 1e-9 else 1.0) * HIST_PER_OCTAVE)
            hc = hist.counts
            hc[hb] = hc.get(hb, 0) + 1
            hist.n += 1
            p = procs.get(rq.pid)
            if p is not None:
                p.complete(rq, now)
        else:
            # the bios of a merged request complete together, each with its own size
            rq.nsec -= sum(m.nsec for m in merged)
            for b in [rq, *merged]:
                b.complete = now
                self.total_requests += 1
                self.total_bytes += b.nsec * SECTOR
                hist.add(now - b.submit)
                p = procs.get(b.pid)
                if p is not None:
                    p.complete(b, now)
        self.completing = False
        if self.switch_to is not None:
            self._maybe_finish_switch(now)
        else:
            self._kick(now)
        if self.tracing and self.feeders == 0:
            self.check_idle(now)

    def check_idle(self, now: float) -> None:
        """A replayed trace ends when it has no more records and nothing is left to serve."""
        if (self.tracing and self.feeders == 0 and not len(self.sched)
                and not self.device.inflight and not self.blocked and not self.tag_wait):
            self.finished = True

    # --- switching -------------------------------------------------------------------------
    def _begin_switch(self, now: float, name: str) -> None:
        make_scheduler(name)  # fail before blocking anything if the name is wrong
        self.frozen = True
        self.switch_to = name
        self.switch_t0 = now
        self._maybe_finish_switch(now)

    def _maybe_finish_switch(self, now: float) -> None:
        self._kick(now)  # the old scheduler drains what it holds
        if len(self.sched) or self.device.inflight:
            return
        name = self.switch_to
        assert name is not None
        old = self.sched.name
        self._account(now)
        self.sched = make_scheduler(name, self.device, **self._tunables_for(name))
        self.sched_completes = _completes(self.sched)
        self.switch_to = None
        self.switches.append({"t": self.switch_t0, "from": old, "to": name,
                              "drain_s": now - self.switch_t0, "blocked": len(self.blocked)})
        if self.switch_cost_s > 0:
            self.at(now + self.switch_cost_s, self._unblock, None)
        else:
            self._unblock(now, None)

    def _tunables_for(self, name: str) -> dict[str, Any]:
        cls = make_scheduler(name).__class__
        return {k: v for k, v in self.tunables.items() if k in cls.DEFAULTS}

    def _unblock(self, now: float, _: Any) -> None:
        self.frozen = False
        blocked, self.blocked = self.blocked, []
        if self.nr_requests_of is not None:
            self.rq_limit = self.nr_requests_of(self.sched.name)
            tw = self.tag_wait
            while tw and self.allocated < self.rq_limit:
                self._enqueue(tw.popleft(), now)
        for rq in blocked:
            self._enqueue(rq, now)
        self._kick(now)

    def _account(self, now: float) -> None:
        n = self.sched.name
        self.sched_time[n] = self.sched_time.get(n, 0.0) + now - self.sched_since
        self.sched_since = now

    # --- windows -------------------------------------------------------------------------
    def features(self, now: float, span: float) -> WindowFeatures:
        w = self.win
        lat = sorted(w.lat)
        done = w.done
        # int(log2(max(x, 1e-9) * 1e9)) per latency, counted; map and Counter run it in C
        # (Counter keeps the order in which buckets first occur, as the loop it replaces did)
        lh = w.lat_hist
        for b, n in Counter(map(int, map(_log2, map(_NS.__mul__, map(max, lat, repeat(1e-9)))))
                            ).items():
            lh[b] = lh.get(b, 0) + n
        return WindowFeatures(
            device=self.device_name, window_s=span,
            iops=done / span,
            read_bytes_per_s=w.rbytes / span, write_bytes_per_s=w.wbytes / span,
            read_ratio=w.reads / done if done else None,
            seq_ratio=w.seq / w.bios if w.bios else None,
            # a process counts if it submitted this share of the window's bios (classify)
            processes=sum(1 for n in w.pids.values() if n >= DEFAULT_PROCESS_SHARE * w.bios),
            # Little's law, as the probe computes it: the time-averaged number of requests in
            # the block layer (scheduler queue and device) is their summed submit-to-completion
            # time over the window
            avg_depth=sum(lat) / span,
            # the reads' part of it, which the class's depth axis takes for a read class
            # (classes.depth_per_process), as the probe's lat_read_ns gives the daemon
            read_depth=min(sum(lat), w.read_lat) / span,
            mean_size_bytes=(w.rbytes + w.wbytes) / done if done else None,
            p50_latency_s=quantile.of_sorted(lat, 0.50),
            p99_latency_s=quantile.of_sorted(lat, 0.99),
            merge_ratio=w.merges / w.bios if w.bios else None,
            source="sim", requests=done, latency_hist=w.lat_hist, size_hist=w.size_hist,
            process_bios=self._process_bios(w.pids))

    def _process_bios(self, submitted: dict[int, int]) -> dict[int, int]:
        """This window's bios per process, 0 for a live process that submitted none (what
        the class horizon needs to tell a blocked reader from one that exited)."""
        out = dict(submitted)
        for pid in self.procs:
            if pid not in out and pid not in self.finished_pids:
                out[pid] = 0
        return out

    def _window(self, now: float, _: Any) -> None:
        f = self.features(now, self.window_s)
        self.last_window_t = now
        self.win = WindowCounts()
        if self.keep_windows:
            self.windows.append(f)
        if self.chooser is not None and self.switch_to is None and not self.frozen:
            name = self.chooser(f)
            if name and name != self.sched.name:
                self._begin_switch(now, name)
        if not self.finished:
            self.at(now + self.window_s, self._window, None)

    # --- phases --------------------------------------------------------------------------
    def _start_phase(self, now: float, idx: Any) -> None:
        for p in self.procs.values():
            p.stop(now)
        self.phase_idx = idx
        if idx >= len(self.workload.phases):
            self.finished = True
            return
        ph = self.workload.phases[idx]
        self.procs = {}
        self.finished_pids = set()
        self.live = len(ph.procs)
        news = []
        cap_gb = self.device.capacity_sectors / GB
        starts = fit_layout([s.region_gb for s in ph.procs], [s.span_gb for s in ph.procs],
                            cap_gb)
        for spec, start in zip(ph.procs, starts, strict=True):
            if start != spec.region_gb:
                spec = replace(spec, region_gb=start)
            p = make_process(self.next_pid, spec, self, self.seed)
            self.next_pid += 1
            self.procs[p.pid] = p
            self.all_procs.append(p)
            news.append(p)
        if ph.duration_s is not None:
            self.at(now + ph.duration_s, self._start_phase, idx + 1)
        for p in news:
            p.start(now)

    def process_finished(self, p: Process) -> None:
        if p.pid not in self.procs or p.stopped:
            return
        self.finished_pids.add(p.pid)
        self.live -= 1
        ph = self.workload.phases[self.phase_idx]
        if self.live == 0 and ph.duration_s is None:
            self._start_phase(self.now, self.phase_idx + 1)

    # --- running -------------------------------------------------------------------------
    def replay(self, records: Any) -> None:
        """Replay trace records (trace.read_trace) alongside, or instead of, the workload."""
        from ioaz.sim.trace import TraceFeeder

        self.tracing = True
        TraceFeeder(self, iter(records))

    def run(self, max_s: float | None = None) -> SimResult:
        wall0 = time.perf_counter()
        cpu0 = time.process_time()
        if not self.tracing or self.workload.phases:
            self.at(0.0, self._start_phase, 0)
        self.at(self.window_s, self._window, None)
        heap = self.heap
        pop = heapq.heappop
        limit = math.inf if max_s is None else max_s
        while heap and not self.finished:
            t, _, fn, arg = pop(heap)
            if t > limit:
                break
            self.now = t
            fn(t, arg)
        end = min(self.now, limit)
        self.now = end
        if end - self.last_window_t > 1e-9:
            # the last window, partial or cut off by the end of the workload at its boundary
            f = self.features(end, end - self.last_window_t)
            if self.keep_windows:
                self.windows.append(f)
        wall = time.perf_counter() - wall0
        self.cpu_s = time.process_time() - cpu0
        self._account(end)
        return self._result(end, wall)

    def _result(self, end: float, wall: float) -> SimResult:
        per = {}
        for p in self.all_procs:
            key = f"{p.pid}:{p.spec.name}"
            per[key] = p.bytes / p.active_s / 1e6
        vals = list(per.values()) or [0.0]
        span = max(end, 1e-9)
        return SimResult(
            workload=self.workload.name, device=self.device.name,
            scheduler="adaptive" if self.chooser else self.start_name, sim_s=end,
            requests=self.total_requests, bytes=self.total_bytes,
            throughput_mb_s=self.total_bytes / span / 1e6, iops=self.total_requests / span,
            proc_mb_s=per, proc_min_mb_s=min(vals), proc_max_mb_s=max(vals),
            proc_mean_mb_s=sum(vals) / len(vals),
            p50_latency_s=self.hist.percentile(0.5), p99_latency_s=self.hist.percentile(0.99),
            merges=self.total_merges, wall_s=wall,
            requests_per_wall_s=self.total_requests / wall if wall > 0 else 0.0,
            cpu_s=self.cpu_s,
            switches=self.switches, windows=self.windows, scheduler_time_s=self.sched_time)


def simulate(device: Device, scheduler: str, workload: Workload, **kw: Any) -> SimResult:
    max_s = kw.pop("max_s", None)
    return Simulator(device, scheduler, workload, **kw).run(max_s)
