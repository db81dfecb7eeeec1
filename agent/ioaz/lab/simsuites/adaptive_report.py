"""The adaptive suite's section of the report: tables, plots and the shortfalls named."""
from __future__ import annotations

from typing import Any

from ioaz.lab.report import Report, figure
from ioaz.lab.simsuites.adaptive_plan import PASSES, POLICY_SCHEDULER, START
from ioaz.lab.simsuites.common import TIE


def _shortfall(variant: str, m: dict[str, Any], steady: bool = False) -> str | None:
    """Why an agent falls short of the best static scheduler or 95% of the oracle on a mix,
    from a cold start (`m`: the mix's entry merged with the agent's) or in the steady state
    (`m`: the entry's "steady" part merged with the agent's, and mix, phase_s, goal)."""
    if m["vs_best_static"] >= 1.0 and m["vs_oracle"] >= 0.95:
        return None
    wrong = [p for p in m["phases"] if p["policy_value"] is not None
             and p["policy_value"] < (1 - TIE) * p["oracle_value"]]
    why = []
    if wrong:
        why.append("the policy it chose is not the simulator's best in "
                   + ", ".join(f"'{p['phase']}' ({p['class']}: {p['policy_at_end']} "
                               f"{p['policy_value']:.2f} vs {p['oracle']} "
                               f"{p['oracle_value']:.2f}"
                               + (f"; its windows count {p['processes_counted']} of the "
                                  f"phase's {p['processes']} processes"
                                  if (p.get("processes_counted") or 0) < p.get("processes", 0)
                                  else "") + ")" for p in wrong))
    held = [p for p in m["phases"] if p.get("budget_holds")]
    if held:
        from ioaz.decide.config import DecideConfig

        why.append(f"the switch budget ({DecideConfig().max_switches_per_hour} per hour) is "
                   "spent: it held "
                   + ", ".join(f"'{p['phase']}' under {p['policy_at_end']} for "
                               f"{p['budget_holds']} windows" for p in held)
                   + (" (the previous pass's switches count against the same hour)"
                      if steady else ""))
    flip = [p for p in m["phases"] if p["classes_seen"] > 1]
    if flip:
        why.append("windows of " + ", ".join(f"'{p['phase']}'" for p in flip)
                   + " fall in more than one class (near a class boundary, e.g. postmark's "
                   "50% reads, or a scheduler that serves a few of many processes at a time, "
                   "so a window counts fewer of them), so hysteresis holds or the agent flaps")
    from ioaz.decide.config import DecideConfig

    dc = DecideConfig()
    hyst, first_n = dc.hysteresis_windows, min(dc.first_choice_windows, dc.hysteresis_windows)
    sw = m["switches"]
    first = m["phases"][0]
    enters = m["enters_under"] if steady else START
    if POLICY_SCHEDULER.get(enters, enters) != first["oracle"]:
        # the pass begins under a scheduler that is not its first phase's best
        why.append((f"it enters pass {m['pass']} under {enters}, its choice for the previous "
                    "pass's last phase" if steady else f"it starts under {enters}")
                   + f", not {first['oracle']} (the best for '{first['phase']}'), and "
                   + (f"its first switch comes {sw[0]['t'] - m.get('t0', 0.0):g} s into the "
                      + (f"pass (at least {hyst} windows of hysteresis)" if steady else
                         f"run (at least {first_n} window{'s' if first_n > 1 else ''} to "
                         "leave the scheduler found at start)") if sw else "it stays there"))
    why.append(f"each change of phase costs the windows the agent needs to see it: "
               f"{len(sw)} switches, each at least {hyst} windows (hysteresis) after "
               f"the change, in {m['phase_s']:g} s phases" if sw else
               "it makes no switch in the " + ("pass" if steady else "run"))
    if m["best_static_value"] >= 0.97 * m["oracle"]:
        why.append(f"{m['best_static']} alone is within "
                   f"{1 - m['best_static_value'] / m['oracle']:.1%} of the oracle: no phase "
                   "gains much from leaving it, so every reaction delay is pure loss")
    col = "steady state" if steady else "cold start"
    return (f"{variant} on {m['mix']} {m['phase_s']:g} s, goal {m['goal']}, {col}: "
            + "; ".join(why))


def adaptive_section(rep: Report, out: dict[str, Any], statics: list[str]) -> None:
    sec = rep.section("Adaptive ioaz against every static scheduler and the per-phase oracle")
    sec.text(f"ioaz's own classify + decide code (`ioaz.sim.adaptive.AgentChooser`, the ioazd "
           f"defaults: 1 s windows, 3-window hysteresis (1 window to leave the scheduler found "
           f"at start), 5 s dwell after its own switches, 2 s "
           f"cooldown, 12 switches per hour) chooses the scheduler each window on the "
           f"`{out['device']}` model, starting from {START}; every switch drains the queue "
           "(IOAZ 4.3). Goal *throughput* uses `rotational-throughput.yaml` and is judged by "
           "the total MB/s; goal *mean* uses IOAZ Table 3 and is judged by the mean "
           "per-process MB/s; goal *min* uses IOAZ Table 1 and is judged by the slowest "
           "process's MB/s. The per-phase oracle runs each phase alone under the best static "
           "scheduler for it, with no switch cost: an upper bound no chooser that has to "
           "observe first can reach. Mixes: `phases` = par-read, 16 random readers, 1 "
           "sequential writer, 4 sequential readers; `phases-office` = postmark, 8 sequential "
           "readers, a database mix, 4 sequential writers; `phases-contrast` = par-read, 16 "
           "sequential writers, 16 sequential readers, chosen because its phases, each run "
           "alone, are won by different schedulers (on the first two mixes stream is within a "
           "few percent of the oracle in every phase).")
    sec.text(f"Two columns per mix and goal. **Cold start**: the mix once, the agent starting "
             f"from {START} as after boot. **Steady state**: ioazd runs for days, so when a "
             f"mix's phases come round it starts from what it chose for the previous phase: the "
             f"mix {PASSES} times in a row in one simulation, the agent in the loop throughout, "
             f"and only pass {PASSES} scored (its own bytes over its span, its own processes), "
             f"the static schedulers' runs of the same {PASSES} passes scored on the same pass, "
             "and the oracle there the best static scheduler per phase of that pass (in its own "
             "run, so no switch).")
    sec.text("Agents: `ioaz` decides with the shipped matrices (IOAZ's tables, measured on "
             "other disks); `ioaz-calibrated` with matrices measured on this model by IOAZ's "
             "method, IOAZ's classes split by depth (agent/ioaz/sim/matrices); `ioaz-model` "
             "with a model trained on this model's calibration (ioazd's `classifier: {type: "
             "model}`, the calibrated matrices below its confidence), trained without the "
             "grid's 16 IOAZ categories, of which the mixes' other phases are made, nor their "
             "single-process twins, so no phase was seen in training (par-read, postmark and "
             "the database mix are not grid workloads, though the grid has neighbours, such as "
             "4 sequential 4 KiB readers 40 GB apart; agent/ioaz/lab/report_models.py)."
             if "ioaz-model" in out["variants"] else
             "Agents: `ioaz` decides with the shipped matrices, `ioaz-calibrated` with matrices "
             "measured on this model (the trained-model agent runs in the full report only).")
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
    sec.table(["mix", "phase s", "goal", "agent", "cold: adaptive", "best static", "oracle",
               "% static / oracle", "switches", "steady: adaptive", "best static", "oracle",
               "% static / oracle", "switches", "enters under"], rows)
    drift = [(m["mix"], m["phase_s"], m["goal"], s, d) for m in out["mixes"]
             for s, d in m["steady"]["static_drift"].items()]
    worst = max(drift, key=lambda x: abs(x[4]))
    gap = max(abs(m["steady"]["oracle_first_pass"] / m["oracle"] - 1) for m in out["mixes"])
    sec.text(f"Is the last pass like the first for a static scheduler (head position, read cache "
             f"and queue left by the previous pass)? Largest difference between a static "
             f"scheduler's pass {PASSES} and its pass 1: {worst[4]:+.2%} ({worst[3]} on "
             f"{worst[0]} {worst[1]:g} s, goal {worst[2]}). The in-run oracle on pass 1 is "
             f"within {gap:.2%} of the phases-alone oracle of the cold column.")
    sec.table(["mix", "phase s", "goal", "scored", *statics],
              [(m["mix"], m["phase_s"], m["goal"], col, *[d["static"][x] for x in statics])
               for m in out["mixes"]
               for col, d in (("once", m), (f"pass {PASSES} of {PASSES}", m["steady"]))])
    sec.text("What each agent saw and chose in each phase (its most frequent class, how many "
           "classes its windows fell in, the policy in force at the phase's end and what that "
           "policy gives when the phase runs alone) against the oracle's pick:")
    sec.table(["mix", "phase s", "goal", "agent", "run", "phase", "class", "classes",
               "policy at end", "its value alone", "oracle", "oracle value"],
              [(m["mix"], m["phase_s"], m["goal"], v, col, p["phase"], p["class"],
                p["classes_seen"], p["policy_at_end"], p["policy_value"], p["oracle"],
                p["oracle_value"])
               for m in out["mixes"] for v in out["variants"]
               for col, d in (("cold", m[v]), (f"pass {PASSES}", m["steady"][v]))
               for p in d["phases"]])
    sec.text("Where adaptive falls short, and why (from the numbers above):")
    notes = [n for m0 in out["mixes"] for v in out["variants"]
             for n in (_shortfall(v, {**m0, **m0[v]}),
                       _shortfall(v, {**m0["steady"], **m0["steady"][v], "mix": m0["mix"],
                                      "phase_s": m0["phase_s"], "goal": m0["goal"]},
                                  steady=True)) if n]
    sec.bullets(notes or ["none: adaptive matches the best static scheduler on every mix and "
                        "reaches 95% of the oracle, cold and steady"])
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
    sec.plot("adaptive_mixes", fig, "Total throughput relative to the per-phase oracle")
    hy = out.get("hysteresis")
    if hy:
        sec.text("**Reaction delay.** `phases` with 10 s phases, goal throughput, when every "
                 "switch, the first one too, waits 1, 2 or 3 windows (ioazd's default: 3, and 1 "
                 "to leave the scheduler found at start), the other damping as shipped: what "
                 "waiting for confirmation costs on phases this short. A sensitivity reading; "
                 "the defaults were not changed from it (on a real disk one noisy window must "
                 "not undo a choice made from evidence).")
        sec.table(["agent", "hysteresis windows", "MB/s", "switches", "vs best static",
                   "vs oracle"],
                  [(r["agent"], r["hysteresis_windows"], r["mb_s"], r["switches"],
                    f"{r['vs_best_static']:.0%}", f"{r['vs_oracle']:.0%}") for r in hy])
    tr = out.get("trials")
    if tr:
        sec.text("**Runner-up trials** (decide/trial.py). The calibrated agent, goal "
                 "throughput, with trials off and starting after 10, 15 or 20 (ioazd's "
                 "default) settled windows, and the default with `trial_unclear` (a cell whose "
                 "policy no measurement chose also tries the policies that won the matrix's "
                 "measured cells). A trial runs the cell's runner-up for 3 windows and "
                 "keeps it if it moved 10% more bytes. It is abandoned at once if other "
                 "processes drive the device. The phases-office database is where trials pay: "
                 "cfq's view of it (8/random/read) names cfq, and stream serves it 3x better. "
                 "Elsewhere a trial costs a few windows and two switches, most when the phase "
                 "ends during it: the next phase's first windows pass under the runner-up "
                 "until other processes end the trial. A phase that keeps the scheduler in "
                 "force is settled from its first window, so with 10 a trial starts just as "
                 "each 10 s phase ends. % of best static / % of oracle; trials started in the "
                 "two passes.")
        sec.table(["mix", "trials", "cold", "steady", "trials started"],
                  [(f"{r['mix']} {r['phase_s']:g}s", r["trials"],
                    f"{r['cold_vs_best_static']:.1%} / {r['cold_vs_oracle']:.1%}",
                    f"{r['steady_vs_best_static']:.1%} / {r['steady_vs_oracle']:.1%}",
                    r["trials_run"]) for r in tr])
    t = out["trace"]
    if "skipped" in t:
        sec.text(f"Recorded trace: skipped ({t['skipped']}).")
        return
    sec.text(f"**Recorded trace** `tests/data/{t['file']}` (recorded with `ioaz-lab record` from a "
           "loop device while fio ran `tests/data/trace-phases-loop.fio`: 4 sequential readers, "
           "then 8 random readers, then one sequential writer, rate-capped), replayed open loop "
           f"on `{t['device']}`. Every scheduler serves the same requests at the same times, so "
           "throughput is the trace's; the difference is latency.")
    trows: list[tuple[Any, ...]] = [(k, v["mb_s"], v["p50_ms"], v["p99_ms"], "")
                                    for k, v in t["static"].items()]
    trows += [(f"adaptive ({g})", v["mb_s"], v["p50_ms"], v["p99_ms"], ", ".join(v["switches"]))
             for g, v in t["adaptive"].items()]
    sec.table(["scheduler", "MB/s", "p50 ms", "p99 ms", "switches"], trows)


