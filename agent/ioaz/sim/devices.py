"""Device models, loaded from YAML: a zoned seek-and-rotate HDD (hdd.py), an SSD and a
fixed-service device (ssd.py), and RAID 0, 1+0 and 5 arrays of HDDs (raid.py); what the engine
needs from any of them is device_base.Device.

Parameters come from YAML (models/*.yaml, see `load_device`); every default there cites the paper
it comes from, and the few numbers the papers do not give are marked as assumptions.
"""
from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

from ioaz.located import ValidationError, load_file
from ioaz.sim import PKG
from ioaz.sim.device_base import Device
from ioaz.sim.hdd import HDD, HDDParams
from ioaz.sim.raid import RAID, RAIDParams
from ioaz.sim.ssd import SSD, FixedDevice, FixedParams, SSDParams

__all__ = ["HDD", "RAID", "SSD", "Device", "FixedDevice", "FixedParams", "HDDParams",
           "RAIDParams", "SSDParams", "device_from_dict", "load_device", "model_names"]

MODELS_DIR = PKG / "models"  # the sources' directory, also when this module runs compiled


def _build(cls: type, kwargs: dict[str, Any], where: str) -> Any:
    known = {f.name for f in fields(cls)}
    bad = sorted(set(kwargs) - known)
    if bad:
        raise ValueError(f"{where}: unknown parameter(s) {bad}; expected some of {sorted(known)}")
    return cls(**kwargs)


def device_from_dict(spec: dict[str, Any], where: str = "device") -> Device:
    spec = dict(spec)
    kind = spec.pop("kind", "hdd")
    if kind == "hdd":
        return HDD(_build(HDDParams, spec, where))
    if kind == "ssd":
        return SSD(_build(SSDParams, spec, where))
    if kind == "fixed":
        return FixedDevice(_build(FixedParams, spec, where))
    if kind == "raid":
        spec["level"] = str(spec.get("level", "0"))
        member = spec.get("member")
        if isinstance(member, str):
            spec["member"] = _load_spec(member)
            spec["member"].pop("kind", None)
        return RAID(_build(RAIDParams, spec, where))
    raise ValueError(f"{where}: kind {kind!r} not one of hdd, ssd, fixed, raid")


def _load_spec(name_or_path: str) -> dict[str, Any]:
    path = Path(name_or_path)
    if not path.suffix:
        path = MODELS_DIR / f"{name_or_path}.yaml"
    if not path.exists():
        raise ValueError(f"device model {name_or_path!r} not found "
                         f"(known: {', '.join(model_names())})")
    try:
        data = load_file(path).data      # read as every YAML file of ioaz is (ioaz.located)
    except ValidationError as e:
        raise ValueError(str(e)) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of device parameters")  # noqa: TRY004
    data.setdefault("name", path.stem)
    return data


def load_device(name_or_path: str, **overrides: Any) -> Device:
    """A device from a model name (models/NAME.yaml) or a YAML file path, with overrides."""
    spec = _load_spec(name_or_path)
    spec.update(overrides)
    return device_from_dict(spec, where=name_or_path)


def model_names() -> list[str]:
    return sorted(p.stem for p in MODELS_DIR.glob("*.yaml"))
