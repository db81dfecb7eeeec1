"""Decision matrices: load, validate (FILE:LINE), and look a workload class up.

A matrix maps goal x workload class -> policy. Its `axes` say which parts of the class it
uses: IOAZ Tables 1-3 use all three (processes/pattern/mode), Table 4 only processes; a
matrix measured on the device may add `depth` (shallow/deep requests in flight per process)
and `size` (small/large mean request).
Every combination of the axes' values must have a cell, and every cell must name a source,
so an administrator can always see why a policy was chosen.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..classify.types import DEPTHS, MODES, PATTERNS, PROCESS_BUCKETS, SIZES, WorkloadClass
from ..located import Doc, Issue, ValidationError, format_path, load_file
from .schema import Schema

AXIS_VALUES: dict[str, tuple[str, ...]] = {
    "processes": PROCESS_BUCKETS,
    "pattern": PATTERNS,
    "mode": MODES,
    "depth": DEPTHS,
    "size": SIZES,
}
AXIS_ORDER = ("processes", "pattern", "mode", "depth", "size")
GOALS = ("min", "max", "mean", "throughput", "latency")


@dataclass(frozen=True)
class Source:
    key: str
    cite: str
    kind: str  # measured | published | judgement
    url: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Cell:
    key: str          # e.g. "4/random/read"
    policy: str
    source: Source
    note: str | None
    line: int         # where the cell is written, for `ioazctl explain`
    # The policy measured second for this class and the winner's lead over it, in points of
    # share of the per-workload best (derived matrices only; the papers give winners only).
    runner_up: str | None = None
    margin_points: float | None = None
    # Other policies the calibration could not tell from this one (within the derive margin
    # of the cell's best): one of them in force is kept, not switched away for noise.
    within_noise: tuple[str, ...] = ()
    # Policies as good on the goal but with a p99 this many times this one's: not kept, and
    # not taken from a model over this cell's policy.
    p99_over: tuple[tuple[str, float], ...] = ()
    # Every measured policy's highest share of the per-workload best over this cell's
    # workloads, best first (derived matrices): the least the scheduler in force lost on any
    # of them (confirm.decisive).
    shares: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Matrix:
    path: str
    name: str
    axes: tuple[str, ...]
    sources: dict[str, Source]
    tables: dict[str, dict[str, Cell]]  # goal -> cell key -> cell
    # scheduler -> knobs measured on the matrix's disk (the stream curve), written with it
    tunables: dict[str, dict[str, int | str]] = field(default_factory=dict)

    @property
    def goals(self) -> tuple[str, ...]:
        return tuple(self.tables)

    def cell_key(self, wclass: WorkloadClass) -> str:
        values = wclass.axes()
        return "/".join(values[a] for a in self.axes)

    def lookup(self, goal: str, wclass: WorkloadClass) -> Cell | None:
        """The cell for this goal and class, or None when this matrix has no such goal."""
        table = self.tables.get(goal)
        if table is None:
            return None
        return table[self.cell_key(wclass)]  # complete by validation

    def measured_winners(self, goal: str) -> tuple[str, ...]:
        """The policies that won this goal's measured cells, those that won most first (then
        by name): what a measurement found best somewhere on this matrix's disk."""
        won: dict[str, int] = {}
        for cell in self.tables.get(goal, {}).values():
            if cell.source.kind == "measured":
                won[cell.policy] = won.get(cell.policy, 0) + 1
        return tuple(sorted(won, key=lambda p: (-won[p], p)))


def all_cell_keys(axes: tuple[str, ...]) -> list[str]:
    return ["/".join(c) for c in itertools.product(*(AXIS_VALUES[a] for a in axes))]


def load_matrix(path: str | Path, schema: Schema | None = None) -> Matrix:
    """Load and fully validate one matrix file; raise ValidationError listing every issue."""
    doc = load_file(path)
    return matrix_from_doc(doc, schema or Schema.load())


def matrix_from_doc(doc: Doc, schema: Schema) -> Matrix:
    issues = schema.check(doc, "matrix")
    if issues:
        raise ValidationError(issues)
    issues = _semantic_issues(doc)
    if issues:
        raise ValidationError(issues)
    return _build(doc)


def _semantic_issues(doc: Doc) -> list[Issue]:
    d: dict[str, Any] = doc.data
    out: list[Issue] = []
    axes = tuple(d["axes"])
    if list(axes) != [a for a in AXIS_ORDER if a in axes]:
        out.append(doc.issue(("axes",), f"axes: wrong order (got {', '.join(axes)}, expected "
                                        f"{', '.join(a for a in AXIS_ORDER if a in axes)})"))
        return out
    sources = d["sources"]
    default = d.get("default_source")
    if default is not None and default not in sources:
        out.append(doc.issue(("default_source",),
                             f"default_source: unknown source (got {default!r}, expected one "
                             f"of {', '.join(sources)})"))
    expected = all_cell_keys(axes)
    for goal, cells in d["goals"].items():
        gpath = ("goals", goal)
        for key, cell in cells.items():
            cpath = gpath + (key,)
            if key not in expected:
                out.append(doc.issue(cpath, f"{format_path(cpath)}: unknown cell (got {key!r}, "
                                            f"expected a key like {expected[0]!r} for axes "
                                            f"{'/'.join(axes)})", at_key=True))
                continue
            src = cell.get("source") if isinstance(cell, dict) else None
            runner = cell.get("runner_up") if isinstance(cell, dict) else None
            tied = cell.get("within_noise") if isinstance(cell, dict) else None
            if tied is not None and cell["policy"] in tied:
                tpath = cpath + ("within_noise",)
                out.append(doc.issue(tpath, f"{format_path(tpath)}: lists the cell's own policy "
                                            f"(got {cell['policy']!r}, expected only others)"))
            over = cell.get("p99_over") if isinstance(cell, dict) else None
            for p in (over or {}):
                if p == cell["policy"] or p in (tied or ()):
                    opath = cpath + ("p99_over", p)
                    what = "the cell's own policy" if p == cell["policy"] else \
                        "also listed within_noise"
                    out.append(doc.issue(opath, f"{format_path(opath)}: {what} (got {p!r}, "
                                                "expected a policy that is neither)",
                                         at_key=True))
            if runner is not None and runner["policy"] == cell["policy"]:
                rpath = cpath + ("runner_up", "policy")
                out.append(doc.issue(rpath, f"{format_path(rpath)}: the runner-up is the cell's "
                                            f"own policy (got {runner['policy']!r}, expected "
                                            "another policy)"))
            if src is not None and src not in sources:
                out.append(doc.issue(cpath + ("source",),
                                     f"{format_path(cpath + ('source',))}: unknown source (got "
                                     f"{src!r}, expected one of {', '.join(sources)})"))
            elif src is None and default is None:
                out.append(doc.issue(cpath, f"{format_path(cpath)}: cell without a source (got "
                                            "no source and no default_source, expected one)"))
        missing = [k for k in expected if k not in cells]
        if missing:
            shown = ", ".join(missing[:4]) + (", ..." if len(missing) > 4 else "")
            out.append(doc.issue(gpath, f"{format_path(gpath)}: missing cells (got "
                                        f"{len(cells)} of {len(expected)}, expected also "
                                        f"{shown})", at_key=True))
    return out


def _build(doc: Doc) -> Matrix:
    d: dict[str, Any] = doc.data
    sources = {k: Source(k, " ".join(v["cite"].split()), v["kind"], v.get("url"), v.get("note"))
               for k, v in d["sources"].items()}
    default = d.get("default_source")
    tables: dict[str, dict[str, Cell]] = {}
    for goal, cells in d["goals"].items():
        table: dict[str, Cell] = {}
        for key, cell in cells.items():
            if isinstance(cell, str):
                table[key] = Cell(key, cell, sources[default], None,
                                  doc.key_line(("goals", goal, key)))
                continue
            runner = cell.get("runner_up")
            table[key] = Cell(key, cell["policy"], sources[cell.get("source", default)],
                              cell.get("note"), doc.key_line(("goals", goal, key)),
                              runner["policy"] if runner else None,
                              float(runner["margin_points"]) if runner else None,
                              tuple(cell.get("within_noise", ())),
                              tuple((p, float(r)) for p, r in
                                    (cell.get("p99_over") or {}).items()),
                              tuple((p, float(x)) for p, x in
                                    (cell.get("shares") or {}).items()))
        tables[goal] = table
    tunables = {sched: dict(knobs) for sched, knobs in (d.get("tunables") or {}).items()}
    return Matrix(doc.file, d["name"], tuple(d["axes"]), sources, tables, tunables)
