"""The ioazctl commands that talk to ioazd (status, explain, history, pin, ... reload), and
`matrix validate`, which does not need it.

Every command prints a human table by default and the daemon's JSON with --json; errors go
to stderr with exit status 1 (refused, permission denied, daemon unreachable) or 2 (usage).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from ..api.client import DEFAULT_SOCKET, ConnectError, call
from ..api.protocol import RequestError, parse_duration
from ..decide.matrix import GOALS

EXIT_FAIL, EXIT_USAGE = 1, 2


def common(p: argparse.ArgumentParser, daemon: bool = True, top: bool = False) -> None:
    """--json and --socket, accepted before the command (top=True: the defaults live there)
    and after it (SUPPRESS: given there, they override; not given, the top's value stays)."""
    default = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", default=default(False),
                   help="print JSON instead of a table")
    if daemon:
        p.add_argument("--socket", default=default(os.environ.get("IOAZ_SOCKET",
                                                                  DEFAULT_SOCKET)),
                       metavar="PATH", help=f"ioazd's socket (default $IOAZ_SOCKET or "
                       f"{DEFAULT_SOCKET})")


DEV_HELP = "a disk ioazd manages (sda or /dev/sda)"


def add_commands(sub: Any) -> None:
    common(sub.add_parser("status", help="every managed device: mode, scheduler, policy, "
                          "class, last decision"))
    p = sub.add_parser("explain", help="the features, class, matrix cell and history "
                       "behind a device's current choice")
    p.add_argument("device", metavar="DEV", help=DEV_HELP)
    common(p)
    p = sub.add_parser("history", help="recent decisions that switched (or tried to)")
    p.add_argument("--device", "-d", metavar="DEV", help="only this disk's decisions")
    p.add_argument("--limit", "-n", type=int, default=50, metavar="N",
                   help="at most N decisions, the newest (default 50)")
    common(p)
    p = sub.add_parser("pin", help="force a policy on a device (until unpin, or --for)")
    p.add_argument("device", metavar="DEV", help=DEV_HELP)
    p.add_argument("policy", metavar="POLICY",
                   help="a policy of the policies file (shipped: fcfs, fifo, deadline, "
                        "anticipatory, cfq, vr, sstf, scan, stream, kyber, none)")
    p.add_argument("--for", dest="duration", metavar="DURATION",
                   help="expire after e.g. 90s, 30m, 1h30m, 2d")
    common(p)
    for name, what in (("unpin", "hand a pinned device back to the matrix"),
                       ("pause", "stop deciding for a device (its scheduler stays)"),
                       ("resume", "let ioaz decide again (after pause or a manual change)")):
        p = sub.add_parser(name, help=what)
        p.add_argument("device", metavar="DEV", help=DEV_HELP)
        common(p)
    p = sub.add_parser("goal", help="what to optimise on a device: min, max, mean, "
                       "throughput, latency")
    p.add_argument("device", metavar="DEV", help=DEV_HELP)
    p.add_argument("goal", metavar="GOAL", help="one of " + ", ".join(GOALS))
    common(p)
    common(sub.add_parser("reload", help="re-read the configuration and matrices (a bad "
                          "file is refused and the old configuration kept)"))
    p = sub.add_parser("matrix", help="decision matrix files (no daemon needed)")
    msub = p.add_subparsers(dest="matrix_command", metavar="SUBCOMMAND")
    msub.required = True
    v = msub.add_parser("validate", help="check matrix, policies or config files; "
                        "FILE:LINE for each problem")
    v.add_argument("files", nargs="+", metavar="FILE",
                   help="YAML files: a matrix or policies file by its kind: key, an ioazd "
                        "configuration by its decide: section")
    common(v, daemon=False)


DAEMON_COMMANDS = ("status", "explain", "history", "pin", "unpin", "goal", "pause", "resume",
                   "reload")


def request_of(args: argparse.Namespace) -> dict[str, Any]:
    cmd = args.command
    req: dict[str, Any] = {"cmd": cmd}
    if getattr(args, "device", None) is not None:
        req["device"] = args.device
    if cmd == "pin":
        req["policy"] = args.policy
        if args.duration is not None:
            req["for_s"] = parse_duration(args.duration)
    elif cmd == "goal":
        req["goal"] = args.goal
    elif cmd == "history":
        if args.limit < 1:
            raise RequestError(f"--limit {args.limit}: must be at least 1")
        req["limit"] = args.limit
    return req


def run(args: argparse.Namespace, out: TextIO | None = None,
        err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    prog = f"ioazctl {args.command}"
    if args.command == "matrix":
        return validate(args, out, err)
    try:
        req = request_of(args)
    except RequestError as e:
        print(f"{prog}: {e}", file=err)
        return EXIT_USAGE
    try:
        resp = call(args.socket, req)
    except ConnectError as e:
        print(f"{prog}: {e}", file=err)
        return EXIT_FAIL
    if not resp.get("ok"):
        msg = str(resp.get("error", "failed"))
        if args.json:
            print(json.dumps(resp), file=err)
        else:
            print(f"{prog}: {msg}", file=err)
        return EXIT_USAGE if resp.get("kind") == "request" else EXIT_FAIL
    result = resp.get("result")
    if args.json:
        print(json.dumps(result, indent=2, default=str), file=out)
    else:
        FORMATTERS.get(args.command, _format_action)(result, out)
    return 0


def validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..decide import validate_file
    report, bad = [], 0
    for f in args.files:
        issues = validate_file(f)     # an unreadable file is an issue too, not a crash
        report.append({"file": f, "ok": not issues, "issues": [str(i) for i in issues]})
        bad += bool(issues)
    if args.json:
        print(json.dumps(report, indent=2), file=out)
    for r in report:
        if r["ok"] and not args.json:
            print(f"{r['file']}: OK", file=out)
        for i in r["issues"]:
            print(i, file=err)
    return EXIT_FAIL if bad else 0


# -- human output ------------------------------------------------------------------------

def table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), file=out)


def _s(v: Any) -> str:
    return "-" if v is None or v == "" else str(v)


def _age(v: Any) -> str:
    if v is None:
        return "-"
    v = float(v)
    return f"{v:.1f}s" if v < 120 else f"{v / 60:.0f}m" if v < 7200 else f"{v / 3600:.1f}h"


def _class(c: Any) -> str:
    if not isinstance(c, dict):
        return "-"
    return "/".join(c[k] for k in ("processes", "pattern", "mode", "depth", "size") if k in c)


def _pin(p: Any) -> str:
    if not p:
        return "-"
    rem = p.get("remaining_s")
    return f"{p['policy']} ({'forever' if rem is None else _age(rem) + ' left'})"


def _format_status(r: dict[str, Any], out: TextIO) -> None:
    fallback = f" (fallback: {r['fallback_reason']})" if r.get("fallback_reason") else ""
    print(f"source {r['source']}{fallback}"
          f"  collector {'up' if r.get('collector_up') else 'DOWN'}"
          f"  window {r['window_s']:g}s"
          f"{' (at rest: ' + format(r['next_window_s'], 'g') + 's)' if r.get('resting') else ''}"
          f"  windows {r['windows']}"
          f"{'  DRY RUN' if r.get('dry_run') else ''}  config {r['config']}", file=out)
    rows = [["DEVICE", "MODE", "SCHEDULER", "POLICY", "GOAL", "CLASS", "LAST", "REASON",
             "AGE", "PIN", "ERRORS"]]
    for d in r["devices"]:
        rows.append([d["device"], d["mode"], _s(d["scheduler"]), _s(d["policy"]),
                     _s(d["goal"]), _class(d["class"]), _s(d["last_action"]),
                     _s(d["last_reason"]), _age(d["decision_age_s"]), _pin(d["pin"]),
                     str(d.get("errors", 0))])
    if len(rows) == 1:
        print("no managed devices", file=out)
        return
    table(rows, out)
    for d in r["devices"]:
        if d.get("note") and d["mode"] != "auto":
            print(f"{d['device']}: {d['note']}", file=out)


def _format_decided_by(b: dict[str, Any], out: TextIO) -> None:
    """Where the verdicts come from, shown even when the last window judged nothing."""
    if not b:
        return
    if b.get("matrix"):
        print(f"  matrix for goal {b['goal']}: {b['matrix']}, chosen by {b['rule']} of "
              "decide.matrix_rules", file=out)
    else:
        print(f"  matrix for goal {b['goal']}: none (no rule of decide.matrix_rules matches "
              "this device)", file=out)
    if b.get("model"):
        print(f"  model: {b['model']} (the matrix below its confidence)", file=out)


def _format_explain(r: dict[str, Any], out: TextIO) -> None:
    print(f"{r['device']}: {r['mode']}, scheduler {_s(r['scheduler'])}, policy "
          f"{_s(r['policy'])}, goal {_s(r['goal'])}, class {_class(r['class'])}", file=out)
    if r.get("note"):
        print(f"  note: {r['note']}", file=out)
    if r.get("pin"):
        print(f"  pin: {_pin(r['pin'])}", file=out)
    _format_decided_by(r.get("decided_by") or {}, out)
    d = r.get("decision")
    if d:
        print(f"decision: {d['action']} ({d['reason']}): {d['text']}", file=out)
        if d.get("reason_means"):
            print(f"  {d['reason']}: {d['reason_means']}", file=out)
        v = d.get("verdict") or {}
        if v:
            print(f"  verdict: {_s(v.get('policy'))} from {_s(v.get('matrix'))} cell "
                  f"{_s(v.get('cell'))} (line {_s(v.get('cell_line'))}); source "
                  f"{_s(v.get('source'))}", file=out)
        res = d.get("resolution")
        if res:
            knobs = ", ".join(f"{k}={v}" for k, v in (res.get("knobs") or {}).items())
            fell = f" (fallback: {res.get('reason')})" if res.get("fell_back") else ""
            print(f"  realised as: {_s(res.get('scheduler'))}"
                  f"{' [' + knobs + ']' if knobs else ''}{fell}", file=out)
    _format_trials(r.get("trials") or {}, out)
    f = r.get("features")
    if f:
        print("features of the last window:", file=out)
        rows = [[k, _feature(v)] for k, v in f.items() if k not in ("device", "class")]
        table(rows, out)
    h = r.get("history") or []
    if h:
        print("recent switches:", file=out)
        _format_history(h, out)


def _format_trials(trials: dict[str, Any], out: TextIO) -> None:
    """The trial under way and those of the last hour (decide/trial.py)."""
    t = trials.get("under_way")
    if t:
        rounds = t.get("rounds", 1)
        rnd = f", round {t['round']} of {rounds}" if rounds > 1 else ""
        so_far = ", gains so far " + ", ".join(f"{100 * g:+.0f}%" for g in t["gains"]) \
            if t.get("gains") else ""
        if t.get("measuring", t["candidate"]) == t["base"]:
            what = f"{t['base']} measured again as the next round's base"
        else:
            what = f"against {t['base_bytes_per_s'] / 1e6:.2f} MB/s under {t['base']}"
        print(f"trial under way: {t['candidate']} in place of {t['base']} for cell {t['cell']}"
              f"{rnd}, {len(t['measured'])} of {t['windows']} windows measured, {what}"
              f"{so_far}", file=out)
    for d in trials.get("done") or []:
        verdict = "kept" if d["kept"] else "given back"
        print(f"trial {_age(d['age_s'])} ago, cell {d['cell']}: {d['candidate']} {verdict} "
              f"({d['why']})", file=out)


def _feature(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return _s(v)


def _format_history(items: list[dict[str, Any]], out: TextIO) -> None:
    if not items:
        print("no switches yet", file=out)
        return
    rows = [["TIME", "DEVICE", "FROM", "TO", "POLICY", "REASON", "RESULT", "STALL", "WHY"]]
    for h in items:
        result = "dry-run" if h.get("dry_run") else "ok" if h.get("ok") else "FAILED"
        stall = h.get("stall_s")
        rows.append([time.strftime("%H:%M:%S", time.localtime(h["time"])), h["device"],
                     _s(h.get("from_scheduler")), _s(h.get("to_scheduler")),
                     f"{_s(h.get('from_policy'))} -> {_s(h.get('to_policy'))}",
                     _s(h.get("reason")), result,
                     "-" if stall is None else f"{stall * 1000:.1f}ms",
                     _s(h.get("why"))[:60]])
    table(rows, out)


def _format_action(r: Any, out: TextIO) -> None:
    if not isinstance(r, dict):
        print(_s(r), file=out)
        return
    if "reloaded" in r:
        print(f"reloaded {r['reloaded']}", file=out)
        for k, what in (r.get("not_applied") or {}).items():
            print(f"  not applied: {k} {what}", file=out)
        return
    parts = [f"{k} {_s(v)}" for k, v in r.items() if k != "device"]
    if r.get("for_s") is not None:
        parts = [p for p in parts if not p.startswith("for_s")] + [f"for {_age(r['for_s'])}"]
    elif "for_s" in r:
        parts = [p for p in parts if not p.startswith("for_s")] + ["until unpinned"]
    print(f"{r.get('device', '')}: {', '.join(parts)}", file=out)


FORMATTERS: dict[str, Callable[[Any, TextIO], None]] = {
    "status": _format_status,
    "explain": _format_explain,
    "history": _format_history,
}
