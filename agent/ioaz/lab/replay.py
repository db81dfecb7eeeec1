"""`ioaz-lab replay LOG... --model M`: what a model names on the windows `ioazd --verbose`
logged.

    ioaz-lab replay guest/raw/s-5r5w-seq.ioazd-dry@bfq.0.ioazd.log --model kernel.model.json

A verdict in a log came from the model ioazd ran then. Replaying the same windows through
another model (one trained again, on more workloads) says what it would have named there,
before a bench measures what it does. Only the windows ioazd classified are replayed (not
idle, not too few requests). The window lines carry the numbers a model reads since
ioaz 0820a0c; the class's process count over its horizon since the same day, and where a line
lacks it the window's own count stands in (as the model itself does without a horizon).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from statistics import median
from typing import Any

from ..model.file import Model, ModelError, load


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", metavar="LOG", help="ioazd --verbose log (its stderr)")
    p.add_argument("--model", required=True, help="model manifest (.model.json)")
    p.add_argument("--device", help="only this device's windows (default: every device)")
    p.add_argument("--json", action="store_true", help="one JSON object per log")


class ReplayError(ValueError):
    pass


def windows(path: Path, device: str | None) -> list[dict[str, Any]]:
    """The classified window lines of a log, each as the features a model reads."""
    out = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as e:
        raise ReplayError(f"{path}: {e.strerror or e}") from None
    for line in lines:
        start = line.find("{")
        if start < 0:
            continue
        try:
            event = json.loads(line[start:])
        except ValueError:
            continue    # a log line that is not ioazd's JSON (the bench's markers)
        if (not isinstance(event, dict) or event.get("event") != "window"
                or event.get("class") is None or (device and event.get("device") != device)):
            continue
        feats = event.get("features")
        if not isinstance(feats, dict):
            raise ReplayError(f"{path}: window lines without their features (written by an "
                              "ioazd older than 0820a0c); nothing to replay")
        out.append({**feats, "processes": event.get("processes")})
    return out


def replay(model: Model, feats: list[dict[str, Any]]) -> dict[str, Any]:
    named: Counter[str] = Counter()
    scores = []
    for f in feats:
        policy, score = model.predict_proba(model.vector_of(f))[0]
        named[policy] += 1
        scores.append(score)
    return {"windows": len(feats), "named": dict(named.most_common()),
            "median_top_score": round(median(scores), 4) if scores else None}


def run(args: argparse.Namespace) -> int:
    try:
        model = load(args.model)
    except ModelError as e:      # names the file and what is wrong with it
        print(f"ioaz-lab replay: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"ioaz-lab replay: {args.model}: {e.strerror or e}", file=sys.stderr)
        return 2
    status = 0
    for log in args.logs:
        try:
            result = replay(model, windows(Path(log), args.device))
        except ReplayError as e:
            print(f"ioaz-lab replay: {e}", file=sys.stderr)
            status = 2
            continue
        if args.json:
            print(json.dumps({"log": log, "model": model.name, **result}))
            continue
        kind = "share of best" if model.output == "share" else "probability"
        named = ", ".join(f"{p} {n}" for p, n in result["named"].items()) or "-"
        print(f"{log}: {result['windows']} windows; {model.name} names {named}; "
              f"median top {kind} {result['median_top_score']}")
    return status
