"""The adaptive suite's section of the report: tables, plots and the shortfalls named."""
from __future__ import annotations

from typing import Any

from ioaz.lab.report import Report, figure
from ioaz.lab.simsuites.adaptive_plan import PASSES, POLICY_SCHEDULER, START
from ioaz.lab.simsuites.common import TIE
from ioaz.lab.simsuites.prose import prose


def _wrong_phase(p: dict[str, Any]) -> str:
    """A phase whose policy at its end is not the simulator's best for it, with the processes
    its windows missed."""
    words = prose("adaptive")
    missed = (p.get("processes_counted") or 0) < p.get("processes", 0)
    return words("why_wrong_phase", phase=p["phase"], seen_class=p["class"],
                 policy=p["policy_at_end"], value=f"{p['policy_value']:.2f}",
                 oracle=p["oracle"], oracle_value=f"{p['oracle_value']:.2f}",
                 counted=words("why_wrong_counted", counted=p["processes_counted"],
                               processes=p["processes"]) if missed else "")


def _shortfall(variant: str, m: dict[str, Any], steady: bool = False) -> str | None:
    """Why an agent falls short of the best static scheduler or 95% of the oracle on a mix,
    from a cold start (`m`: the mix's entry merged with the agent's) or in the steady state
    (`m`: the entry's "steady" part merged with the agent's, and mix, phase_s, goal)."""
    if m["vs_best_static"] >= 1.0 and m["vs_oracle"] >= 0.95:
        return None
    from ioaz.decide.config import DecideConfig

    words = prose("adaptive")
    dc = DecideConfig()
    wrong = [p for p in m["phases"] if p["policy_value"] is not None
             and p["policy_value"] < (1 - TIE) * p["oracle_value"]]
    why = []
    if wrong:
        why.append(words("why_wrong", phases=", ".join(_wrong_phase(p) for p in wrong)))
    held = [p for p in m["phases"] if p.get("budget_holds")]
    if held:
        phases = ", ".join(words("why_budget_phase", phase=p["phase"], policy=p["policy_at_end"],
                                 windows=p["budget_holds"]) for p in held)
        why.append(words("why_budget", per_hour=dc.max_switches_per_hour,
                         held=words("why_budget_steady", held=phases) if steady else phases))
    flip = [p for p in m["phases"] if p["classes_seen"] > 1]
    if flip:
        why.append(words("why_flip", phases=", ".join(words("why_flip_phase", phase=p["phase"])
                                                      for p in flip)))
    hyst, first_n = dc.hysteresis_windows, min(dc.first_choice_windows, dc.hysteresis_windows)
    sw = m["switches"]
    first = m["phases"][0]
    enters = m["enters_under"] if steady else START
    if POLICY_SCHEDULER.get(enters, enters) != first["oracle"]:
        # the pass begins under a scheduler that is not its first phase's best
        if steady:
            how = words("enters_steady", scored_pass=m["pass"], scheduler=enters)
        else:
            how = words("enters_cold", scheduler=enters)
        t = f"{sw[0]['t'] - m.get('t0', 0.0):g}" if sw else ""
        if not sw:
            then = words("stays")
        elif steady:
            then = words("first_switch_steady", t=t, hysteresis=hyst)
        else:
            then = words("first_switch_cold", t=t,
                         windows=f"{first_n} window{'s' if first_n > 1 else ''}")
        why.append(words("why_enters", enters=how, oracle=first["oracle"], phase=first["phase"],
                         then=then))
    why.append(words("why_switches", switches=len(sw), hysteresis=hyst,
                     phase_s=f"{m['phase_s']:g}") if sw else
               words("no_switch_steady" if steady else "no_switch_cold"))
    if m["best_static_value"] >= 0.97 * m["oracle"]:
        why.append(words("why_static_close", best=m["best_static"],
                         gap=f"{1 - m['best_static_value'] / m['oracle']:.1%}"))
    return words("shortfall_steady" if steady else "shortfall_cold", variant=variant,
                 mix=m["mix"], phase_s=f"{m['phase_s']:g}", goal=m["goal"], why="; ".join(why))


def adaptive_summary(rep: Report, out: dict[str, Any]) -> None:
    """One summary line a mix and goal: the default agent cold, the calibrated one, and every
    agent in the steady state."""
    words = prose("adaptive")
    for m in out["mixes"]:
        cal = m.get("ioaz-calibrated")
        st = m["steady"]
        rep.summary.append(words(
            "summary", mix=m["mix"], phase_s=f"{m['phase_s']:g}", goal=m["goal"],
            value=f"{m['adaptive']:.2f}", best=m["best_static"],
            best_value=f"{m['best_static_value']:.2f}", vs_best=f"{m['vs_best_static']:.0%}",
            oracle=f"{m['oracle']:.2f}", vs_oracle=f"{m['vs_oracle']:.0%}",
            calibrated=words("summary_calibrated", value=f"{cal['value']:.2f}",
                             vs_best=f"{cal['vs_best_static']:.0%}",
                             vs_oracle=f"{cal['vs_oracle']:.0%}") if cal else "",
            scored_pass=st["pass"], passes=st["passes"],
            steady=", ".join(words("summary_steady", variant=v, best=st["best_static"],
                                   vs_best=f"{st[v]['vs_best_static']:.0%}",
                                   vs_oracle=f"{st[v]['vs_oracle']:.0%}")
                             for v in out["variants"])))


def adaptive_section(rep: Report, out: dict[str, Any], statics: list[str]) -> None:
    words = prose("adaptive")
    sec = rep.section(words.title)
    sec.text(words("intro", device=out["device"], start=START))
    sec.text(words("columns", start=START, passes=PASSES))
    sec.text(words("agents_with_model" if "ioaz-model" in out["variants"] else "agents"))
    rows: list[tuple[Any, ...]] = []
    for m in out["mixes"]:
        st = m["steady"]
        for v in out["variants"]:
            a, b = m[v], st[v]
            rows.append((m["mix"], m["phase_s"], m["goal"], v, a["value"],
                         f"{m['best_static']} {m['best_static_value']:.2f}", m["oracle"],
                         f"{a['vs_best_static']:.0%} / {a['vs_oracle']:.0%}",
                         len(a["switches"]), b["value"],
                         f"{st['best_static']} {st['best_static_value']:.2f}", st["oracle"],
                         f"{b['vs_best_static']:.0%} / {b['vs_oracle']:.0%}",
                         len(b["switches"]), b["enters_under"]))
    sec.table(words.headers("results"), rows)
    drift = [(m["mix"], m["phase_s"], m["goal"], s, d) for m in out["mixes"]
             for s, d in m["steady"]["static_drift"].items()]
    worst = max(drift, key=lambda x: abs(x[4]))
    gap = max(abs(m["steady"]["oracle_first_pass"] / m["oracle"] - 1) for m in out["mixes"])
    sec.text(words("drift", passes=PASSES, drift=f"{worst[4]:+.2%}", scheduler=worst[3],
                   mix=worst[0], phase_s=f"{worst[1]:g}", goal=worst[2], gap=f"{gap:.2%}"))
    sec.table(words.headers("statics", statics=" | ".join(statics)),
              [(m["mix"], m["phase_s"], m["goal"], col, *[d["static"][x] for x in statics])
               for m in out["mixes"]
               for col, d in (("once", m), (f"pass {PASSES} of {PASSES}", m["steady"]))])
    sec.text(words("phases"))
    sec.table(words.headers("phases_table"),
              [(m["mix"], m["phase_s"], m["goal"], v, col, p["phase"], p["class"],
                p["classes_seen"], p["policy_at_end"], p["policy_value"], p["oracle"],
                p["oracle_value"])
               for m in out["mixes"] for v in out["variants"]
               for col, d in (("cold", m[v]), (f"pass {PASSES}", m["steady"][v]))
               for p in d["phases"]])
    sec.text(words("shortfalls"))
    notes = [n for m0 in out["mixes"] for v in out["variants"]
             for n in (_shortfall(v, {**m0, **m0[v]}),
                       _shortfall(v, {**m0["steady"], **m0["steady"][v], "mix": m0["mix"],
                                      "phase_s": m0["phase_s"], "goal": m0["goal"]},
                                  steady=True)) if n]
    sec.bullets(notes or [words("no_shortfall")])
    fig_cap = out.pop("_timeline_fig", None)
    if fig_cap:
        sec.plot("adaptive_timeline", *fig_cap)
    fig, ax = figure(8, 3.6)
    ms = [m for m in out["mixes"] if m["goal"] == "throughput"]
    width = 0.8 / (len(statics) + 2)
    labels = [*statics, "adaptive", "oracle"]
    for j, lab in enumerate(labels):
        ys = [(m["static"][lab] if lab in m["static"] else m[lab]) / m["oracle"] for m in ms]
        ax.bar([i + j * width for i in range(len(ms))], ys, width, label=lab)
    ax.set_xticks([i + 0.4 for i in range(len(ms))])
    ax.set_xticklabels([f"{m['mix']} {m['phase_s']:g}s" for m in ms])
    ax.set_ylabel("throughput / oracle")
    ax.legend(fontsize=7, ncol=4)
    ax.grid(axis="y", alpha=0.3)
    sec.plot("adaptive_mixes", fig, words("mixes_plot"))
    hy = out.get("hysteresis")
    if hy:
        sec.text(words("hysteresis"))
        sec.table(words.headers("hysteresis_table"),
                  [(r["agent"], r["hysteresis_windows"], r["mb_s"], r["switches"],
                    f"{r['vs_best_static']:.0%}", f"{r['vs_oracle']:.0%}") for r in hy])
    tr = out.get("trials")
    if tr:
        sec.text(words("trials"))
        sec.table(words.headers("trials_table"),
                  [(f"{r['mix']} {r['phase_s']:g}s", r["trials"],
                    f"{r['cold_vs_best_static']:.1%} / {r['cold_vs_oracle']:.1%}",
                    f"{r['steady_vs_best_static']:.1%} / {r['steady_vs_oracle']:.1%}",
                    r["trials_run"]) for r in tr])
    t = out["trace"]
    if "skipped" in t:
        sec.text(words("trace_skipped", why=t["skipped"]))
        return
    sec.text(words("trace", file=t["file"], device=t["device"]))
    trows: list[tuple[Any, ...]] = [(k, v["mb_s"], v["p50_ms"], v["p99_ms"], "")
                                    for k, v in t["static"].items()]
    trows += [(words("trace_adaptive", agent=g), v["mb_s"], v["p50_ms"], v["p99_ms"],
               ", ".join(v["switches"])) for g, v in t["adaptive"].items()]
    sec.table(words.headers("trace_table"), trows)


