"""`ioazctl advise`: what ioaz would set on each disk, and why, without writing anything.

Works without the daemon, for an operator who wants ioaz's choice before letting it act (or to
set it by hand): it watches the disks for a few windows with the configuration's probe, classes
and matrices (ioazd in dry run, built the same way), and prints per disk the class seen most,
the policy its matrix cell gives for the goal, the scheduler and knobs that realise it here, the
cell's file and line and the kind of its source. Each piece of advice has an id that stays the
same while the disk, its goal, its cell and the advice do, so a change of advice shows.

Nothing is written: no scheduler, no knob, no state file (the daemon runs in dry run).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TextIO

from ..actuate import Actuator, StateStore
from ..daemon.compose import build
from ..daemon.config import (
    DEFAULT_CONFIG,
    INSTALLED_CONFIG,
    ConfigError,
    DaemonConfig,
    load_config,
)
from ..decide import Resolution, resolve
from ..probe import open_source
from ..sysblock import BlockSysfs
from .observe import UsageError, parse_count, parse_devices


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("device", nargs="*", metavar="DEVICE",
                   help="disks to advise on (sda, /dev/sdb); default: those the configuration "
                        "manages")
    p.add_argument("--config", "-c", metavar="FILE",
                   help=f"ioazd's configuration (default {INSTALLED_CONFIG} when it exists, "
                        "else the shipped one)")
    p.add_argument("--windows", "-n", default="5", metavar="N",
                   help="windows to watch before advising (default 5)")


def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    sysfs = BlockSysfs()
    config_file = args.config or (INSTALLED_CONFIG if INSTALLED_CONFIG.exists()
                                  else DEFAULT_CONFIG)
    try:
        windows = parse_count(args.windows)
        devices = parse_devices(args.device, sysfs)
        config = load_config(config_file, dry_run=True)
    except UsageError as e:
        print(f"ioazctl advise: {e}".replace("--count", "--windows").replace("--device ", "disk "),
              file=err)
        return 2
    except ConfigError as e:
        print(f"ioazctl advise: configuration refused:\n{e}", file=err)
        return 2
    if devices:   # named disks are advised on whatever the configuration's globs say
        config.include, config.exclude = tuple(devices), ()
    try:
        source, why = open_source(config.probe, config.sample_plan(), sysfs)
    except Exception as e:  # probe: bpf and BPF unavailable
        print(f"ioazctl advise: {e}", file=err)
        return 1
    if why:
        print(f"ioazctl advise: warning: {why}", file=err)
    with tempfile.TemporaryDirectory(prefix="ioaz-advise-") as scratch:
        # dry run never writes; the store is there because the actuator wants one
        daemon = build(config, source, Actuator(sysfs, StateStore(scratch)), sysfs,
                       fallback_reason=why)
        try:
            advice = watch(daemon, windows or 5, config.window_s, _realiser(config, sysfs))
        finally:
            source.close()
    if not advice:
        print("ioazctl advise: no disk to advise on (none managed by the configuration has a "
              "scheduler)", file=err)
        return 1
    for a in advice:
        a["identity"] = sysfs.identity(a["device"])
        a["id"] = advice_id(a)
    if getattr(args, "json", False):
        for a in advice:
            print(json.dumps(a), file=out)
    else:
        print(render(advice, config.file), file=out)
    return 0


def watch(daemon: Any, windows: int, window_s: float,
          realise: Callable[[str, str], Resolution]) -> list[dict[str, Any]]:
    """Run `windows` dry windows; per disk the class seen most and the advice for it (a hold
    carries no realisation: `realise(device, policy)` gives the one the policy has here)."""
    seen: dict[str, Counter[str]] = {}
    last: dict[str, dict[str, Any]] = {}
    daemon.start()
    next_t = time.monotonic() + window_s
    for _ in range(windows):
        time.sleep(max(0.0, next_t - time.monotonic()))
        next_t += window_s
        daemon.window()
        for st in daemon.status()["devices"]:
            if not st["class"]:
                continue   # idle, or too little I/O to judge
            key = "/".join(str(x) for x in st["class"].values())
            seen.setdefault(st["device"], Counter())[key] += 1
            ex = daemon.explain(st["device"])
            if (ex.get("decision") or {}).get("verdict"):   # not a cooldown's hold
                last.setdefault(st["device"], {})[key] = ex
    out = []
    for device in sorted({s["device"] for s in daemon.status()["devices"]}):
        classes = seen.get(device)
        if not classes:
            ex = daemon.explain(device)
            out.append({"device": device, "scheduler": ex["scheduler"], "class": None,
                        "windows": windows, "advice": None,
                        "why": "idle or too little I/O in every window: nothing to judge"})
            continue
        judged = [(k, c) for k, c in classes.most_common() if k in last.get(device, {})]
        if not judged:
            out.append({"device": device, "scheduler": daemon.explain(device)["scheduler"],
                        "class": classes.most_common(1)[0][0], "windows": windows,
                        "advice": None, "why": "no window reached the matrix (cooldown): "
                                               "watch more windows"})
            continue
        key, n = judged[0]
        ex = last[device][key]
        v, r = ex["decision"]["verdict"], ex["decision"]["resolution"]
        if not r:
            got = realise(device, v["policy"])
            r = {"scheduler": got.scheduler, "knobs": dict(got.knobs)}
        if r.get("scheduler"):   # with the tunables the disk's matrix carries, as ioazd would
            r = {**r, "knobs": daemon.knobs_for(device, v["goal"], r["scheduler"],
                                                r.get("knobs") or {})}
        out.append({
            "device": device, "scheduler": ex["scheduler"], "class": key,
            "class_windows": n, "windows": windows, "goal": v.get("goal"),
            "advice": {"policy": v.get("policy"), "scheduler": r.get("scheduler"),
                       "knobs": r.get("knobs") or {}},
            "changes": r.get("scheduler") not in (None, ex["scheduler"]),
            "why": v.get("text"), "matrix": v.get("matrix"), "cell": v.get("cell"),
            "line": v.get("cell_line"), "source_kind": v.get("source_kind"),
            "other_classes": {k: c for k, c in classes.items() if k != key}})
    return out


def _realiser(config: DaemonConfig, sysfs: BlockSysfs) -> Callable[[str, str], Resolution]:
    table = config.decide.policies
    assert table is not None, "load_config() loads the policies"
    return lambda device, policy: resolve(policy, table, sysfs.scheduler(device).available)


def advice_id(a: dict[str, Any]) -> str:
    """The same while the disk, its goal, its class's cell and the advice are."""
    adv = a.get("advice") or {}
    text = json.dumps([a.get("identity") or a["device"], a.get("goal"), a.get("matrix"),
                       a.get("cell"), adv.get("policy"), adv.get("scheduler"),
                       sorted((adv.get("knobs") or {}).items())])
    return "ioaz-" + hashlib.sha256(text.encode()).hexdigest()[:10]


def render(advice: list[dict[str, Any]], config_file: str) -> str:
    lines = [f"advice from {advice[0]['windows']} windows, configuration {config_file}; "
             "nothing was written"]
    for a in advice:
        if a["advice"] is None:
            lines.append(f"{a['device']}: {a['why']} (scheduler {a['scheduler']} stays)")
            continue
        adv = a["advice"]
        knobs = " ".join(f"{k}={v}" for k, v in sorted(adv["knobs"].items()))
        verb = "set" if a["changes"] else "keep"
        lines.append(
            f"{a['device']}: {verb} {adv['scheduler']}{' ' + knobs if knobs else ''} "
            f"(policy {adv['policy']}, goal {a['goal']}; now {a['scheduler']})  [{a['id']}]")
        lines.append(f"  class {a['class']} in {a['class_windows']} of {a['windows']} windows"
                     + (f" (also {', '.join(f'{k} x{c}' for k, c in a['other_classes'].items())})"
                        if a["other_classes"] else ""))
        lines.append(f"  why: {a['why']}")
        if a.get("matrix"):
            lines.append(f"  at {os.path.normpath(a['matrix'])}:{a.get('line') or 1}")
    return "\n".join(lines)
