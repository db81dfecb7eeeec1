"""The ioazd configuration file (default deploy/ioaz.yaml): loaded, checked, errors as FILE:LINE.

Top level:
    window_s: 1.0                  length of a window in seconds
    rest_window_s: 4.0             the window's length while every device is calm (settled,
                                   nothing to try, idle, or pinned): 0 never rests (rest.py)
    dry_run: false                 decide and log, never write to sysfs
    probe: auto                    auto (bpf, else bcc, else /proc/diskstats) | bpf | bcc |
                                   diskstats (bcc: compiled against the kernel's headers)
    probe_sample: 0.1              share of each window the BPF probe counts when the disks
                                   are busy (1: every request; README, Performance)
    devices:
      include: ["*"]               block device name globs to manage, or udev:KEY=GLOB
      exclude: ["loop*", "ram*", "zram*"]
    raid: []                       name globs of devices that are RAID arrays (knob rules)
    writeback_throttling: auto     auto: off on rotating disks unless the goal is latency |
                                   kernel: as the kernel sets it (actuate/knob_rules.py)
    thresholds: PATH               class thresholds (default decision_matrices/thresholds.yaml)
    state_dir: /run/ioaz           originals of changed devices, for restore after a crash
    socket: /run/ioaz/ioaz.sock    ioazctl's socket
    metrics: {listen: "127.0.0.1:19647", detail: basic}
                                   basic: about 30 series a disk; full: fine buckets, sizes
    history: 500                   decisions kept for `ioazctl history`
    decide: {...}                  see decision_matrices/README.md
    classifier:                    optional; without it the matrices decide
      type: model                  matrix (the default) | model
      model: PATH                  a manifest written by `ioaz-lab train` (+ its .portable.json)
      min_confidence: 0.6          a classifier's top probability below this: the matrix decides
      min_margin: 0.05             a share model's top over its runner-up below this: the same
Relative paths are taken from the config file's directory.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..actuate.knob_rules import WRITEBACK_THROTTLING
from ..classify.classes import DEFAULT_THRESHOLDS, Thresholds, ThresholdsError, load_thresholds
from ..decide import DecideContext, ValidationError, config_from_doc, load_context, load_file
from ..home import HOME
from ..located import Doc, Issue, describe
from ..probe import PROBE_CHOICES
from ..probe.sampler import DEFAULT_FRACTION, SamplePlan
from ..udevdb import PROPERTY_NAME, UDEV_PREFIX

CHECKOUT_CONFIG = HOME / "deploy" / "ioaz.yaml"
INSTALLED_CONFIG = Path("/etc/ioaz/ioaz.yaml")
# From a checkout (make run) the checkout's own file; installed (make install, the .deb) there is
# no deploy/ beside the code and ioazd reads /etc/ioaz/ioaz.yaml.
DEFAULT_CONFIG = CHECKOUT_CONFIG if CHECKOUT_CONFIG.exists() else INSTALLED_CONFIG
# What the metrics endpoint exports of each disk (metrics/collector.py says which series)
METRICS_DETAILS = ("basic", "full")
# The file's top-level keys (the decide section's are in decision_matrices/schema.yaml).
SETTINGS = ("window_s", "rest_window_s", "dry_run", "probe", "probe_sample", "devices", "raid",
            "writeback_throttling", "thresholds", "state_dir", "socket", "metrics", "history",
            "decide", "classifier")


@dataclass
class DaemonConfig:
    file: str = ""
    window_s: float = 1.0
    rest_window_s: float = 4.0
    dry_run: bool = False
    dry_run_flag: bool = False            # --dry-run on the command line: no file undoes it
    probe: str = "auto"
    probe_sample: float = DEFAULT_FRACTION
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ("loop*", "ram*", "zram*")
    raid: tuple[str, ...] = ()
    writeback_throttling: str = "auto"    # WRITEBACK_THROTTLING
    thresholds_file: Path = DEFAULT_THRESHOLDS
    state_dir: Path = Path("/run/ioaz")
    socket: Path = Path("/run/ioaz/ioaz.sock")
    metrics_listen: str | None = "127.0.0.1:19647"
    metrics_detail: str = "basic"         # basic | full (metrics/collector.py: DETAILS)
    history: int = 500
    thresholds: Thresholds = field(default_factory=Thresholds)
    decide_context: DecideContext | None = None
    classifier: str = "matrix"            # matrix | model
    model_file: Path | None = None
    min_confidence: float = 0.6
    min_margin: float = 0.05
    model: Any = None                     # ioaz.model.file.Model when classifier is model

    def sample_plan(self) -> SamplePlan:
        """The probe's sampling, one period per window."""
        return SamplePlan.per_window(self.probe_sample, self.window_s)

    @property
    def decide(self) -> DecideContext:
        """The loaded matrices and policies (always set once load_config returns)."""
        assert self.decide_context is not None, "load_config() loads the decide context"
        return self.decide_context


class ConfigError(ValueError):
    """The configuration (or a file it names) is wrong; str() has one FILE:LINE line each."""


def _globs(doc: Doc, path: tuple, issues: list[Issue]) -> tuple[str, ...]:
    v = doc.data
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        issues.append(doc.issue(path, f"expected a list of name globs, got {describe(v)}"))
        return ()
    for i, x in enumerate(v):
        if x.startswith(UDEV_PREFIX):
            key, eq, glob = x[len(UDEV_PREFIX):].partition("=")
            if not eq or not glob or not PROPERTY_NAME.match(key):
                issues.append(doc.issue(path + (i,), f"{'.'.join(map(str, path))}: {x!r}: "
                                        "expected udev:KEY=GLOB (a udev property such as "
                                        "ID_MODEL, and a glob its value must match)"))
    return tuple(v)


def load_config(path: os.PathLike | str | None = None,
                dry_run: bool | None = None) -> DaemonConfig:
    """Read, check and load everything the config names (thresholds, matrices, policies)."""
    path = Path(path or DEFAULT_CONFIG)
    try:
        doc = load_file(path)
    except ValidationError as e:
        raise ConfigError(str(e)) from e
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from e
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: expected a mapping of settings, got {describe(data)}")
    doc.data = data
    cfg = DaemonConfig(file=str(path))
    base = path.resolve().parent
    issues: list[Issue] = []
    for key in data:
        if key not in SETTINGS:
            issues.append(doc.issue((key,), f"unknown setting {key!r} (expected one of "
                                    f"{', '.join(sorted(SETTINGS))})", at_key=True))

    def number(key: str, lo: float, hi: float, integer: bool = False) -> Any:
        v = data.get(key)
        ok = isinstance(v, int if integer else (int, float)) and not isinstance(v, bool)
        if not ok or v is None or not lo <= v <= hi:
            kind = "a whole number" if integer else "a number"
            issues.append(doc.issue((key,), f"{key}: expected {kind} from {lo:g} to {hi:g}, "
                                    f"got {describe(v)}"))
            return None
        return v

    if "window_s" in data:
        cfg.window_s = number("window_s", 0.1, 3600) or cfg.window_s
    if "rest_window_s" in data:
        rest = number("rest_window_s", 0, 3600)
        if rest is not None and 0 < rest <= cfg.window_s:
            issues.append(doc.issue(("rest_window_s",), f"rest_window_s: {rest:g} is not longer "
                                    f"than window_s {cfg.window_s:g}: expected 0 (never rest) "
                                    "or a longer window"))
        elif rest is not None:
            cfg.rest_window_s = float(rest)
    if "history" in data:
        cfg.history = number("history", 1, 100000, integer=True) or cfg.history
    if "dry_run" in data:
        if not isinstance(data["dry_run"], bool):
            issues.append(doc.issue(("dry_run",), f"dry_run: expected true or false, got "
                                    f"{describe(data['dry_run'])}"))
        else:
            cfg.dry_run = data["dry_run"]
    if "probe" in data:
        if data["probe"] not in PROBE_CHOICES:
            issues.append(doc.issue(("probe",), f"probe: expected {', '.join(PROBE_CHOICES)}, got "
                                    f"{describe(data['probe'])}"))
        else:
            cfg.probe = data["probe"]
    if "probe_sample" in data:
        cfg.probe_sample = number("probe_sample", 0.01, 1) or cfg.probe_sample
    try:
        cfg.sample_plan()
    except ValueError as e:
        issues.append(doc.issue(("probe_sample",) if "probe_sample" in data else ("window_s",),
                                f"probe_sample {cfg.probe_sample} with window_s {cfg.window_s}: "
                                f"{e}"))
    devs = data.get("devices")
    if devs is not None:
        if not isinstance(devs, dict):
            issues.append(doc.issue(("devices",), f"devices: expected a mapping with include "
                                    f"and exclude, got {describe(devs)}"))
        else:
            for k in devs:
                if k not in ("include", "exclude"):
                    issues.append(doc.issue(("devices", k), f"devices: unknown key {k!r} "
                                            "(expected include, exclude)", at_key=True))
            if "include" in devs:
                cfg.include = _globs(doc, ("devices", "include"), issues)
            if "exclude" in devs:
                cfg.exclude = _globs(doc, ("devices", "exclude"), issues)
    if "raid" in data:
        cfg.raid = _globs(doc, ("raid",), issues)
    if "writeback_throttling" in data:
        wbt = data["writeback_throttling"]
        if wbt not in WRITEBACK_THROTTLING or isinstance(wbt, bool):
            # YAML 1.1 reads a bare off, on, no or yes as a boolean
            hint = " (a bare on/off is YAML's boolean)" if isinstance(wbt, bool) else ""
            issues.append(doc.issue(("writeback_throttling",), "writeback_throttling: expected "
                                    f"{' or '.join(WRITEBACK_THROTTLING)}, got "
                                    f"{describe(wbt)}{hint}"))
        else:
            cfg.writeback_throttling = data["writeback_throttling"]
    for key, attr in (("state_dir", "state_dir"), ("socket", "socket"),
                      ("thresholds", "thresholds_file")):
        if key in data:
            v = data[key]
            if not isinstance(v, str) or not v:
                issues.append(doc.issue((key,), f"{key}: expected a path, got {describe(v)}"))
            else:
                setattr(cfg, attr, (base / v) if not os.path.isabs(v) else Path(v))
    if "thresholds" in data and isinstance(data["thresholds"], str) and data["thresholds"] \
            and not cfg.thresholds_file.is_file():
        why = "no such file" if not cfg.thresholds_file.exists() else "not a regular file"
        issues.append(doc.issue(("thresholds",), f"thresholds {cfg.thresholds_file}: {why}"))
    if "metrics" in data:
        m = data["metrics"]
        listen = m.get("listen") if isinstance(m, dict) else None
        detail = m.get("detail", "basic") if isinstance(m, dict) else None
        if not isinstance(m, dict) or set(m) - {"listen", "detail"}:
            issues.append(doc.issue(("metrics",), "metrics: expected {listen: HOST:PORT, "
                                    "detail: basic|full} or {listen: null}, got "
                                    f"{describe(m)}"))
        elif listen is not None and (not isinstance(listen, str) or ":" not in listen
                                     or not re.fullmatch(r"[0-9]+", listen.rsplit(":", 1)[1])):
            issues.append(doc.issue(("metrics", "listen"), f"metrics.listen: expected "
                                    f"HOST:PORT, got {describe(listen)}"))
        elif listen is not None and (len(port := listen.rsplit(":", 1)[1]) > 5
                                     or int(port) > 65535):
            # getaddrinfo takes the port modulo 65536: --check would have bound another port
            shown = port if len(port) <= 10 else f"of {len(port)} digits"
            issues.append(doc.issue(("metrics", "listen"),
                                    f"metrics.listen: port {shown} is above 65535"))
        elif detail not in METRICS_DETAILS:
            issues.append(doc.issue(("metrics", "detail"), "metrics.detail: expected "
                                    f"{' or '.join(METRICS_DETAILS)}, got {describe(detail)}"))
        else:
            cfg.metrics_listen = listen
            cfg.metrics_detail = detail
    try:
        decide_cfg = config_from_doc(doc) if "decide" in data else config_from_doc(
            _empty_doc(doc))
    except ValidationError as e:
        issues.extend(e.issues)
        decide_cfg = None
    if issues:
        raise ConfigError(str(ValidationError(issues)))
    try:
        cfg.decide_context = load_context(decide_cfg)
    except ValidationError as e:
        raise ConfigError(str(e)) from e
    try:
        cfg.thresholds = load_thresholds(cfg.thresholds_file)
    except ThresholdsError as e:
        raise ConfigError(str(e)) from e
    if "classifier" in data:
        _load_classifier(doc, cfg, base)
    if dry_run:
        cfg.dry_run = cfg.dry_run_flag = True
    return cfg


def _load_classifier(doc: Doc, cfg: DaemonConfig, base: Path) -> None:
    """The classifier section; a model is loaded here, so a bad one refuses start-up (and a
    reload) with FILE:LINE and the reason. scikit-learn is imported only for a model."""
    c = doc.data["classifier"]
    where = ("classifier",)
    if not isinstance(c, dict) or set(c) - {"type", "model", "min_confidence", "min_margin"}:
        raise ConfigError(str(doc.issue(where, "classifier: expected {type: matrix|model, "
                                        "model: PATH, min_confidence: 0..1, min_margin: 0..1}, "
                                        f"got {describe(c)}")))
    kind = c.get("type", "matrix")
    if kind not in ("matrix", "model"):
        raise ConfigError(str(doc.issue(where + ("type",), f"classifier.type: expected matrix "
                                        f"or model, got {describe(kind)}")))
    gate = {}
    for key in ("min_confidence", "min_margin"):
        v = c.get(key, getattr(cfg, key))
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ConfigError(str(doc.issue(where + (key,), f"classifier.{key}: expected a "
                                            f"number from 0 to 1, got {describe(v)}")))
        gate[key] = float(v)
    cfg.classifier, cfg.min_confidence, cfg.min_margin = kind, gate["min_confidence"], \
        gate["min_margin"]
    if kind == "matrix":
        return
    m = c.get("model")
    if not isinstance(m, str) or not m:
        raise ConfigError(str(doc.issue(where + ("model",) if "model" in c else where,
                                        "classifier.model: expected the path of a model "
                                        f"manifest (ioaz-lab train --out), got {describe(m)}")))
    cfg.model_file = (base / m) if not os.path.isabs(m) else Path(m)
    from ..model.file import ModelError, load
    try:
        ctx = cfg.decide_context
        policies = ctx.policies.policies() if ctx and ctx.policies else None
        cfg.model = load(cfg.model_file, policies)
    except ModelError as e:
        raise ConfigError(str(doc.issue(where + ("model",), f"classifier.model: {e}"))) from e


def _empty_doc(doc: Doc) -> Doc:
    """A document with an empty decide section, so its defaults apply, relative to `doc`."""
    return Doc(file=doc.file, data={"decide": {}}, lines={(): 1, ("decide",): 1})
