"""Xu & Jiang's stream scheduling: par-read under every scheduler."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ioaz.lab.report import Report, bars, figure
from ioaz.lab.simsuites.common import Opts, run_sim
from ioaz.lab.simsuites.prose import prose
from ioaz.sim.workloads import (
    named_workload,
)


def suite_xujiang(rep: Report, o: Opts) -> dict[str, Any]:
    dur = o.dur(20.0, 5.0)
    dev = "wd500"
    scheds = ["noop", "deadline", "stream"] if o.quick else \
        ["noop", "deadline", "fcfs", "anticipatory", "cfq", "sstf", "stream"]
    res = {s: run_sim(dev, s, named_workload("par-read", dur)) for s in scheds}
    thr = {s: r.throughput_mb_s for s, r in res.items()}
    out: dict[str, Any] = {
        "device": dev, "seconds": dur, "mb_s": thr,
        "stream_vs_deadline": thr["stream"] / thr["deadline"],
        "stream_vs_noop": thr["stream"] / thr["noop"],
        "proc_min_mb_s": {s: r.proc_min_mb_s for s, r in res.items()}}
    think = []
    if not o.quick:
        for t in (0.0, 0.1, 0.2):
            wl = named_workload("par-read-buffered", dur)
            for ph in wl.phases:
                ph.procs = [replace(p, think_ms=t) for p in ph.procs]
            a = run_sim(dev, "stream", wl)
            b = run_sim(dev, "noop", wl)
            think.append({"think_ms": t, "stream": a.throughput_mb_s, "noop": b.throughput_mb_s,
                          "ratio": a.throughput_mb_s / max(b.throughput_mb_s, 1e-12)})
    out["buffered_think"] = think
    rep.data["xujiang"] = out
    words = prose("xujiang")
    rep.summary.append(words("summary", device=dev, stream=f"{thr['stream']:.1f}",
                             vs_deadline=f"{out['stream_vs_deadline']:.2f}",
                             vs_noop=f"{out['stream_vs_noop']:.2f}"))
    sec = rep.section(words.title)
    sec.text(words("intro", device=dev, seconds=f"{dur:g}"))
    sec.table(words.headers("schedulers"),
              [(k, v, v / thr["deadline"], out["proc_min_mb_s"][k]) for k, v in thr.items()])
    if think:
        sec.text(words("buffered"))
        sec.table(words.headers("buffered_table"),
                  [(r["think_ms"], r["stream"], r["noop"], r["ratio"]) for r in think])
    fig, ax = figure()
    bars(ax, list(thr), list(thr.values()), "MB/s", highlight=["stream"])
    ax.set_title(f"par-read on {dev}")
    sec.plot("xujiang_par_read", fig, words("plot"))
    return out


