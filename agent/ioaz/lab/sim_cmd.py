"""`ioaz-lab sim`: run a named workload on a simulated device under one or more schedulers.

Examples:
  ioaz-lab sim par-read --device wd500 --scheduler deadline --scheduler stream
  ioaz-lab sim ioaz-16-rand-read --scheduler vr --tunable rev_penalty=1 --json -
  ioaz-lab sim phases --adaptive --goal mean -s deadline -s stream
  ioaz-lab sim --trace sda.csv --device carroll-hp72 -s deadline -s cfq
  ioaz-lab sim --list
  ioaz-lab sim --bench

--adaptive adds a run in which ioaz's own classify/decide code picks the scheduler every window
(starting from the first --scheduler, default deadline), paying the drain on every switch.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_DEVICE = "wd500"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = __doc__.splitlines()[0]
    p.epilog = "\n".join(__doc__.splitlines()[2:])
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("workload", nargs="?", default="par-read",
                   help="named workload (see --list); default par-read")
    p.add_argument("--trace", metavar="FILE",
                   help="replay a block trace instead of a named workload (CSV time_s,pid,"
                        "sector,sectors,op[,sync] or blkparse text output)")
    p.add_argument("--device", default=DEFAULT_DEVICE,
                   help=f"device model name or YAML file (default {DEFAULT_DEVICE})")
    p.add_argument("--scheduler", "-s", action="append", default=None,
                   help="scheduler to run; repeat to compare (default deadline)")
    p.add_argument("--tunable", "-t", action="append", default=[], metavar="KEY=VALUE",
                   help="scheduler tunable, e.g. rev_penalty=1, read_expire_ms=250, base=vr")
    p.add_argument("--duration", type=float, default=20.0,
                   help="simulated seconds (per phase for phased workloads; default 20)")
    p.add_argument("--window", type=float, default=1.0, help="feature window in seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--adaptive", action="store_true",
                   help="also run with ioaz's decision code choosing the scheduler per window")
    p.add_argument("--goal", choices=("mean", "min", "max", "throughput", "latency"),
                   default=None, help="goal for --adaptive (default: the configured goal)")
    p.add_argument("--calibrated", action="store_true",
                   help="--adaptive with the matrices measured on the wd500 model "
                        "(agent/ioaz/sim/matrices) instead of the shipped ones")
    p.add_argument("--matrices", metavar="DIR/NAME",
                   help="--adaptive with the matrices `ioaz-lab derive --out-dir DIR --name "
                        "NAME` wrote (DIR/NAME-GOAL.yaml), e.g. calibrated on another model")
    p.add_argument("--switch-cost", type=float, default=0.0, metavar="S",
                   help="fixed seconds a switch takes after the drain (--adaptive)")
    p.add_argument("--json", metavar="FILE",
                   help="write the results as JSON ('-': to stdout, instead of the text)")
    p.add_argument("--windows", action="store_true", help="include every window in the JSON")
    p.add_argument("--list", action="store_true", help="list workloads, devices, schedulers")
    p.add_argument("--bench", action="store_true",
                   help="measure the simulator's speed (simulated requests per wall second)")
    p.add_argument("--bench-seconds", type=float, default=5.0,
                   help="simulated seconds per --bench case")
    p.add_argument("--bench-repeat", type=int, default=3,
                   help="runs per --bench case; the fastest is reported")


def _tunables(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--tunable {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v  # a word, e.g. base=vr for stream
    return out


def _ms(x: Any) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def _print_result(r: Any, base: Any) -> None:
    ratio = "" if base is None or base is r or base.throughput_mb_s <= 0 else \
        f"  ({r.throughput_mb_s / base.throughput_mb_s:.2f}x {base.scheduler})"
    print(f"{r.scheduler:14} {r.throughput_mb_s:9.2f} MB/s {r.iops:9.0f} IOPS{ratio}")
    print(f"{'':14} per process MB/s: min {r.proc_min_mb_s:.2f}  max {r.proc_max_mb_s:.2f}  "
          f"mean {r.proc_mean_mb_s:.2f}  ({len(r.proc_mb_s)} processes)")
    print(f"{'':14} latency ms: p50 {_ms(r.p50_latency_s)}  p99 {_ms(r.p99_latency_s)}   "
          f"merges {r.merges}   {r.requests} requests in {r.sim_s:.1f} s simulated, "
          f"{r.wall_s:.2f} s wall")
    for sw in r.switches:
        print(f"{'':14} switch at {sw['t']:.1f} s {sw['from']} -> {sw['to']}: "
              f"drained in {sw['drain_s'] * 1e3:.1f} ms, {sw['blocked']} requests blocked")


def run(args: argparse.Namespace) -> int:
    from ioaz.sim.devices import load_device, model_names
    from ioaz.sim.engine import Simulator
    from ioaz.sim.schedulers import SCHEDULERS
    from ioaz.sim.trace import read_trace
    from ioaz.sim.workloads import Workload, named_workload, workload_names

    def workload() -> Workload:
        if args.trace:
            return Workload(f"trace:{args.trace}", [])
        from ioaz.lab.simsuites.adaptive import MIXES  # the benchmark report's own mixes

        if args.workload in MIXES:
            return MIXES[args.workload](args.duration)
        return named_workload(args.workload, args.duration)

    def start(sim: Simulator) -> Simulator:
        if args.trace:
            sim.replay(read_trace(args.trace))
        return sim

    if args.list:
        from ioaz.lab.simsuites.adaptive import MIXES

        print("workloads: ", " ".join(workload_names() + sorted(MIXES)))
        print("devices:   ", " ".join(model_names()))
        print("schedulers:", " ".join(sorted(SCHEDULERS)))
        return 0
    if args.bench:
        from ioaz.sim.speed import TARGET_REQ_PER_S, format_table, measure

        rows = measure(args.bench_seconds, args.bench_repeat)
        print(format_table(rows))
        best = max(r["requests_per_wall_s"] for r in rows)
        print(f"fastest case: {best:,.0f} simulated requests per wall second "
              f"(target {TARGET_REQ_PER_S:,})")
        if args.json:
            _write_json(args.json, {"bench": rows})
        return 0
    try:
        tunables = _tunables(args.tunable)
        names = args.scheduler or ["deadline"]
        results = []
        for name in names:
            dev = load_device(args.device)
            sim = start(Simulator(dev, name, workload(), tunables=tunables,
                                  window_s=args.window, seed=args.seed,
                                  keep_windows=args.windows))
            results.append(sim.run())
        if args.adaptive:
            from ioaz.lab.simsuites.adaptive import (
                CALIBRATED_DIR,
                CALIBRATED_PREFIX,
                calibrated_config,
            )
            from ioaz.sim.adaptive import AgentChooser

            # --calibrated is --matrices with the set measured on wd500
            where = Path(args.matrices) if args.matrices else \
                CALIBRATED_DIR / CALIBRATED_PREFIX if args.calibrated else None
            cfg = None
            if where is not None:
                cfg = calibrated_config(where.parent, where.name)
                if cfg is None:
                    raise ValueError(f"--matrices {where}: expected {where.parent}/"
                                     f"{where.name}-GOAL.yaml for every goal (ioaz-lab derive "
                                     "writes them)")
            dev = load_device(args.device)
            chooser = AgentChooser(goal=args.goal, size_bytes=dev.capacity_sectors * 512,
                                   rotational=not args.device.startswith("ssd"),
                                   start_policy=names[0], config=cfg)
            sim = start(Simulator(dev, names[0], workload(), tunables=tunables,
                                  window_s=args.window, seed=args.seed,
                                  keep_windows=args.windows, chooser=chooser,
                                  switch_cost_s=args.switch_cost))
            results.append(sim.run())
    except (ValueError, OSError) as e:
        print(f"ioaz-lab sim: {e}", file=sys.stderr)
        return 2
    what = f"trace {args.trace}" if args.trace else f"workload {args.workload}"
    if args.json != "-":  # JSON on stdout stays parseable
        print(f"{what} on {args.device}"
              + (f", tunables {tunables}" if tunables else ""))
        for r in results:
            _print_result(r, results[0])
    if args.json:
        _write_json(args.json, {"workload": args.trace or args.workload, "device": args.device,
                                "tunables": tunables,
                                "results": [r.to_dict(windows=args.windows) for r in results]})
    return 0


def _write_json(dest: str, doc: dict[str, Any]) -> None:
    text = json.dumps(doc, indent=2, default=str)
    if dest == "-":
        print(text)
    else:
        with open(dest, "w") as f:
            f.write(text + "\n")
