"""Adaptive ioaz in the simulator against every static scheduler and the per-phase oracle, on the
phase-changing mixes: the runs and their scores (the section itself: adaptive_report.py)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ioaz.lab.report import Report, figure
from ioaz.lab.simsuites.adaptive_plan import PASSES, POLICY_SCHEDULER, START
from ioaz.lab.simsuites.adaptive_report import adaptive_section, adaptive_summary
from ioaz.lab.simsuites.common import TRACE, Opts, run_sim
from ioaz.lab.simsuites.prose import prose
from ioaz.sim.devices import load_device
from ioaz.sim.results import SimResult
from ioaz.sim.workloads import (
    Workload,
    ioaz_category,
    named_workload,
    par_read,
)


def phases_office(phase_s: float = 60.0) -> Workload:
    """A second phase-changing mix: postmark, 8 sequential readers (a backup), a database,
    4 sequential writers."""
    parts = [named_workload("postmark", phase_s), ioaz_category(8, "seq", "read", phase_s),
             named_workload("database", phase_s), ioaz_category(4, "seq", "write", phase_s)]
    return Workload("phases-office", [replace(p.phases[0]) for p in parts])


def phases_contrast(phase_s: float = 20.0) -> Workload:
    """A mix whose phases are won by different schedulers on the model (each phase's winner
    measured alone, before any agent ran on it): par-read (4 interleaved sync readers: stream
    and cfq about 3x deadline), 16 sequential writers (write-back: deadline, vr and stream
    lead on MB/s; stream starves some writers, so noop, cfq and AS lead on the slowest
    process), 16 sequential readers (cfq about 1.2x stream and 4x deadline)."""
    parts = [par_read(phase_s), ioaz_category(16, "seq", "write", phase_s),
             ioaz_category(16, "seq", "read", phase_s)]
    return Workload("phases-contrast", [replace(p.phases[0]) for p in parts])


MIXES = {"phases-office": phases_office, "phases-contrast": phases_contrast}


def _mix(name: str, phase_s: float) -> Workload:
    return MIXES[name](phase_s) if name in MIXES else named_workload(name, phase_s)


GOAL_METRIC = {"throughput": "throughput_mb_s", "mean": "proc_mean_mb_s",
               "min": "proc_min_mb_s"}
ADAPTIVE_DEVICE = "wd500"


# Matrices measured on the simulator's own wd500 model by the IOAZ method (every policy on a
# grid of workloads, the best per class): `ioaz-lab calibrate --model wd500 --workloads 360` then
# `ioaz-lab derive` (sim/matrices/README.md). The grid is ioaz.learn's, not these mixes.
CALIBRATED_DIR = Path(__file__).resolve().parents[2] / "sim" / "matrices"
CALIBRATED_PREFIX = "wd500"


def calibrated_config(directory: Path = CALIBRATED_DIR, prefix: str = CALIBRATED_PREFIX) -> Any:
    """A DecideConfig whose one rule maps every goal to derived matrices (by default the ones
    calibrated on wd500), DIRECTORY/PREFIX-GOAL.yaml as `ioaz-lab derive` writes them, or None
    when one is not there."""
    from ioaz.decide.config import DecideConfig
    from ioaz.decide.matrix import GOALS
    from ioaz.decide.rules import Rule

    files = {g: f"{prefix}-{g}.yaml" for g in GOALS}
    if not all((directory / f).is_file() for f in files.values()):
        return None
    return DecideConfig(matrix_dir=directory, matrix_rules=(Rule(0, files),))


def repeated(wl: Workload, passes: int = PASSES) -> Workload:
    """The mix's phases `passes` times in a row, one simulation (fresh Phase objects)."""
    return Workload(f"{wl.name} x{passes}", [replace(ph) for _ in range(passes)
                                             for ph in wl.phases])


def pass_scores(r: SimResult, wl: Workload, k: int) -> dict[str, Any]:
    """The goals' values over pass k (0-based) of a run of `repeated(wl)`, from that pass alone:
    throughput = the bytes completed within the pass's span over the span (the run's windows,
    each assigned to the span holding its middle; a phase boundary is on a window boundary),
    mean and min over the per-process MB/s of the pass's own processes (pids are given in
    phase order). Per phase the same, for the per-phase oracle."""
    durs = [ph.duration_s for ph in wl.phases]
    if any(d is None for d in durs):
        raise ValueError(f"{wl.name}: a phase without a duration has no fixed span to score")
    spans: list[float] = [float(d) for d in durs if d is not None]
    t0 = k * sum(spans)
    ends, t = [], 0.0
    for w in r.windows:
        t += w.window_s
        ends.append((t - w.window_s / 2, (w.read_bytes_per_s + w.write_bytes_per_s)
                     * w.window_s))
    if not ends or t < (k + 1) * sum(spans) - 1e-6:
        raise ValueError(f"pass {k} of {wl.name} is not covered by the run's windows "
                         "(keep_windows, or fewer passes than asked)")
    vals = [v for _, v in sorted((int(key.split(":")[0]), v) for key, v in r.proc_mb_s.items())]
    first = k * sum(len(ph.procs) for ph in wl.phases)
    phases: list[dict[str, Any]] = []
    for ph, d in zip(wl.phases, spans, strict=True):
        if abs(d / r.windows[0].window_s - round(d / r.windows[0].window_s)) > 1e-9:
            raise ValueError(f"phase '{ph.name}' ({d:g} s) does not end on a window boundary")
        nbytes = sum(b for mid, b in ends if t0 < mid < t0 + d)
        procs = vals[first:first + len(ph.procs)]
        phases.append({"phase": ph.name, "bytes": nbytes, "s": d, "procs": procs,
                       **_goal_values(nbytes, d, procs)})
        t0 += d
        first += len(ph.procs)
    total = sum(p["bytes"] for p in phases)
    return {**_goal_values(total, sum(spans), [v for p in phases for v in p["procs"]]),
            "phases": phases}


def _goal_values(nbytes: float, seconds: float, procs: list[float]) -> dict[str, float]:
    return {"throughput": nbytes / seconds / 1e6,
            "mean": sum(procs) / len(procs) if procs else 0.0,
            "min": min(procs) if procs else 0.0}


def pass_oracle(scores: dict[str, dict[str, Any]], goal: str) -> tuple[float, list[str]]:
    """The per-phase oracle within the same pass: each phase under the static scheduler best
    for it there (that scheduler's own run, so no switch), the phases' values combined as for
    the whole pass. `scores`: scheduler -> pass_scores."""
    n = len(next(iter(scores.values()))["phases"])
    picks = []
    for i in range(n):
        vals_i = {s: float(sc["phases"][i][goal]) for s, sc in scores.items()}
        picks.append(max(vals_i, key=lambda s: vals_i[s]))
    chosen = [scores[s]["phases"][i] for i, s in enumerate(picks)]
    vals = _goal_values(sum(p["bytes"] for p in chosen), sum(p["s"] for p in chosen),
                        [v for p in chosen for v in p["procs"]])
    return vals[goal], picks


def _best(runs: dict[str, SimResult], goal: str) -> str:
    return max(runs, key=lambda name: _metric(runs[name], goal))


def _metric(r: SimResult, goal: str) -> float:
    return float(getattr(r, GOAL_METRIC[goal]))


# goals the adaptive part judges (mixes) and the trace replay's (throughput, latency)
ADAPTIVE_GOALS = ("throughput", "mean", "min", "latency")


def adaptive_device(o: Opts) -> str:
    return o.adaptive_device or ADAPTIVE_DEVICE


def agent_variants(o: Opts) -> dict[str, dict[str, Any]]:
    """The agents compared: name -> AgentChooser settings. `ioaz`: the shipped matrices;
    `ioaz-calibrated`: matrices measured on the device (sim/matrices/DEVICE-GOAL.yaml);
    `ioaz-model`: a model trained on the device (report_models; full runs only, its
    calibration and training take minutes the first time)."""
    dev = adaptive_device(o)
    variants: dict[str, dict[str, Any]] = {"ioaz": {}}
    cal = calibrated_config(CALIBRATED_DIR, dev)
    if cal is not None:
        variants["ioaz-calibrated"] = {"config": cal}
        if not o.quick:
            from ioaz.lab.report_models import trained_models
            variants["ioaz-model"] = {"config": cal,
                                      "models": trained_models(ADAPTIVE_GOALS, device=dev)}
    return variants


def _agent(settings: dict[str, Any], goal: str, dev: str, config: Any = None) -> Any:
    """An AgentChooser for one variant and goal on device model `dev`, starting from START;
    `config` replaces the variant's DecideConfig (the hysteresis sweep)."""
    from ioaz.sim.adaptive import AgentChooser

    d0 = load_device(dev)
    return AgentChooser(goal=goal, size_bytes=d0.capacity_sectors * 512, start_policy=START,
                        config=config if config is not None else settings.get("config"),
                        model=settings.get("models", {}).get(goal))


def suite_adaptive(rep: Report, o: Opts) -> dict[str, Any]:
    dev = adaptive_device(o)
    statics = ["fcfs", "deadline", "anticipatory", "cfq", "vr", "stream"] if o.quick else \
        ["fcfs", "noop", "deadline", "anticipatory", "cfq", "vr", "sstf", "scan", "stream",
         "kyber"]
    mixes = [("phases", 10.0)] if o.quick else \
        [("phases", 10.0), ("phases", 60.0), ("phases-office", 60.0), ("phases-contrast", 20.0)]
    variants = agent_variants(o)
    out: dict[str, Any] = {"device": dev, "start": START, "mixes": [],
                           "variants": list(variants)}
    for mix, phase_s in mixes:
        wl = _mix(mix, phase_s)
        whole = {s: run_sim(dev, s, _mix(mix, phase_s), keep_windows=True) for s in statics}
        per_phase = [{s: run_sim(dev, s, Workload(f"{mix}/{i}", [ph])) for s in statics}
                     for i, ph in enumerate(wl.phases)]
        # steady state: every static scheduler on the mix twice in a row, each pass scored
        twice = {s: run_sim(dev, s, repeated(_mix(mix, phase_s)), keep_windows=True)
                 for s in statics}
        st_pass = {s: [pass_scores(r, wl, k) for k in range(PASSES)] for s, r in twice.items()}
        # min (the slowest process) only where the phases' winners differ: on the other mixes
        # the slowest process is a random reader whatever the scheduler
        goals = ("throughput", "mean", "min") if mix == "phases-contrast" else \
            ("throughput", "mean")
        for goal in goals:
            runs_ad: dict[str, tuple[SimResult, Any]] = {}
            runs_ss: dict[str, tuple[SimResult, Any]] = {}
            for variant in variants:
                for into, w in ((runs_ad, _mix(mix, phase_s)),
                                (runs_ss, repeated(_mix(mix, phase_s)))):
                    ch = _agent(variants[variant], goal, dev)
                    r = run_sim(dev, START, w, chooser=ch, keep_windows=True)
                    into[variant] = (r, ch)
            ad, ch = runs_ad["ioaz"]
            # the per-phase oracle: each phase run alone under its best static scheduler for
            # this goal, no switch cost: an upper bound for any chooser
            picks = [_best(pp, goal) for pp in per_phase]
            runs = [pp[p] for pp, p in zip(per_phase, picks, strict=True)]
            o_thr = sum(r.bytes for r in runs) / sum(r.sim_s for r in runs) / 1e6
            o_procs = [v for r in runs for v in r.proc_mb_s.values()]
            oracle = {"throughput": o_thr, "mean": sum(o_procs) / len(o_procs),
                      "min": min(o_procs)}[goal]
            vals = {s: _metric(r, goal) for s, r in whole.items()}
            best = max(vals, key=lambda s: vals[s])
            entry: dict[str, Any] = {
                "mix": mix, "phase_s": phase_s, "goal": goal, "metric": GOAL_METRIC[goal],
                "static": vals, "best_static": best, "best_static_value": vals[best],
                "oracle": oracle, "oracle_picks": picks,
                "best_static_p99_ms": (whole[best].p99_latency_s or 0) * 1e3}
            for variant, (r, c) in runs_ad.items():
                a = _metric(r, goal)
                entry[variant] = {
                    "value": a, "vs_best_static": a / vals[best] if vals[best] else None,
                    "vs_oracle": a / oracle if oracle else None,
                    "switches": [{k: sw[k] for k in ("t", "from", "to", "drain_s")}
                                 for sw in r.switches],
                    "phases": _phase_choices(wl, phase_s, c, picks, per_phase, goal),
                    "p99_ms": (r.p99_latency_s or 0) * 1e3}
            entry["steady"] = _steady(wl, phase_s, goal, st_pass, runs_ss, per_phase, picks)
            # the default agent's numbers at the top level (what the summary quotes)
            m0 = entry["ioaz"]
            entry.update(adaptive=m0["value"], vs_best_static=m0["vs_best_static"],
                         vs_oracle=m0["vs_oracle"], switches=m0["switches"],
                         phases=m0["phases"])
            out["mixes"].append(entry)
            if goal == "throughput" and mix == mixes[-1][0] and phase_s == mixes[-1][1]:
                _timeline(out, {v: r for v, (r, _) in runs_ad.items()}, whole[best], best, mix,
                          phase_s)
    out["trace"] = _trace_runs(o, statics, variants)
    if not o.quick:
        out["hysteresis"] = _hysteresis_sweep(out, variants)
        out["trials"] = _trial_sweep(out, variants)
    rep.data["adaptive"] = out
    adaptive_summary(rep, out)
    adaptive_section(rep, out, statics)
    return out


def _steady(wl: Workload, phase_s: float, goal: str, st_pass: dict[str, list[dict[str, Any]]],
            runs_ss: dict[str, tuple[SimResult, Any]], per_phase: list[dict[str, SimResult]],
            alone_picks: list[str]) -> dict[str, Any]:
    """The mix's last pass of PASSES in a row: the agent enters it under what it chose for the
    previous pass's last phase; static schedulers and the per-phase oracle scored on the same
    pass. `drift`: how far each static scheduler's last pass is from its first (device state
    left by the previous pass: head position, read cache, the last phase's queue)."""
    k = PASSES - 1
    span = sum(float(ph.duration_s or 0) for ph in wl.phases)
    vals = {s: sc[k][goal] for s, sc in st_pass.items()}
    best = max(vals, key=lambda s: vals[s])
    oracle, picks = pass_oracle({s: sc[k] for s, sc in st_pass.items()}, goal)
    first_oracle, first_picks = pass_oracle({s: sc[0] for s, sc in st_pass.items()}, goal)
    drift = {s: sc[k][goal] / sc[0][goal] - 1 if sc[0][goal] else 0.0
             for s, sc in st_pass.items()}
    out: dict[str, Any] = {
        "pass": k + 1, "passes": PASSES, "static": vals, "best_static": best,
        "best_static_value": vals[best], "oracle": oracle, "oracle_picks": picks,
        "oracle_first_pass": first_oracle, "oracle_first_pass_picks": first_picks,
        "static_drift": drift}
    for variant, (r, ch) in runs_ss.items():
        a = pass_scores(r, wl, k)[goal]
        enters = [d.state.policy for d in ch.decisions if d.now <= k * span + 1e-9]
        out[variant] = {
            "value": a, "vs_best_static": a / vals[best] if vals[best] else None,
            "vs_oracle": a / oracle if oracle else None,
            "enters_under": enters[-1] if enters else START, "t0": k * span,
            "switches": [{x: sw[x] for x in ("t", "from", "to", "drain_s")}
                         for sw in r.switches if sw["t"] > k * span - 1e-9],
            # as in the first pass: the policy at each phase's end against the phase's best
            # when it runs alone
            "phases": _phase_choices(wl, phase_s, ch, alone_picks, per_phase, goal,
                                     t0=k * span)}
    return out




def _phase_choices(wl: Workload, phase_s: float, ch: Any, picks: list[str],
                   per_phase: list[dict[str, SimResult]], goal: str,
                   t0: float = 0.0) -> list[dict]:
    """Per phase (of the pass that starts at t0): the class the agent saw, the policy in force
    at the phase's end, and what that policy and the phase's best scheduler give when the
    phase runs alone."""
    out = []
    for i, ph in enumerate(wl.phases):
        # the window that ends at a phase boundary already holds the next phase's first
        # requests (its processes start at the boundary): it belongs to neither
        ds = [d for d in ch.decisions
              if t0 + i * phase_s < d.now < t0 + (i + 1) * phase_s - 1e-9]
        last = ds[-1] if ds else None
        seen = [tuple(d.workload_class.values()) for d in ds if d.workload_class]
        wcl = max(set(seen), key=seen.count) if seen else None   # the phase's usual class
        pol = last.policy if last else None
        run = per_phase[i].get(POLICY_SCHEDULER.get(pol or "", pol or ""))
        # how many of the phase's processes a window counted (the class's process count)
        counted = [int(d.features.get("processes") or 0) for d in ds]
        out.append({"phase": ph.name, "oracle": picks[i],
                    "processes": len(ph.procs),
                    "processes_counted": max(set(counted), key=counted.count) if counted
                    else None,
                    "budget_holds": sum(d.reason == "budget" for d in ds),
                    "oracle_value": _metric(per_phase[i][picks[i]], goal),
                    "class": "/".join(wcl) if wcl else None,
                    "classes_seen": len(set(seen)),
                    "policy_at_end": pol,
                    "policy_value": _metric(run, goal) if run is not None else None})
    return out


def _timeline(out: dict[str, Any], agents: dict[str, SimResult], st: SimResult, best: str,
              mix: str, phase_s: float) -> None:
    fig, ax = figure(8, 3.4)
    for r, lab in ((st, f"static {best}"), *[(r, v) for v, r in agents.items()]):
        ys = [(w.read_bytes_per_s + w.write_bytes_per_s) / 1e6 for w in r.windows]
        ax.plot([i * 1.0 for i in range(1, len(ys) + 1)], ys, label=lab,
                drawstyle="steps-pre", lw=1)
    ad = agents["ioaz"]
    for sw in ad.switches:
        ax.axvline(sw["t"], color="grey", ls=":", lw=1)
        ax.text(sw["t"], ax.get_ylim()[1] * 0.95, sw["to"], rotation=90, fontsize=7,
                va="top", ha="right")
    ax.set_xlabel("simulated seconds")
    ax.set_ylabel("MB/s per window")
    ax.legend(loc="upper left", fontsize=8)
    out["timeline_plot"] = "adaptive_timeline.png"
    out["_timeline_fig"] = (fig, prose("adaptive")("timeline_plot", mix=mix,
                                                    phase_s=f"{phase_s:g}"))


def _hysteresis_sweep(out: dict[str, Any],
                      variants: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """What the reaction delay costs: the `phases` mix with 10 s phases when every switch,
    the first one too, waits 1, 2 or 3 windows, other damping as shipped. A sensitivity
    reading, not a setting: the defaults are not changed from it."""
    from dataclasses import replace as dc_replace

    from ioaz.decide.config import DecideConfig

    ref = next((m for m in out["mixes"] if m["mix"] == "phases" and m["phase_s"] == 10.0
                and m["goal"] == "throughput"), None)
    if ref is None:
        return []
    rows = []
    for variant in out["variants"]:
        base = variants[variant].get("config") or DecideConfig()
        for h in (1, 2, 3):
            ch = _agent(variants[variant], "throughput", out["device"],
                        config=dc_replace(base, hysteresis_windows=h,
                                          first_choice_windows=h))
            r = run_sim(out["device"], START, _mix("phases", 10.0), chooser=ch)
            rows.append({"agent": variant, "hysteresis_windows": h,
                         "mb_s": r.throughput_mb_s, "switches": len(r.switches),
                         "vs_best_static": r.throughput_mb_s / ref["best_static_value"],
                         "vs_oracle": r.throughput_mb_s / ref["oracle"]})
    return rows


# the trial settings the sweep compares: none, ioazd's default, a longer settling, the
# default with trial_unclear, and the default in rounds
TRIAL_SETTINGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("off", {"trial_margin_points": 0.0}), ("after 10 windows", {"trial_after_windows": 10}),
    ("after 15 windows", {"trial_after_windows": 15}), ("after 20 windows (default)", {}),
    ("and the unclear cells' alternatives", {"trial_unclear": True}),
    ("the default in 4 rounds", {"trial_rounds": 4}))


def _trial_sweep(out: dict[str, Any],
                 variants: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """What the runner-up trials (decide/trial.py) gain and cost: the calibrated agent on
    every mix, goal throughput, cold and steady, with trials off and starting after 10, 15
    and 20 (ioazd's default) settled windows. The numbers above are the default's."""
    from dataclasses import replace as dc_replace

    if "ioaz-calibrated" not in variants:
        return []
    settings = variants["ioaz-calibrated"]
    base = settings["config"]
    rows = []
    for m in out["mixes"]:
        if m["goal"] != "throughput":
            continue
        wl = _mix(m["mix"], m["phase_s"])
        st = m["steady"]
        for name, change in TRIAL_SETTINGS:
            cfg = dc_replace(base, **change)
            cold = run_sim(out["device"], START, _mix(m["mix"], m["phase_s"]),
                           chooser=_agent(settings, "throughput", out["device"], config=cfg))
            ch = _agent(settings, "throughput", out["device"], config=cfg)
            r = run_sim(out["device"], START, repeated(_mix(m["mix"], m["phase_s"])),
                        chooser=ch, keep_windows=True)
            steady = pass_scores(r, wl, PASSES - 1)["throughput"]
            rows.append({"mix": m["mix"], "phase_s": m["phase_s"], "trials": name,
                         "cold_vs_best_static": cold.throughput_mb_s / m["best_static_value"],
                         "cold_vs_oracle": cold.throughput_mb_s / m["oracle"],
                         "steady_vs_best_static": steady / st["best_static_value"],
                         "steady_vs_oracle": steady / st["oracle"],
                         "trials_run": sum(d.reason == "trial" and d.switch
                                           and d.state.trial is not None
                                           and not d.state.trial.gains   # a start
                                           for d in ch.decisions)})
    return rows


def _trace_runs(o: Opts, statics: list[str],
                variants: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The recorded trace (tests/data/trace-phases-loop.csv, a fio run on a loop device)
    replayed open loop: every scheduler moves the same bytes, so the comparison is latency."""
    if not TRACE.exists():
        return {"skipped": f"{TRACE} not found"}
    dev = adaptive_device(o)
    empty = Workload("trace", [])
    res = {s: run_sim(dev, s, empty, trace=TRACE) for s in statics}
    out: dict[str, Any] = {"file": str(TRACE.name), "device": dev, "static": {}, "adaptive": {}}
    for s, r in res.items():
        out["static"][s] = {"mb_s": r.throughput_mb_s, "p50_ms": (r.p50_latency_s or 0) * 1e3,
                            "p99_ms": (r.p99_latency_s or 0) * 1e3, "requests": r.requests}
    for variant, goal in ((v, g) for v in variants for g in ("throughput", "latency")):
        ch = _agent(variants[variant], goal, dev)
        r = run_sim(dev, START, empty, chooser=ch, trace=TRACE)
        out["adaptive"][f"{variant}, {goal}"] = {"mb_s": r.throughput_mb_s,
                                 "p50_ms": (r.p50_latency_s or 0) * 1e3,
                                 "p99_ms": (r.p99_latency_s or 0) * 1e3,
                                 "requests": r.requests,
                                 "switches": [f"{sw['t']:.0f}s {sw['from']}->{sw['to']}"
                                              for sw in r.switches]}
    best = min(out["static"], key=lambda s: out["static"][s]["p99_ms"])
    out["best_static_p99"] = best
    return out


