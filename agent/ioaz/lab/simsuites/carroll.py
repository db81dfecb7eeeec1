"""Carroll's RAID thesis on the disk models: queue depth, deadline's expiries against
FIFO and SSTF, CFQ's idling on RAID."""
from __future__ import annotations

from typing import Any

from ioaz.lab.report import Report, figure
from ioaz.lab.simsuites.common import Opts, run_sim
from ioaz.lab.simsuites.prose import prose
from ioaz.sim.workloads import (
    Phase,
    ProcSpec,
    Workload,
    named_workload,
)


def _async_readers(depth: int, dur: float, nproc: int = 4) -> Workload:
    """nproc processes keeping `depth` 4 KiB random reads each in flight over the whole
    72 GB disk: the queue (and the latency) grows with depth."""
    procs = [ProcSpec(name=f"reader-{i}", op="read", pattern="rand", size_kb=4, sync=False,
                      depth=depth, region_gb=17.0 * i, span_gb=17.0) for i in range(nproc)]
    return Workload(f"async-readers-{nproc}x{depth}", [Phase(dur, procs)])


def _raid_load(dur: float) -> Workload:
    """Eight processes, 16 KiB random I/O, 70% reads, 8 in flight each (64 outstanding)."""
    procs = [ProcSpec(name=f"db-{i}", op="mixed", read_fraction=0.7, pattern="rand",
                      size_kb=16, sync=False, depth=8, region_gb=20.0 * i, span_gb=20.0)
             for i in range(8)]
    return Workload("raid-mixed-8x8", [Phase(dur, procs)])


def suite_carroll(rep: Report, o: Opts) -> dict[str, Any]:
    from ioaz.actuate.knob_rules import deadline_expiries

    out: dict[str, Any] = {}
    dev = "carroll-hp72"
    dur = o.dur(20.0, 4.0)
    # 6.1: SSTF and SCAN (V(R) with rev_penalty 1 and 0) near-identical
    wls = ["ioaz-4-rand-read", "ioaz-16-rand-read", "database", "postmark"]
    sstf_scan: list[dict[str, Any]] = []
    for w in wls:
        a = run_sim(dev, "sstf", named_workload(w, dur))
        b = run_sim(dev, "scan", named_workload(w, dur))
        sstf_scan.append({"workload": w, "sstf_mb_s": a.throughput_mb_s,
                          "scan_mb_s": b.throughput_mb_s,
                          "ratio": a.throughput_mb_s / max(b.throughput_mb_s, 1e-12)})
    a = run_sim(dev, "sstf", _async_readers(32, dur))
    b = run_sim(dev, "scan", _async_readers(32, dur))
    sstf_scan.append({"workload": "4 async readers x 32", "sstf_mb_s": a.throughput_mb_s,
                      "scan_mb_s": b.throughput_mb_s,
                      "ratio": a.throughput_mb_s / max(b.throughput_mb_s, 1e-12)})
    out["sstf_vs_scan"] = sstf_scan
    worst = max(abs(r["ratio"] - 1) for r in sstf_scan)
    words = prose("carroll")
    rep.summary.append(words("summary_sstf_scan", worst=f"{worst:.1%}", device=dev))

    # 5.1.1: deadline degrades to FIFO once latency passes its expiry; the expiry-scaling rule
    depths = [4, 64, 256] if o.quick else [1, 4, 16, 32, 64, 128, 256]
    b1 = {"fifo_batch": 1}
    sweep = []
    for d in depths:
        row: dict[str, Any] = {"outstanding": 4 * d}
        for s in ("fifo", "deadline", "sstf"):
            row[s] = run_sim(dev, s, _async_readers(d, dur)).iops
        r = run_sim(dev, "deadline", _async_readers(d, dur), tunables=b1, keep_windows=True)
        row["deadline_b1"] = r.iops
        row["deadline_p99_ms"] = (r.p99_latency_s or 0) * 1e3
        # what ioazd sees: the probe's p99 (submit to completion), per window
        win_p99 = max((w.p99_latency_s or 0.0) for w in r.windows) if r.windows else None
        row["probe_p99_ms"] = (win_p99 or 0) * 1e3
        rule = deadline_expiries(win_p99)
        app = deadline_expiries(r.p99_latency_s)
        row["rule_read_expire_ms"] = rule.get("read_expire")
        row["app_read_expire_ms"] = app.get("read_expire")
        for key, exp in (("deadline_b1_rule", rule), ("deadline_b1_app", app)):
            row[key] = run_sim(dev, "deadline", _async_readers(d, dur), tunables={
                **b1, "read_expire_ms": exp["read_expire"],
                "write_expire_ms": exp["write_expire"]}).iops if exp else row["deadline_b1"]
        sweep.append(row)
    out["deadline_fifo"] = sweep
    deep = sweep[-1]
    vs_sstf = {k: f"{deep[k] / deep['sstf']:.2f}" for k in (
        "fifo", "deadline", "deadline_b1", "deadline_b1_app", "deadline_b1_rule")}
    rep.summary.append(words("summary_deadline", outstanding=deep["outstanding"],
                             p99_ms=f"{deep['deadline_p99_ms']:.0f}", **vs_sstf))

    # 5.4: controller queue depth on RAID
    qds = [1, 8, 32] if o.quick else [1, 2, 4, 8, 16, 32, 64, 128]
    raid: dict[str, dict[int, float]] = {}
    for arr in ("raid0-carroll", "raid5-carroll", "raid10-carroll"):
        raid[arr] = {q: run_sim(arr, "deadline", _raid_load(dur), queue_depth=q).throughput_mb_s
                     for q in qds}
    out["raid_queue_depth"] = raid
    best_q = {a: max(v, key=lambda q: v[q]) for a, v in raid.items()}
    rep.data["carroll"] = out

    sec = rep.section(words.title)
    sec.text(words("sstf_scan", device=dev, seconds=f"{dur:g}"))
    sec.table(words.headers("sstf_scan_table"),
              [(r["workload"], r["sstf_mb_s"], r["scan_mb_s"], r["ratio"]) for r in sstf_scan],
              digits=3)
    sec.text(words("deadline"))
    sec.table(words.headers("deadline_table"),
              [(r["outstanding"], r["fifo"], r["sstf"], r["deadline"], r["deadline_b1"],
                r["deadline_p99_ms"], r["probe_p99_ms"], r["rule_read_expire_ms"],
                r["deadline_b1_rule"], r["app_read_expire_ms"], r["deadline_b1_app"])
               for r in sweep], digits=1)
    fig, ax = figure()
    xs = [r["outstanding"] for r in sweep]
    for k, lab in (("fifo", "FIFO"), ("sstf", "SSTF"), ("deadline", "deadline (batch 16)"),
                   ("deadline_b1", "deadline (batch 1, 500 ms)"),
                   ("deadline_b1_app", "deadline (batch 1, expiry 2x app p99)")):
        ax.plot(xs, [r[k] for r in sweep], marker="o", label=lab)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("outstanding requests")
    ax.set_ylabel("IOPS")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    sec.plot("carroll_deadline_fifo", fig, words("deadline_plot", device=dev))
    sec.text(words("raid", seconds=f"{dur:g}", best_depths=", ".join(
        words("raid_best_depth", array=a, depth=q) for a, q in best_q.items())))
    sec.table(words.headers("raid_table", depths=" | ".join(f"qd {q}" for q in qds)),
              [(arr, *[v[q] for q in qds]) for arr, v in raid.items()])
    fig, ax = figure()
    for arr, v in raid.items():
        ax.plot(qds, [v[q] for q in qds], marker="o", label=arr)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("controller queue depth")
    ax.set_ylabel("MB/s")
    ax.legend()
    ax.grid(alpha=0.3)
    sec.plot("carroll_raid_queue_depth", fig, words("raid_plot"))
    return out


