"""What the daemon shows of a device: its status, the explanation of its last decision (ioazctl
status and explain), and the line `ioazd --verbose` logs each window. Plain dicts built from a
device's record and the clocks' readings; core.Daemon holds the lock while they are built."""
from __future__ import annotations

from typing import Any

from ..decide import Decision
from ..decide.config import DecideConfig
from ..decide.reasons import describe
from .records import DeviceRecord


def device_status(rec: DeviceRecord, wall: float, clock: float) -> dict[str, Any]:
    """`wall`: unix time now (decision ages); `clock`: the monotonic clock now (pins)."""
    d = rec.decision
    return {
        "device": rec.name, "mode": rec.state.mode.value, "scheduler": rec.scheduler,
        "policy": rec.state.policy, "goal": d.goal if d else None,
        "class": rec.features.workload_class.axes()
        if rec.features and rec.features.workload_class else None,
        "last_action": d.action if d else None, "last_reason": d.reason if d else None,
        "decision_age_s": (wall - rec.decision_time) if rec.decision_time else None,
        "pin": {"policy": rec.state.pin.policy,
                "remaining_s": None if rec.state.pin.until is None
                else max(0.0, rec.state.pin.until - clock)}
        if rec.state.pin else None,
        "note": rec.state.note, "errors": rec.errors, "last_error": rec.last_error,
    }


def explanation(rec: DeviceRecord, history: list[dict[str, Any]], settings: DecideConfig,
                wall: float, clock: float) -> dict[str, Any]:
    """`ioazctl explain`: the status, the features, the decision with its verdict and how it
    was realised, the damping state, the trials and the device's last 10 switches."""
    d = rec.decision
    return {**device_status(rec, wall, clock),
            "features": rec.features.observe_dict() if rec.features else None,
            "decision": {"action": d.action, "reason": d.reason,
                         "reason_means": describe(d.reason), "text": d.text,
                         "verdict": verdict_dict(d),
                         "resolution": resolution_dict(d)} if d else None,
            "state": rec.state.as_dict(),
            "trials": trials(rec, settings, clock),
            "history": history[-10:]}


def trials(rec: DeviceRecord, settings: DecideConfig, clock: float) -> dict[str, Any]:
    """The trial under way and the trials of the last trial_retry_s, with their ages
    (decide/trial.py); a cell is "matrix:cell", shown by its cell key."""
    t = rec.state.trial
    return {
        "under_way": None if t is None else {
            "cell": t.cell.rsplit(":", 1)[-1], "base": t.base, "candidate": t.candidate,
            "base_bytes_per_s": t.base_value, "measured": list(t.values),
            "windows": settings.trial_windows,
            "round": len(t.gains) + 1, "rounds": settings.trial_rounds,
            "gains": list(t.gains), "measuring": t.base if t.measuring_base else t.candidate,
            "age_s": clock - t.started},
        "done": [{"cell": r.cell.rsplit(":", 1)[-1], "base": r.base,
                  "candidate": r.candidate, "kept": r.kept, "gain": r.gain,
                  "why": r.why, "age_s": clock - r.at} for r in rec.state.trials],
    }


def window_line(d: Decision) -> dict[str, Any]:
    """One window's decision for one device, as `ioazd --verbose` logs it: enough to tell,
    after the fact, when the class changed, when the verdict followed and why a switch waited."""
    v = d.verdict
    return {"event": "window", "device": d.device,
            # the window's own count beside the class's, which counts over its horizon
            "processes": d.features.get("processes"),
            "class": d.workload_class, "cell": v.cell if v else None,
            "verdict": v.policy if v else None, "policy": d.policy, "action": d.action,
            "reason": d.reason, "why": d.text,
            # what the class and a model read, so a verdict can be checked against the
            # calibration's runs of the same kind afterwards
            "features": {k: _rounded(d.features.get(k)) for k in WINDOW_FEATURES}}


# The numbers a window's class and a model are computed from (learn/dataset.py's FEATURES,
# the reads' depth and the requests in flight the class's depth axis reads, the disk's dirty
# data a model reads).
WINDOW_FEATURES = ("iops", "read_bytes_per_s", "write_bytes_per_s", "read_ratio", "seq_ratio",
                   "avg_depth", "read_depth", "mean_size_bytes", "p50_latency_s",
                   "p99_latency_s", "merge_ratio", "class_processes", "dirty_fill", "in_flight")


def _rounded(v: Any) -> Any:
    return float(f"{v:.4g}") if isinstance(v, float) else v


def verdict_dict(d: Decision) -> dict[str, Any] | None:
    v = d.verdict
    if v is None:
        return None
    out = {k: getattr(v, k) for k in ("policy", "provider", "goal", "text", "matrix", "rule",
                                      "cell", "cell_line", "source", "source_kind", "model",
                                      "confidence") if hasattr(v, k)}
    if hasattr(v, "candidates"):   # a model's top candidates: [[policy, probability], ...]
        out["candidates"] = [list(c) for c in v.candidates]
    return out


def resolution_dict(d: Decision) -> dict[str, Any] | None:
    r = d.resolution
    if r is None:
        return None
    return {"policy": r.policy, "scheduler": r.scheduler, "knobs": dict(r.knobs),
            "fell_back": r.fell_back, "reason": r.reason}
