"""The report of `ioaz-lab bench testbed`: tables, targets and plots from collect()'s numbers.

Ratios are paired by round (a contender against the best static scheduler of the same round and
workload, run minutes apart), so the drift of this shared host between rounds cancels; intervals
are 95% t-intervals over the rounds.
"""
from __future__ import annotations

import math
import statistics
from typing import Any

from ioaz.lab.report import Report, Section, figure
from ioaz.lab.testbench import host_load, measure
from ioaz.lab.testbench.bench import (
    DRY,
    RULES,
    STATIC_CONTENDERS,
    dry_base,
    is_dry,
    is_static,
    scheduler_of,
)
from ioaz.lab.testbench.guest_bench import late_of
from ioaz.lab.testbench.workloads import BY_NAME

Table = dict[str, dict[str, list[dict[str, Any]]]]


def values(rows: list[dict[str, Any]], key: str) -> list[float]:
    return [r[key] for r in rows if r.get(key) is not None]


def by_round(rows: list[dict[str, Any]], key: str) -> dict[int, float]:
    return {r["round"]: r[key] for r in rows if r.get(key) is not None}


def paired(a: list[dict[str, Any]], b: list[dict[str, Any]], key: str) -> measure.Summary:
    return ratio_by_round(by_round(a, key), by_round(b, key))


def ratio_by_round(ra: dict[int, float], rb: dict[int, float]) -> measure.Summary:
    common = sorted(set(ra) & set(rb))
    return measure.ratio_ci([ra[k] for k in common], [rb[k] for k in common])


def best_static(runs: dict[str, list[dict[str, Any]]]) -> str | None:
    st = {c: statistics.fmean(values(rs, "mb_s")) for c, rs in runs.items()
          if is_static(c) and values(rs, "mb_s")}
    return max(st, key=lambda c: st[c]) if st else None


def oracle(runs: dict[str, list[dict[str, Any]]], phases: tuple[str, ...]
           ) -> tuple[dict[int, float], dict[str, str]]:
    """The per-phase oracle of a mix, per round: each phase under the static scheduler that was
    best on that phase (over all rounds), no cost to switch. Returns round -> MB/s, choices."""
    choice = {}
    for p in phases:
        per = {c: statistics.fmean([r["phases"][p] for r in rs if r.get("phases")])
               for c, rs in runs.items()
               if is_static(c) and any(r.get("phases") for r in rs)}
        choice[p] = max(per, key=lambda c: per[c])
    rounds: dict[int, float] = {}
    for rnd in sorted({r["round"] for rs in runs.values() for r in rs}):
        got = []
        for p in phases:
            rows = [r for r in runs[choice[p]] if r["round"] == rnd and r.get("phases")]
            if rows:
                got.append(rows[0]["phases"][p])
        if len(got) == len(phases):
            rounds[rnd] = statistics.fmean(got)
    return rounds, choice


def per_phase(rows: list[dict[str, Any]], best: list[dict[str, Any]], phases: tuple[str, ...]
              ) -> dict[str, dict[str, float]]:
    """A mix's contender phase by phase (fio's stonewalled groups): MB/s and p99, each also as a
    ratio to the best static's same phase, paired by round. The mix's own p99 pools every
    phase's requests, so it says little more than which phase was slowest."""
    def phase(rs: list[dict[str, Any]], key: str, p: str) -> dict[int, float]:
        return {r["round"]: r[key][p] for r in rs if p in (r.get(key) or {})}

    out: dict[str, dict[str, float]] = {}
    for p in phases:
        mb, lat = phase(rows, "phases", p), phase(rows, "phase_p99", p)
        out[p] = {"mb_s": measure.summarize(list(mb.values())).mean,
                  "vs_best": ratio_by_round(mb, phase(best, "phases", p)).mean,
                  "p99_ms": measure.summarize(list(lat.values())).mean,
                  "p99_vs_best": ratio_by_round(lat, phase(best, "phase_p99", p)).mean}
    return out


# below this share of the run with a request in flight, under every contender, a workload is
# not the disk's: its report says so (postmark's small file set lives in the page cache)
DISK_BOUND = 0.25


def _num(x: float | None, fmt: str) -> str:
    """A number, or "-" where there is none (dd reports no latency: its p99 is nan)."""
    return "-" if x is None or math.isnan(x) else format(x, fmt)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _cpu(whole: float | None, window: float | None) -> str:
    """ioazd's CPU, and its window thread's share of it where the run recorded that."""
    return _pct(whole) + ("" if whole is None or window is None
                          else f" ({_pct(window)} windows)")


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def _unranked(rs: list[dict[str, Any]]) -> dict[str, Any]:
    mb = measure.summarize(values(rs, "mb_s"))
    return {"mb_s": mb.mean, "mb_s_ci": mb.ci95,
            "p99_ms": measure.summarize(values(rs, "p99_ms")).mean,
            "failed": sum(1 for r in rs if r["rc"] != 0),
            "bfq": [(r["round"], r.get("bfq"), r.get("mb_s")) for r in rs]}


def analyse(table: Table) -> dict[str, Any]:
    out: dict[str, Any] = {"workloads": {}}
    contenders = sorted({c for runs in table.values() for c in runs},
                        key=lambda c: (c.startswith("ioazd"),
                                       STATIC_CONTENDERS.index(scheduler_of(c))
                                       if scheduler_of(c) in STATIC_CONTENDERS else 0, c))
    out["contenders"] = contenders
    norm: dict[str, list[float]] = {c: [] for c in contenders}
    for w, runs in table.items():
        best = best_static(runs)
        if best is None:   # no static contender ran it (a diagnostic): figures, no ratios
            out.setdefault("unranked", {})[w] = {c: _unranked(rs) for c, rs in runs.items()}
            continue
        res: dict[str, Any] = {"best_static": best, "family": BY_NAME[w].family,
                               "contenders": {}}
        for c, rs in runs.items():
            mb = measure.summarize(values(rs, "mb_s"))
            p99 = measure.summarize(values(rs, "p99_ms"))
            disk = measure.summarize(values(rs, "disk_mb_s"))
            vs = paired(rs, runs[best], "mb_s")
            p99_vs = paired(rs, runs[best], "p99_ms")
            res["contenders"][c] = {
                "mb_s": mb.mean, "mb_s_ci": mb.ci95, "n": mb.n, "p99_ms": p99.mean,
                "p99_ci": p99.ci95, "disk_mb_s": disk.mean, "vs_best": vs.mean,
                "cpu_busy": _mean(values(rs, "cpu_busy")),
                "disk_busy": _mean(values(rs, "disk_busy")),
                "host_others": _mean(values(rs, "host_others")),
                "ioazd_cpu": _mean(values(rs, "ioazd_cpu")),
                "ioazd_window_cpu": _mean(values(rs, "ioazd_window_cpu")),
                "vs_best_ci": vs.ci95, "p99_vs_best": p99_vs.mean,
                "failed": sum(1 for r in rs if r["rc"] != 0)}
            if c in norm and vs.n:
                norm[c].append(vs.mean)
            if any(r.get("timeline") is not None for r in rs):
                res["contenders"][c]["timelines"] = [r.get("timeline") for r in rs]
            if any(r.get("lags") for r in rs):
                res["contenders"][c]["lags"] = [r["lags"] for r in rs if r.get("lags")]
            counters = [r["sched_counters"] for r in rs if r.get("sched_counters")]
            if counters:   # the elevator's own, at the workload's end (stream's waits...)
                res["contenders"][c]["sched_counters"] = {
                    k: statistics.fmean(x.get(k, 0) for x in counters) for k in counters[0]}
            if any(r.get("scheduler_at_end") for r in rs):
                res["contenders"][c]["at_end"] = [r.get("scheduler_at_end") for r in rs]
            if any(r.get("bfq") for r in rs):
                res["contenders"][c]["bfq"] = [(r["round"], r.get("bfq"), r.get("mb_s"))
                                               for r in rs]
        if BY_NAME[w].phases:
            for c, rs in runs.items():
                res["contenders"][c]["phases"] = per_phase(rs, runs[best], BY_NAME[w].phases)
        # the per-phase oracle chooses among static schedulers: under one it is that one
        if BY_NAME[w].phases and sum(is_static(c) for c in runs) >= 2:
            rounds, choice = oracle(runs, BY_NAME[w].phases)
            res["oracle_choice"] = choice
            res["oracle_mb_s"] = statistics.fmean(rounds.values()) if rounds else None
            for c in runs:
                if c.startswith("ioazd"):
                    s = ratio_by_round(by_round(runs[c], "mb_s"), rounds)
                    res["contenders"][c]["vs_oracle"] = s.mean
                    res["contenders"][c]["vs_oracle_ci"] = s.ci95
        out["workloads"][w] = res
    out["mean_vs_best"] = {c: statistics.fmean(v) for c, v in norm.items() if v}
    # the same sum within each family: sequential and random apart, as HDD results are judged
    by_family: dict[str, dict[str, list[float]]] = {}
    for res in out["workloads"].values():
        for c, m in res["contenders"].items():
            if not math.isnan(m["vs_best"]):
                by_family.setdefault(res["family"], {}).setdefault(c, []).append(m["vs_best"])
    out["mean_vs_best_by_family"] = {
        fam: {c: statistics.fmean(v) for c, v in cs.items()} for fam, cs in by_family.items()}
    # the control: ioazd observing only, against the scheduler it leaves in place (the
    # kernel default's under plain ioazd-dry); one entry per workload and control
    out["observe_cost"] = {}
    for w, runs in table.items():
        for c in filter(is_dry, runs):
            base = dry_base(c) or "mq-deadline"
            if base in runs:
                r = paired(runs[c], runs[base], "mb_s")
                key = w if c == DRY else f"{w} ({c})"
                out["observe_cost"][key] = {"ratio": r.mean, "ci": r.ci95}
    out["targets"] = targets(out)
    return out


def targets(a: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target, measured, met) for the issue's targets that this run's workloads cover."""
    rows: list[tuple[str, str, str]] = []
    ws = a["workloads"]
    for name in (c for c in a["contenders"] if c.startswith("ioazd") and not is_dry(c)):
        ok, worst, cells = True, None, []
        for w, r in ws.items():
            me = r["contenders"].get(name)
            if not me:
                continue
            # a workload without a latency figure (dd, pgbench, dbench, postmark) has a NaN p99
            p99 = me["p99_vs_best"]
            fine = me["vs_best"] >= 1.0 and (p99 is None or math.isnan(p99) or p99 <= 1.10)
            ok = ok and fine
            if worst is None or me["vs_best"] < worst[1]:
                worst = (w, me["vs_best"])
            cells.append(f"{w} {me['vs_best']:.2f}")
        if worst:
            rows.append((f"{name} >= best static on every workload (p99 within +10%)",
                         f"worst {worst[0]} {worst[1]:.2f}x; " + ", ".join(cells),
                         "met" if ok else "not met"))
        for w, r in ws.items():
            me = r["contenders"].get(name, {})
            if "vs_oracle" in me:
                rows.append((f"{name} >= 95% of the per-phase oracle ({w})",
                             f"{me['vs_oracle']:.2f} ± {me['vs_oracle_ci']:.2f}",
                             "met" if me["vs_oracle"] >= 0.95 else "not met"))
        mean = a["mean_vs_best"]
        for rule, sched in RULES.items():
            if name in mean and sched in mean:
                rows.append((f"{name} ahead of the {rule} ({sched}) over all workloads",
                             f"{mean[name]:.3f} vs {mean[sched]:.3f} (mean x best static)",
                             "met" if mean[name] > mean[sched] else "not met"))
        z = ws.get("zero", {}).get("contenders", {})
        if name in z and "mq-deadline" in z:
            gain = z[name]["mb_s"] / z["mq-deadline"]["mb_s"]
            rows.append((f"disk zeroing: {name} >= 1.04x the kernel default",
                         f"{gain:.3f}x", "met" if gain >= 1.04 else "not met"))
    pr = ws.get("par-read", {}).get("contenders", {})
    if "stream" in pr and "mq-deadline" in pr:
        g = pr["stream"]["mb_s"] / pr["mq-deadline"]["mb_s"]
        rows.append(("par-read: stream >= 2.5x mq-deadline", f"{g:.2f}x",
                     "met" if g >= 2.5 else "not met"))
    return rows


def _phase_table(s: Section, contenders: list[str], r: dict[str, Any]) -> None:
    s.text("Phase by phase (fio's stonewalled groups): the mix's p99 above pools the requests "
           "of every phase, so it is mostly its slowest phase's; here each phase has its own, "
           f"and ratios are to {r['best_static']}'s same phase.")
    rows = []
    for p in next((m["phases"] for m in r["contenders"].values() if m.get("phases")), {}):
        for c in contenders:
            got = r["contenders"].get(c, {}).get("phases", {}).get(p)
            if got:
                rows.append((p, c, _num(got["mb_s"], ".2f"), _num(got["vs_best"], ".3f"),
                             _num(got["p99_ms"], ".1f"), _num(got["p99_vs_best"], ".3f")))
    s.table(["phase", "contender", "MB/s", "x best static", "p99 ms", "p99 x best"], rows)


def _disks_text(meta: dict[str, Any]) -> str:
    raid = meta.get("raid")
    if not raid:
        return f"two emulated {meta['model']} disks"
    return (f"the raw-disk workloads on an md RAID {raid['level']} (mdadm, chunk "
            f"{raid['chunk_kb']} KiB, created with --assume-clean: no initial sync) of "
            f"{raid['members']} emulated {meta['model']} disks, each static contender set on "
            f"every member and ioazd managing each member on its own, the file system on one more")


def write(rep: Report, a: dict[str, Any], meta: dict[str, Any]) -> None:
    rep.data["testbed"] = {"meta": meta, "analysis": a}
    for t, got, met in a["targets"]:
        rep.summary.append(f"{t}: {got} ({met})")
    for fam, means in a.get("mean_vs_best_by_family", {}).items():
        n = sum(1 for r in a["workloads"].values() if r["family"] == fam)
        rep.summary.append(
            f"mean x best static over the {n} {fam} workload{'s' if n != 1 else ''}: "
            + ", ".join(f"{c} {means[c]:.3f}" for c in a["contenders"] if c in means))
    for w, r in a["workloads"].items():
        for c, m in r["contenders"].items():
            if c.startswith("ioazd") and not is_dry(c) and m.get("phases"):
                rep.summary.append(
                    f"{w}, {c} phase by phase x {r['best_static']} (MB/s; p99): " + ", ".join(
                        f"{p} {_num(x['vs_best'], '.2f')}; {_num(x['p99_vs_best'], '.2f')}"
                        for p, x in m["phases"].items()))
    if a.get("observe_cost"):
        rep.summary.append(
            "what observing alone costs in this guest (ioazd dry run x the scheduler it "
            "leaves in place, the kernel default unless named): "
            + ", ".join(f"{w} {c['ratio']:.2f} ± {c['ci']:.2f}"
                        for w, c in a["observe_cost"].items()))
    sec = rep.section("How this was run")
    if meta.get("command"):
        sec.text(f"`{meta['command']}`, started {meta.get('started')}, "
                 f"{meta.get('wall_s', 0) / 60:.0f} min.")
    qd = meta.get("queue_depth")
    sec.text(
        f"Debian 12 guest, kernel {meta.get('guest_kernel', meta['kernel'])}, under qemu TCG "
        f"with {meta.get('cpus', 2)} vCPU{'s' if meta.get('cpus', 2) != 1 else ''}; "
        f"drive queue depth {qd if qd else 'the kernel default (32 on AHCI)'}; "
        f"{_disks_text(meta)} (testbed/modeldisk.py: the simulator's model served "
        f"in real time over NBD, VM path credit {meta['path_credit_us']} us); {meta['rounds']} "
        f"rounds, every contender once per workload per round, the order rotated each round and "
        f"reversed every other one; timed runs {meta['runtime_s']:g} s, mix phases "
        f"{meta['phase_s']:g} s; page cache dropped before every run. Contenders: the static "
        "schedulers (set through ioaz's actuator and put back after each run) and ioazd with "
        "the shipped configuration (deploy/ioaz.yaml, goal in its name when not the default), "
        "started from the kernel's default at each run's start and stopped at its end (its "
        "idle policy sets bfq on a disk with nothing in flight when it starts, before the "
        "workload; `-noidle` contenders have none)"
        + ("; lateN@STATIC: the kernel's default for the run's first N s, then STATIC, set as "
           "the static contenders are (never a best static); primedN@STATIC: the same, the "
           "switch made by a process that reads blocks of the disk through it and one right "
           "after it, then exits"
           if any(late_of(c) for c in a["contenders"]) else "")
        + ". The kernel default, the bfq rule and kyber-everywhere are the mq-deadline, bfq "
        "and kyber rows. Ratios are to the best static scheduler of the workload, paired by round; "
        "± is the 95% interval over the rounds. Disk busy: the share of the run the "
        "workload's disk had a request in flight (the io_ticks of its block-layer stat). Guest CPU "
        "busy: the share of the guest's "
        "vCPUs not idle (nor waiting for the disk) over the run, from /proc/stat; ioazd's CPU: "
        "its process's user and system time over the run, as a share of one vCPU (the vCPUs "
        "share one host thread under single-threaded TCG), in brackets its main thread's, "
        "which runs the windows (the rest is the probe's sampler, the API and the metrics). "
        "Nothing else ran in the guest. "
        "The host is "
        "a shared 2-core machine running qemu and the two model disk servers; beside them, as "
        f"told: {meta.get('beside') or 'nothing told'}; "
        f"{host_load.describe(meta.get('host')) if 'host' in meta else 'not measured'}. "
        "Host's others: the share of the host's CPUs that processes other than the testbed's, "
        "and the kernel's own work, took during the contender's runs (sampled every "
        f"{host_load.PERIOD_S:g} s from /proc).")
    for fam in ("mixed", "seq", "rand"):
        ws = {w: r for w, r in a["workloads"].items() if r["family"] == fam}
        if not ws:
            continue
        s = rep.section(f"{fam} workloads")
        for w, r in ws.items():
            s.text(f"**{w}**: {BY_NAME[w].what}. Best static: {r['best_static']}"
                   + (f"; per-phase oracle {r['oracle_mb_s']:.1f} MB/s choosing "
                      + ", ".join(f"{p}: {c}" for p, c in r["oracle_choice"].items())
                      if r.get("oracle_mb_s") else
                      "; no per-phase oracle: one static scheduler ran" if BY_NAME[w].phases
                      else "") + ".")
            # a workload counted by the disk's bytes has its figure in the first column already
            disk_col = BY_NAME[w].figure != "disk"
            rows = []
            for c in a["contenders"]:
                m = r["contenders"].get(c)
                if not m:
                    continue
                rows.append((c, f"{m['mb_s']:.2f} ± {m['mb_s_ci']:.2f}",
                             f"{m['vs_best']:.3f} ± {m['vs_best_ci']:.3f}",
                             _num(m["p99_ms"], ".1f"), _num(m["p99_vs_best"], ".3f"),
                             *([m["disk_mb_s"]] if disk_col else []),
                             m.get("vs_oracle"), _pct(m.get("disk_busy")),
                             _pct(m.get("cpu_busy")), _pct(m.get("host_others")),
                             _cpu(m.get("ioazd_cpu"), m.get("ioazd_window_cpu")),
                             m["failed"]))
            s.table(["contender", BY_NAME[w].unit, "x best static", "p99 ms", "p99 x best",
                     *(["disk MB/s"] if disk_col else []), "x oracle", "disk busy",
                     "guest CPU busy", "host's others",
                     "ioazd's CPU", "failed"], rows, digits=3)
            busy = [m.get("disk_busy") for m in r["contenders"].values()]
            if busy and all(b is not None and b < DISK_BOUND for b in busy):
                s.text(f"The disk was busy at most {_pct(max(busy))} of the run under every "
                       "contender: the workload is bound elsewhere (the guest's CPU, the page "
                       "cache), so its ratios are mostly the rounds' noise, not the schedulers'.")
            if BY_NAME[w].phases:
                _phase_table(s, a["contenders"], r)
            counted = {c: m["sched_counters"] for c, m in r["contenders"].items()
                       if m.get("sched_counters")}
            if counted:
                names = sorted({k for x in counted.values() for k in x})
                s.text("The elevator's debugfs counters on the disk when the workload ended "
                       "(since it was set; mean of the rounds):")
                s.table(["contender", *names],
                        [(c, *(f"{x.get(k, 0):.0f}" for k in names))
                         for c, x in counted.items()])
            for c, m in r["contenders"].items():
                for i, tl in enumerate(m.get("timelines") or []):
                    if tl:
                        s.text(f"{c} round {i}: " + ", ".join(map(_timeline_entry, tl)))
                if m.get("lags"):
                    _lag_table(s, c, m["lags"])
                _bfq_lines(s, w, c, m.get("bfq") or [])
                if meta.get("raid"):
                    for i, end in enumerate(m.get("at_end") or []):
                        if end:
                            s.text(f"{c} round {i}, each disk's scheduler when the workload "
                                   "ended: " + ", ".join(f"{d} {x}" for d, x in end.items()))
    for w, cs in a.get("unranked", {}).items():
        s = rep.section(f"{w}, no static contender")
        s.text(f"**{w}**: {BY_NAME[w].what}. No static contender ran it, so no ratios.")
        s.table(["contender", BY_NAME[w].unit, "p99 ms", "failed"],
                [(c, f"{m['mb_s']:.2f} ± {m['mb_s_ci']:.2f}", _num(m["p99_ms"], ".1f"),
                  m["failed"]) for c, m in cs.items()])
        for c, m in cs.items():
            _bfq_lines(s, w, c, m["bfq"])
    _plot(rep, a, float(meta["phase_s"]))


def _bfq_lines(s: Section, w: str, c: str, rounds: list[Any]) -> None:
    for rnd, q, mb_s in rounds:
        if q:
            s.text(f"{c} round {rnd} ({_num(mb_s, '.1f')} {BY_NAME[w].unit}), "
                   f"bfq's trace: {_bfq_queues(q)}")


def _bfq_queues(q: dict[str, Any]) -> str:
    """A run's bfq queues in a line: when they were created, merged and split (bfq_queues)."""
    made = q["created"]
    text = (f"{len(made)} synchronous queues created, "
            + ", ".join(f"{pid} at {t:g} s" for pid, t in made[:10])
            + (" ..." if len(made) > 10 else ""))
    merges = q["merged"]
    text += (f"; {len(merges)} merged (" + ", ".join(
        f"{'a shared queue' if pid == 'SHARED-' else pid} at {t:g} s, wr_busy {busy}"
        for t, pid, busy in merges) + ")") if merges else "; none merged"
    text += (f"; split {len(q['split'])} times, the first at {q['split'][0]:g} s"
             if q["split"] else "; none split within the trace (bfq never splits a stable merge)")
    return text


def _timeline_entry(e: dict[str, Any]) -> str:
    if e["event"] == "trial":
        gain = "" if e.get("gain") is None else f" {100 * e['gain']:+.0f}%"
        return f"{e['t']:g} s trial of {e['policy']} {e['reason']}{gain}"
    when = f"{-e['t']:g} s before the start" if e["t"] < 0 else f"{e['t']:g} s"
    return f"{when} {e['to']} ({e['policy']}, {e['reason']})"


def _lag_table(s: Section, contender: str, rounds: list[list[dict[str, Any]]]) -> None:
    """Per phase, in each round: when it began, and how many seconds after that ioazd's windows
    first showed the class the phase settled on, its verdict, and that policy in force
    ("-": not within the phase)."""
    def secs(key: str, i: int) -> str:
        return ", ".join("-" if r[i].get(key) is None else f"{r[i][key]:g}" for r in rounds)
    rows = []
    for i, ph in enumerate(rounds[0]):
        same = all(r[i]["class"] == ph["class"] and r[i]["verdict"] == ph["verdict"]
                   for r in rounds)
        rows.append((ph["phase"], secs("start_s", i),
                     f"{ph['class']}" + ("" if same else " (not in every round)"),
                     ph["verdict"], secs("class_s", i), secs("verdict_s", i),
                     secs("in_force_s", i)))
    s.text(f"{contender}, switch lags (`ioazd --verbose`; rounds in order): when each phase "
           "began (s from the mix's start: fio's `date` stamp of its first job), and the "
           "seconds from then until ioazd's windows first showed the class the phase settled "
           "on, that class's verdict, and the verdict in force (the settled class and verdict: "
           "the most common of the phase's second half, shown for round 0). A window ends "
           "each second, so the class shows at the earliest one window after the start.")
    s.table(["phase", "began at s", "class", "verdict", "class after s", "verdict after s",
             "in force after s"], rows)


def write_sim(rep: Report, cmp: dict[str, Any], queue_depth: int | None, tags: int) -> None:
    """The simulator beside the kernel, on the workloads that have a simulator twin."""
    from ioaz.sim.schedulers import blk_mq_nr_requests

    rep.data["testbed_sim"] = {"queue_depth": queue_depth, "tags": tags, "compare": cmp}
    if not cmp:
        return
    same = sum(1 for r in cmp.values() if r["same_winner"] and not r.get("sim_blind"))
    blind = sum(1 for r in cmp.values() if r.get("sim_blind"))
    within = sum(r["ratios_within_20pct"] for r in cmp.values())
    n = sum(r["n"] for r in cmp.values())
    rep.summary.append(
        f"simulator against kernel: the same winner on {same} of {len(cmp)} workloads "
        f"(target 80%: {'met' if same >= 0.8 * len(cmp) else 'not met'}"
        + (f"; {blind} where the simulator saw every scheduler alike and the kernel did not"
           if blind else "") + f"); ratios to the "
        f"winner within 20% for {within} of {n} scheduler-workload pairs")
    sec = rep.section("The simulator against the kernel")
    sec.text(f"The same workloads on the same model in the simulator (sim/engine.py, drive "
             f"queue depth {queue_depth}, as in the guest, and the guest kernel's request "
             f"limits for its {tags} command slots: none holds {tags} requests, an elevator "
             f"{blk_mq_nr_requests(tags)('deadline')}, whatever the drive's queue depth), "
             "each kernel scheduler by its "
             "stand-in: mq-deadline by deadline, bfq by cfq with bfq's stable merging of "
             "processes that start together (sim/schedulers/cfq.py), stream by stream-vr "
             "(stream-tuned by stream-vr with the same knobs). A mix's phases count as "
             "workloads of their own. The winners agree when the kernel's winner is within 2% "
             "of the simulator's best. Only the raw-disk fio workloads have a twin, each "
             "process O_DIRECT as in the guest: the simulator has no page cache or file "
             "system. Nor has it the VM path: "
             "where the guest pays its round trip on every cache hit (small synchronous "
             "requests, par-read's 4 KiB), the ratios differ for that reason "
             "(docs/reports/sim-path-2026-11-27/).")
    rows = []
    for w, r in cmp.items():
        for c, (real, sim) in r["ratios"].items():
            rows.append((w, c, real, sim, "yes" if abs(real - sim) <= 0.2 * real else "no"))
        rows.append((w, "winner", r["real_winner"], r["sim_winner"],
                     "sim blind" if r.get("sim_blind") else
                     "same" if r["same_winner"] else "differs"))
    sec.table(["workload", "scheduler", "kernel x winner", "sim x winner", "within 20%"],
              rows, digits=2)


# static schedulers in cool colours, ioazd in orange (its dry-run control hatched)
_STATIC_COLOURS = ("tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:gray", "tab:olive",
                   "tab:cyan", "tab:pink", "tab:red")


def _style(contenders: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    statics = [c for c in contenders if not c.startswith("ioazd")]
    for i, c in enumerate(statics):
        out[c] = {"color": _STATIC_COLOURS[i % len(_STATIC_COLOURS)]}
    for c in contenders:
        if c.startswith("ioazd"):
            out[c] = {"color": "tab:orange", "edgecolor": "k",
                      **({"hatch": "//"} if is_dry(c) else {})}
    return out


def _plot(rep: Report, a: dict[str, Any], phase_s: float) -> None:
    ws = list(a["workloads"])
    cs = a["contenders"]
    style = _style(cs)
    fig, ax = figure(max(7.0, 1.1 * len(ws)), 3.8)
    width = 0.8 / len(cs)
    for i, c in enumerate(cs):
        xs = [j + (i - len(cs) / 2) * width for j in range(len(ws))]
        ys = [a["workloads"][w]["contenders"].get(c, {}).get("vs_best", 0) for w in ws]
        es = [a["workloads"][w]["contenders"].get(c, {}).get("vs_best_ci", 0) for w in ws]
        ax.bar(xs, ys, width, yerr=es, label=c, **style[c])
    ax.set_xticks(range(len(ws)))
    ax.set_xticklabels(ws, rotation=30, ha="right")
    ax.set_ylabel("throughput x best static")
    ax.axhline(1.0, color="k", lw=0.5)
    ax.legend(fontsize=7, ncol=4)
    rep.section("Plots").plot("testbed_throughput", fig,
                              "Throughput of each contender as a multiple of the best static "
                              "scheduler on that workload (95% intervals)")
    fig, ax = figure(max(7.0, 1.1 * len(ws)), 3.8)
    for i, c in enumerate(cs):
        xs = [j + (i - len(cs) / 2) * width for j in range(len(ws))]
        ys = [a["workloads"][w]["contenders"].get(c, {}).get("p99_vs_best") or 0 for w in ws]
        ax.bar(xs, ys, width, label=c, **style[c])
    ax.set_xticks(range(len(ws)))
    ax.set_xticklabels(ws, rotation=30, ha="right")
    ax.set_ylabel("p99 latency x best static's")
    ax.axhline(1.0, color="k", lw=0.5)
    ax.legend(fontsize=7, ncol=4)
    rep.sections[-1].plot("testbed_p99", fig, "p99 latency as a multiple of the best static "
                          "scheduler's (lower is better; dd has none)")
    for w, r in a["workloads"].items():
        tls = [(c, tl) for c, m in r["contenders"].items() for tl in (m.get("timelines") or [])]
        if not tls or not BY_NAME[w].phases:
            continue
        fig, ax = figure(7.0, 0.6 + 0.5 * len(tls))
        names = sorted({e["to"] for _, tl in tls for e in tl if e["to"]} | {"mq-deadline"})
        end = phase_s * len(BY_NAME[w].phases)
        for k, (c, tl) in enumerate(tls):
            pts = [(0.0, "mq-deadline")] + [(e["t"], e["to"]) for e in tl
                                            if e["event"] == "switch"]
            ax.step([p[0] for p in pts] + [end], [names.index(p[1]) + k * 0.05 for p in pts]
                    + [names.index(pts[-1][1]) + k * 0.05], where="post", label=f"{c} r{k}")
        for i in range(1, len(BY_NAME[w].phases)):
            ax.axvline(i * phase_s, color="grey", lw=0.5, ls=":")
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names)
        ax.set_xlim(0, end)
        ax.set_xlabel("s")
        rep.sections[-1].plot(f"testbed_timeline_{w}", fig,
                              f"ioazd's scheduler over {w}, each round (phases: "
                              + ", ".join(BY_NAME[w].phases) + ")")
