"""Knob settings that are valid but known to harm the disk they are written on: `ioazd --check`,
`--check-config`, every start and every reload warn of each, with the FILE:LINE that sets it,
and go on. They stay the operator's to keep: each hurts only in the case its warning names.

Deciding only: the files are read for their line numbers, nothing is written.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..decide.config import DecideContext
from ..located import Doc, DocPath, ValidationError, load_file
from ..realisation import Value


@dataclass(frozen=True)
class Hazard:
    scheduler: str
    knob: str
    harmful: Callable[[Value], bool]
    why: str


def _is_zero(v: Value) -> bool:
    try:
        return int(v) == 0
    except (TypeError, ValueError):
        return False


# bfq_end_wr (block/bfq-iosched.c, 6.12 and before) ends weight raising for every queue and
# counts each busy one off wr_busy_queues, raised or not; the count then stays below zero and
# bfq's "idling without issues" test fails on that disk until its scheduler is set anew, which
# lets its stable merging through (docs/testbed.md, forty-ninth run: all five readers merged).
# ioazd writes a policy's knobs right after the switch, when the running processes' queues are
# already busy.
KNOWN = (
    Hazard("bfq", "low_latency", _is_zero,
           "turning bfq's low_latency off on a busy disk leaves bfq's count of weight-raised "
           "queues below zero (bfq_end_wr), so bfq no longer finds idling worth it 'without "
           "issues' there and merges sequential readers' queues it would keep apart, until "
           "the scheduler is set anew; ioazd writes it just after switching, when the disk is "
           "busy (docs/limits.md)"),
)


@dataclass(frozen=True)
class KnobSetting:
    file: str
    path: DocPath        # where in the file, for its line
    where: str           # which policy or matrix sets it, for the message
    scheduler: str
    knob: str
    value: Value


def knob_settings(ctx: DecideContext) -> Iterator[KnobSetting]:
    """Every knob the policies and the matrices' tunables will write, and where it is set."""
    if ctx.policies is not None:
        for name, realisations in ctx.policies.realisations.items():
            for i, r in enumerate(realisations):
                for knob, value in r.knobs.items():
                    yield KnobSetting(ctx.policies.path,
                                      ("policies", name, "realisations", i, "knobs", knob),
                                      f"policy {name}", r.scheduler, knob, value)
    for matrix in ctx.matrices.values():
        for scheduler, knobs in matrix.tunables.items():
            for knob, value in knobs.items():
                yield KnobSetting(matrix.path, ("tunables", scheduler, knob),
                                  f"tunables of {matrix.name}", scheduler, knob, value)


def knob_warnings(ctx: DecideContext, known: tuple[Hazard, ...] = KNOWN) -> list[str]:
    """FILE:LINE: what a knob setting risks, one line each; [] when none is known to harm."""
    out: list[str] = []
    docs: dict[str, Doc | None] = {}
    for s in knob_settings(ctx):
        for h in known:
            if (s.scheduler, s.knob) == (h.scheduler, h.knob) and h.harmful(s.value):
                out.append(f"{_located(s, docs)}: {s.where}: {s.scheduler} "
                           f"{s.knob}={s.value}: {h.why}")
    return out


def _located(s: KnobSetting, docs: dict[str, Doc | None]) -> str:
    if s.file not in docs:
        try:
            docs[s.file] = load_file(s.file)
        except (OSError, ValidationError):   # loaded once already; a line is a nicety
            docs[s.file] = None
    doc = docs[s.file]
    return f"{s.file}:{doc.line(s.path)}" if doc is not None else s.file
