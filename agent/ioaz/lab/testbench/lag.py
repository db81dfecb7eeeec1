"""How long ioazd took to follow each phase of a mix, read back from its `--verbose` log.

A switch that comes late has three parts, and each has its own fix: the class (the probe's
windows still show the last phase's processes), the verdict (the class is new but its cell
names the same policy, or the model hesitates) and the damping (the verdict is new and
hysteresis or the dwell holds it back). Per phase this gives the seconds from the phase's
start to the first window with the class the phase settled on, to the first window whose
verdict was the one it settled on, and to the first window with that policy in force.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Window:
    t: float                 # seconds from the workload's start to the window's end
    klass: str               # e.g. "4/sequential/read/shallow"
    verdict: str | None
    policy: str | None       # in force after the window's decision


def events(log: Path) -> Iterator[tuple[float, dict[str, Any]]]:
    """ioazd's JSON log lines as the bench keeps them, each with its seconds from the last
    workload start mark; a line before the first mark (the idle policy's switch at ioazd's
    start) from that mark, so negative (a log with no mark: from ioazd's start)."""
    if not log.exists():
        return
    lines = log.read_text(errors="replace").splitlines()
    t_start = next((float(t) for t, _, rest in (ln.partition(" ") for ln in lines)
                    if "@@ workload start" in rest), 0.0)
    for line in lines:
        t_text, _, rest = line.partition(" ")
        if "@@ workload start" in rest:
            t_start = float(t_text)
            continue
        i = rest.find("{")
        if i < 0:
            continue
        try:
            ev = json.loads(rest[i:])
        except ValueError:
            continue
        if isinstance(ev, dict):
            yield round(float(t_text) - t_start, 2), ev


def phase_starts(log: Path, stamps: Path) -> list[float] | None:
    """When each phase of a mix began, in seconds from the workload's start mark: the
    mix's `date` stamps ($OUT.starts, "PHASE EPOCH" lines) against the mark's wall clock.
    None when either is missing (a run of an older bench)."""
    wall = None
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            _, _, rest = line.partition(" ")
            if rest.startswith("@@ workload start wall="):
                wall = float(rest.rsplit("=", 1)[1])
    if wall is None or not stamps.exists():
        return None
    out = []
    for line in stamps.read_text().splitlines():
        parts = line.split()
        if len(parts) != 2:
            return None
        out.append(round(float(parts[1]) - wall, 2))
    return out


def windows(log: Path, device: str) -> list[Window]:
    """The `"event": "window"` lines of DEVICE after the workload's start."""
    out: list[Window] = []
    for t, ev in events(log):
        if ev.get("event") == "window" and ev.get("device") == device and t > 0:
            c = ev.get("class") or {}
            out.append(Window(t, "/".join(map(str, c.values())), ev.get("verdict"),
                              ev.get("policy")))
    return out


def _settled(values: list[Any]) -> Any:
    return Counter(values).most_common(1)[0][0] if values else None


def _first(ws: list[Window], start: float, attr: str, value: Any) -> float | None:
    """Seconds from START to the first window whose ATTR is VALUE (None: none was)."""
    if value is None:
        return None
    return next((round(w.t - start, 2) for w in ws if getattr(w, attr) == value), None)


def phase_lags(wins: list[Window], phases: tuple[str, ...], phase_s: float,
               starts: list[float] | None = None) -> list[dict[str, Any]]:
    """Per phase: what it settled on (the most common class and verdict of its second half)
    and the seconds from its start until a window first showed each, and until the policy
    was in force (None: not within the phase). STARTS: when each phase really began (else
    every PHASE_S, as the mix asks; fio starts each a little later)."""
    if starts is None or len(starts) != len(phases):
        starts = [i * phase_s for i in range(len(phases))]
    out = []
    for i, name in enumerate(phases):
        start = starts[i]
        end = starts[i + 1] if i + 1 < len(starts) else start + phase_s
        ws = [w for w in wins if start < w.t <= end]
        late = [w for w in ws if w.t > start + phase_s / 2]
        klass = _settled([w.klass for w in late])
        verdict = _settled([w.verdict for w in late])
        out.append({"phase": name, "start_s": start, "windows": len(ws), "class": klass,
                    "verdict": verdict,
                    "class_s": _first(ws, start, "klass", klass),
                    "verdict_s": _first(ws, start, "verdict", verdict),
                    "in_force_s": _first(ws, start, "policy", verdict)})
    return out
