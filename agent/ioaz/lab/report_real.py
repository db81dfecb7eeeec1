"""`ioaz-lab bench report --real`: ioazd against each static kernel scheduler on a loop device
with a phase-changing fio workload; throughput and p99 latency as ratios.

Root, fio and BPF. The loop device lives over a file in /dev/shm, so the "disk" is memory:
schedulers reorder little there (a loop device takes 128 requests at once) and the question this
answers is whether ioazd's observing and switching costs anything on a real kernel, not whether
it finds a faster scheduler. The Daemon class is driven window by window, as ioazd's loop does,
while fio runs. The static runs switch the scheduler through the actuator with a state file in
STATE_DIR, as ioazd does: a killed report is put back by the next report run (or by
`python -m ioaz.actuate.recover --state-dir STATE_DIR`).
"""
from __future__ import annotations

import json
import logging
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ioaz.actuate import Actuator, Realisation, StateStore, recover
from ioaz.lab.report import Report, figure
from ioaz.lab.testbench.measure import bins_percentile
from ioaz.sysblock import BlockSysfs

QUEUE_KNOBS = ("scheduler", "nr_requests", "read_ahead_kb", "nomerges", "rq_affinity",
               "max_sectors_kb")
LOOP_MB = 1024
STATE_DIR = "/run/ioaz/report"


def queue_settings(sysfs: BlockSysfs, dev: str) -> dict[str, str]:
    """The queue's settings, read only: the report shows them before and after."""
    out = {}
    for k in QUEUE_KNOBS:
        if k == "scheduler":
            out[k] = sysfs.scheduler(dev).active
        elif sysfs.has(dev, f"queue/{k}"):
            out[k] = sysfs.read(dev, f"queue/{k}")
    return out


def _checked(what: str, res: Any) -> None:
    if not res.ok:
        raise RuntimeError(f"{what}: {'; '.join(res.errors)}")


def fio_job(dev: str, phase_s: float) -> str:
    """The phase-changing workload: par-read-like readers, 16 random readers, one sequential
    writer, 4 sequential 128 KiB readers; each phase its own stonewalled group."""
    region = LOOP_MB // 16
    common = (f"[global]\nfilename=/dev/{dev}\ndirect=1\nioengine=psync\ntime_based\n"
              f"runtime={phase_s:g}\nsize={region}m\noffset_increment={region}m\n")
    phases = [("par-read", "read", "4k", 4), ("rand-read", "randread", "4k", 16),
              ("seq-write", "write", "128k", 1), ("seq-read", "read", "128k", 4)]
    body = "".join(f"\n[{n}]\nstonewall\nnew_group\nrw={rw}\nbs={bs}\nnumjobs={j}\n"
                   for n, rw, bs, j in phases)
    return common + body


def run_fio(dev: str, phase_s: float, during: Any = None) -> dict[str, Any]:
    """fio's json+ output: per phase MB/s and p99 completion latency; over the run the total
    MB/s and the p99 from the merged latency bins (exact to fio's bin width)."""
    with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as f:
        f.write(fio_job(dev, phase_s))
        job = f.name
    try:
        p = subprocess.Popen(["fio", "--output-format=json+", "--group_reporting", job],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if during is not None:
            during(p)
        out, err = p.communicate(timeout=phase_s * 8 + 120)
        if p.returncode != 0:
            raise RuntimeError(f"fio failed: {err.strip()[:400]}")
    finally:
        Path(job).unlink(missing_ok=True)
    j = json.loads(out[out.index("{"):])
    phases = []
    all_bins: dict[int, int] = {}
    total_bytes = 0
    total_s = 0.0
    for job_r in j["jobs"]:
        nbytes = 0
        bins: dict[int, int] = {}
        for d in ("read", "write"):
            nbytes += job_r[d]["io_bytes"]
            for k, v in (job_r[d]["clat_ns"].get("bins") or {}).items():
                bins[int(k)] = bins.get(int(k), 0) + v
        secs = max(job_r.get("job_runtime", phase_s * 1000) / 1000.0, 1e-9)
        # group_reporting sums the jobs' runtimes; the phase took phase_s of wall time
        wall = phase_s
        phases.append({"phase": job_r["jobname"], "mb_s": nbytes / wall / 1e6,
                       "p99_ms": (bins_percentile(bins, 0.99) or 0) / 1e6,
                       "job_runtime_s": secs})
        for k, v in bins.items():
            all_bins[k] = all_bins.get(k, 0) + v
        total_bytes += nbytes
        total_s += wall
    return {"phases": phases, "mb_s": total_bytes / total_s / 1e6,
            "p99_ms": (bins_percentile(all_bins, 0.99) or 0) / 1e6}


def _mean_runs(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean of repeated runs (MB/s and p99, overall and per phase); the rest of the last."""
    out = dict(rs[-1])
    n = len(rs)
    out["mb_s"] = sum(r["mb_s"] for r in rs) / n
    out["p99_ms"] = sum(r["p99_ms"] for r in rs) / n
    out["runs_mb_s"] = [r["mb_s"] for r in rs]
    out["phases"] = [{"phase": ps[0]["phase"],
                      "mb_s": sum(p["mb_s"] for p in ps) / n,
                      "p99_ms": sum(p["p99_ms"] for p in ps) / n}
                     for ps in zip(*[r["phases"] for r in rs], strict=True)]
    if "switches" in rs[0]:
        out["switches"] = [sw for r in rs for sw in r["switches"]]
        out["classes"] = sorted({c for r in rs for c in r["classes"]})
    return out


def _adaptive(dev: str, phase_s: float, sysfs: BlockSysfs) -> dict[str, Any]:
    from ioaz.daemon.compose import build
    from ioaz.daemon.config import load_config
    from ioaz.probe.bpf_source import BpfSource

    logging.getLogger("ioaz").setLevel(logging.WARNING)
    decisions: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, BpfSource(sysfs=sysfs) as src:
        cfg_file = Path(tmp) / "ioaz.yaml"
        cfg_file.write_text(f"devices: {{include: [{dev}], exclude: []}}\n"
                            f"state_dir: {tmp}/state\n")
        cfg = load_config(cfg_file)
        daemon = build(cfg, src, Actuator(sysfs, StateStore(Path(tmp) / "state")), sysfs)
        stop = threading.Event()
        t0 = time.monotonic()

        def loop() -> None:
            nxt = time.monotonic() + cfg.window_s
            while not stop.is_set():
                time.sleep(max(0.0, nxt - time.monotonic()))
                nxt += cfg.window_s
                for d in daemon.window():
                    if d.device == dev:
                        decisions.append({"t": round(time.monotonic() - t0, 1),
                                          "action": d.action, "policy": d.policy,
                                          "reason": d.reason,
                                          "class": "/".join((d.workload_class or {}).values())})

        daemon.start()
        th = threading.Thread(target=loop, daemon=True)
        try:
            th.start()
            res = run_fio(dev, phase_s)
        finally:
            stop.set()
            th.join(timeout=10)
            daemon.stop()
        res["goal"] = cfg.decide.settings.goal
    res["switches"] = [d for d in decisions if d["action"] == "switch"]
    res["classes"] = sorted({d["class"] for d in decisions if d["class"]})
    return res


def suite_real(rep: Report, quick: bool) -> dict[str, Any]:
    from ioaz.lab.loops import Loops

    phase_s = 3.0 if quick else 10.0
    rounds = 1 if quick else 2
    out: dict[str, Any] = {"phase_s": phase_s, "rounds": rounds, "static": {}}
    sysfs = BlockSysfs()
    act = Actuator(sysfs, StateStore(STATE_DIR))
    for r in recover(actuator=act):   # what a killed report left changed
        _checked(f"restoring {r.device}, left changed by an earlier report", r)
    with Loops(1, LOOP_MB) as (dev,):
        before = queue_settings(sysfs, dev)
        try:
            subprocess.run(["dd", "if=/dev/zero", f"of=/dev/{dev}", "bs=1M",
                            f"count={LOOP_MB}", "oflag=direct"], capture_output=True)
            runs: dict[str, list[dict[str, Any]]] = {}
            for _ in range(rounds):   # rounds interleave the runs: drift hits all alike
                for s in sysfs.scheduler(dev).available:
                    _checked(f"{dev}: switching to {s}", act.apply(dev, Realisation(s, {})))
                    runs.setdefault(s, []).append(run_fio(dev, phase_s))
                _checked(f"{dev}: restoring", act.restore(dev))
                out["start_scheduler"] = sysfs.scheduler(dev).active
                runs.setdefault("ioazd", []).append(_adaptive(dev, phase_s, sysfs))
            for k, rs in runs.items():
                m = _mean_runs(rs)
                if k == "ioazd":
                    out["adaptive"] = m
                else:
                    out["static"][k] = m
        finally:
            _checked(f"{dev}: restoring", act.restore(dev))
            after = queue_settings(sysfs, dev)
        out["queue_before"], out["queue_after"] = before, after
    st = out["static"]
    ad = out["adaptive"]
    best_thr = max(st, key=lambda s: st[s]["mb_s"])
    best_p99 = min(st, key=lambda s: st[s]["p99_ms"])
    out["vs_best_throughput"] = ad["mb_s"] / st[best_thr]["mb_s"]
    out["p99_vs_best"] = ad["p99_ms"] / max(st[best_p99]["p99_ms"], 1e-9)
    out["best_throughput"], out["best_p99"] = best_thr, best_p99
    rep.data["real"] = out
    rep.summary.append(
        f"real loop device ({phase_s:g} s phases): ioazd {ad['mb_s']:.0f} MB/s = "
        f"{out['vs_best_throughput']:.2f}x the best static ({best_thr}), p99 "
        f"{ad['p99_ms']:.2f} ms = {out['p99_vs_best']:.2f}x the best static p99 ({best_p99}); "
        f"{len(ad['switches'])} switch decisions")
    sec = rep.section("Real: ioazd against each static kernel scheduler on a loop device")
    sec.text(f"Mean of {rounds} interleaved round(s). A {LOOP_MB} MiB loop device over "
           "/dev/shm, fio (O_DIRECT, psync) in four "
           f"stonewalled phases of {phase_s:g} s: 4 sequential 4 KiB readers, 16 random 4 KiB "
           "readers, one sequential 128 KiB writer, 4 sequential 128 KiB readers. Once under "
           "each scheduler the kernel offers, then under ioazd (the Daemon class, BPF probe, "
           f"the shipped defaults, stepped every window) starting from "
           f"{out.get('start_scheduler')}. Throughput is bytes over the phases' time; p99 is "
           "of fio's completion latency over the whole run (merged json+ bins). The backing "
           "store is RAM: this measures what ioazd's observing and switching cost on a real "
           "kernel, not a disk's seek savings; differences of 10-30% between runs of the same "
           "scheduler are usual on this shared 2-core machine, so only large ratios mean "
           "anything. Queue settings before/after: "
           + ("identical" if before == after else f"{before} -> {after}") + ".")
    rows = [(k, v["mb_s"], v["mb_s"] / st[best_thr]["mb_s"], v["p99_ms"],
             v["p99_ms"] / max(st[best_p99]["p99_ms"], 1e-9)) for k, v in st.items()]
    rows.append(("ioazd", ad["mb_s"], out["vs_best_throughput"], ad["p99_ms"],
                 out["p99_vs_best"]))
    sec.table(["scheduler", "MB/s", "x best MB/s", "p99 ms", "x best p99"], rows, digits=2)
    sec.table(["scheduler", *[p["phase"] for p in ad["phases"]]],
            [(k, *[f"{p['mb_s']:.0f} MB/s, p99 {p['p99_ms']:.2f} ms" for p in v["phases"]])
             for k, v in [*st.items(), ("ioazd", ad)]])
    sec.text("ioazd's switch decisions (a policy change may keep the same kernel scheduler): "
           + (", ".join(
               f"{d['t']:g} s -> {d['policy']} ({d['class']})" for d in ad["switches"]) or "none")
           + f"; classes seen: {', '.join(ad['classes']) or '-'}.")
    fig, ax = figure()
    labels = [*st, "ioazd"]
    ax.bar(range(len(labels)), [st[k]["mb_s"] for k in st] + [ad["mb_s"]],
           color=["tab:blue"] * len(st) + ["tab:orange"])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_ylabel("MB/s")
    ax2 = ax.twinx()
    ax2.plot(range(len(labels)), [st[k]["p99_ms"] for k in st] + [ad["p99_ms"]], "k^",
             label="p99 ms")
    ax2.set_ylabel("p99 ms")
    sec.plot("real_loop", fig, "Loop device: throughput (bars) and p99 latency (triangles)")
    return out
