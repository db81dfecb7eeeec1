"""The feature vector a model reads: WindowFeatures -> list of floats, and its schema.

The schema (names, transforms, version) is saved with every model; the daemon refuses a model
whose schema differs from this one, because the same numbers in another order or scale would
be silently wrong. Rates, sizes and latencies are log-scaled (their range spans decades: a
linear model needs it, trees do not mind); a value the source cannot measure (None: diskstats
has no seq_ratio or processes) becomes -1, outside every real value's range.

Two features are derived from the window's own fields, because what decides between idling
schedulers (cfq, anticipatory) and the rest is how long a process thinks between requests,
and a tree sees it only as a small difference between two large features (docs/results.md,
"Learning", has the workloads that look alike without them and what the two features gained).
By Little's law the device holds avg_depth requests on average, so
`depth_per_process` = avg_depth / processes is the share of time a synchronous process has a
request in flight (above 1: asynchronous), and `think_time_s` = (processes - avg_depth) / iops
(0 when negative) the time per request a process spends not waiting for the device.

`processes` is the class's count over its horizon (classify/horizon.py) where the window has
one, the window's own count where not (an older dataset). Under stream a reader the elevator
is not serving can submit nothing for a whole window: four readers counted three in some
windows, and the tree trained on the runs' counts read three readers as deadline's, four as
stream's, and switched between them in the middle of the phase (docs/testbed.md, seventy-second
run). How many processes drive the disk is the workload's, not the scheduler's, in the model as
in the class.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..classify.types import WindowFeatures

SCHEMA_VERSION = 4   # 3: processes over the class's horizon; 4: the disk's dirty data
MISSING = -1.0

# (name, transform): log1p of the value in the unit given, or the ratio as it is.
FEATURE_SCHEMA: tuple[tuple[str, str], ...] = (
    ("iops", "log1p"),
    ("read_bytes_per_s", "log1p_kib"),
    ("write_bytes_per_s", "log1p_kib"),
    ("read_ratio", "identity"),
    ("seq_ratio", "identity"),
    ("processes", "log1p"),
    ("avg_depth", "log1p"),
    ("mean_size_bytes", "log1p_kib"),
    ("p50_latency_s", "log1p_us"),
    ("p99_latency_s", "log1p_us"),
    ("merge_ratio", "identity"),
    ("depth_per_process", "identity"),
    ("think_time_s", "log1p_us"),
    # the disk's dirty data over its threshold (bdi.py): writers the scheduler holds back,
    # which the requests do not show (docs/limits.md)
    ("dirty_fill", "identity"),
)
Schema = tuple[tuple[str, str], ...]
# The schemas this ioaz still computes, by version: a model keeps the features it was trained
# on, so one trained before a feature was added reads the window as it did then.
READABLE: dict[int, Schema] = {3: FEATURE_SCHEMA[:13], 4: FEATURE_SCHEMA}
SCALE = {"log1p": 1.0, "log1p_kib": 1 / 1024, "log1p_us": 1e6}


def schema_doc() -> dict[str, Any]:
    return {"version": SCHEMA_VERSION,
            "features": [{"name": n, "transform": t} for n, t in FEATURE_SCHEMA],
            "missing": MISSING}


def transform(value: float | None, how: str) -> float:
    if value is None or not math.isfinite(value):
        return MISSING
    if how == "identity":
        return float(value)
    return math.log1p(max(0.0, float(value)) * SCALE[how])


def _processes(get: Callable[[str], Any]) -> Any:
    horizon = get("class_processes")
    return get("processes") if horizon is None else horizon


def _depth_per_process(get: Callable[[str], Any]) -> float | None:
    p, d = get("processes"), get("avg_depth")
    return None if not p or d is None else float(d) / float(p)


def _think_time_s(get: Callable[[str], Any]) -> float | None:
    p, d, iops = get("processes"), get("avg_depth"), get("iops")
    if not p or d is None or not iops:
        return None
    return max(0.0, float(p) - float(d)) / float(iops)


DERIVED: dict[str, Callable[[Callable[[str], Any]], float | None]] = {
    "depth_per_process": _depth_per_process, "think_time_s": _think_time_s}


def _vector(raw: Callable[[str], Any], schema: Schema) -> list[float]:
    def get(n: str) -> Any:
        return _processes(raw) if n == "processes" else raw(n)
    return [transform(DERIVED[n](get) if n in DERIVED else get(n), how)
            for n, how in schema]


def vector_from_dict(f: dict[str, float | None],
                     schema: Schema = FEATURE_SCHEMA) -> list[float]:
    return _vector(f.get, schema)


def vector(w: WindowFeatures, schema: Schema = FEATURE_SCHEMA) -> list[float]:
    return _vector(lambda n: getattr(w, n), schema)


def schema_of(doc: dict[str, Any]) -> Schema:
    """The features of a saved schema that schema_differences found readable."""
    return READABLE[doc["version"]]


def schema_differences(doc: Any) -> list[str]:
    """What keeps this ioaz from computing a saved schema (empty: it computes it)."""
    if not isinstance(doc, dict):
        return [f"no feature schema (got {type(doc).__name__})"]
    out = []
    version = doc.get("version")
    if version not in READABLE:
        out.append(f"schema version {version!r}, this ioaz computes versions "
                   f"{', '.join(map(str, sorted(READABLE)))}")
        version = SCHEMA_VERSION
    got = [(f.get("name"), f.get("transform")) for f in doc.get("features") or []
           if isinstance(f, dict)]
    want = list(READABLE[version])
    if got != want:
        missing = [f"{n}({t})" for n, t in want if (n, t) not in got]
        extra = [f"{n}({t})" for n, t in got if (n, t) not in want]
        if missing:
            out.append(f"lacks {', '.join(missing)}")
        if extra:
            out.append(f"has unknown {', '.join(extra)}")
        if not missing and not extra:
            out.append("features in another order")
    if doc.get("missing") != MISSING:
        out.append(f"missing values as {doc.get('missing')!r}, not {MISSING}")
    return out
