"""The daemon's loop and state, one window at a time: read the facts, decide, apply.

The Daemon builds none of its collaborators: the observer (over the probe), the disk selection,
the verdict provider, the actuator, the block sysfs door and the clocks are handed in by
compose.build, so tests drive it window by window against a fake sysfs tree. Control calls
(pin, pause, reload, ...) come from the API thread and take the same lock as a window.
"""
from __future__ import annotations

import collections
import fnmatch
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from ..actuate import Actuator, QueueSettings
from ..actuate.knob_rules import writeback_throttling
from ..classify.types import WindowFeatures
from ..decide import (
    Decision,
    Mode,
    after_rest_window,
    at_start,
    goal_for,
    initial_state,
    on_same_scheduler,
    on_switch_failed,
    pause,
    pin,
    resume,
    set_goal,
    step,
    to_manual,
    unpin,
)
from ..decide.matrix import GOALS
from ..decide.reasons import Reason
from ..decide.trial import trial_outcome
from ..decide.verdict import VerdictProvider
from ..device import DeviceInfo
from ..observe import Observer
from ..probe import Source
from ..realisation import Realisation, Value
from ..sysblock import BlockSysfs
from ..udevdb import UdevDb
from . import views
from .config import ConfigError, DaemonConfig, load_config
from .hazards import knob_warnings
from .records import DeviceRecord, SwitchRecord
from .rest import Pulse, Rest

log = logging.getLogger("ioaz.daemon")


# Settings built into something at start (the probe, the state store, the listeners, the
# history's size): a reload cannot change them.
RESTART_ONLY = ("probe", "probe_sample", "window_s", "rest_window_s", "state_dir", "socket",
                "metrics_listen", "history", "dry_run")


class ControlError(ValueError):
    """A control request that cannot be done: unknown device, policy, goal... (client error)."""


class Selection(Protocol):
    """Which disks the daemon manages (compose.Selection)."""

    def managed(self, name: str) -> bool: ...
    def update(self, include: Sequence[str], exclude: Sequence[str]) -> None: ...


class Daemon:
    def __init__(self, config: DaemonConfig, observer: Observer, selection: Selection,
                 verdicts_for: Callable[[DaemonConfig], VerdictProvider], actuator: Actuator,
                 sysfs: BlockSysfs, fallback_reason: str | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, udev: UdevDb | None = None):
        self.config = config
        self.observer = observer
        self.selection = selection
        self.verdicts_for = verdicts_for   # a reload builds the provider anew
        self.provider = verdicts_for(config)
        self.actuator = actuator
        self.sysfs = sysfs
        self.udev = udev or UdevDb()
        self.fallback_reason = fallback_reason
        self.clock = clock
        self.wall = wall
        self.lock = threading.RLock()
        self.devices: dict[str, DeviceRecord] = {}
        self.history: collections.deque[dict[str, Any]] = collections.deque(
            maxlen=config.history)
        self.started = wall()
        self.windows = 0
        self.last_window_s: float | None = None   # CPU-side duration of the last window
        self.window_cpu_s = 0.0                   # ... and of every window since start
        self.rest = Rest(config.window_s, config.rest_window_s)
        self.pulse = Pulse()
        self.rest_logged = False        # the rest's state the log last told
        self.collector_up = True
        self.collector_error: str | None = None

    @property
    def source(self) -> Source:
        """The probe the observer reads (status and metrics show its name)."""
        return self.observer.source

    @property
    def state_set_aside(self) -> int:
        """Corrupt state files (or entries) set aside since start (a metric)."""
        return self.actuator.state.set_aside

    # -- the window ---------------------------------------------------------------------

    def start(self) -> list[str]:
        with self.lock:
            names = self.observer.start()
            for n in names:
                self._add(n)
            log.info(json.dumps({"event": "start", "devices": names,
                                 "source": self.source.name,
                                 "dry_run": self.config.dry_run,
                                 "classifier": self.config.classifier,
                                 "config": self.config.file}))
            if self.fallback_reason:
                log.warning(json.dumps({"event": "probe_fallback",
                                        "reason": self.fallback_reason}))
            return names

    def _add(self, name: str) -> DeviceRecord:
        props = self.udev.properties(self.sysfs.dev_number(name))
        info = DeviceInfo(name=name, rotational=self.sysfs.rotational(name),
                          size_bytes=self.sysfs.size_bytes(name),
                          udev=tuple(sorted(props.items())))
        rec = DeviceRecord(name=name, state=initial_state(info))
        self._refresh_scheduler(rec)
        self.devices[name] = rec
        self._take_queue(rec)
        self._idle_at_start(rec)
        return rec

    def _idle_at_start(self, rec: DeviceRecord) -> None:
        """The idle policy on a disk with nothing in flight when ioazd takes it (decide's
        at_start), before the first window: the workloads a boot starts then begin under it."""
        decide = self.config.decide
        d = at_start(rec.state, decide.settings, self.clock(), decide.policies,
                     self.sysfs.in_flight(rec.name))
        if d is not None:
            rec.decision, rec.decision_time = d, self.wall()
            self._apply(rec, d, None)

    def queue_for(self, rec: DeviceRecord) -> QueueSettings:
        """The queue settings ioazd keeps on a disk under whatever scheduler it runs."""
        settings = self.config.decide.settings
        goal = goal_for(rec.name, rec.state.goal, settings.goals, settings.goal)
        return QueueSettings(wbt_lat_usec=writeback_throttling(
            rec.state.info, goal, self.config.writeback_throttling))

    def _take_queue(self, rec: DeviceRecord) -> None:
        """Set queue_for() when ioazd takes a disk, under the scheduler it found: a disk whose
        found scheduler ioazd keeps would otherwise never get them (originals saved first)."""
        queue = self.queue_for(rec)
        if (self.config.dry_run or rec.scheduler is None or not rec.available
                or queue == QueueSettings()):
            return
        res = self.actuator.apply(rec.name, Realisation(rec.scheduler), queue)
        took = {k.rsplit("/", 1)[-1]: v for k, v in res.took().items()}
        if took or not res.ok:
            log.log(logging.INFO if res.ok else logging.WARNING, json.dumps(
                {"event": "queue", "device": rec.name, "took": took, "ok": res.ok,
                 "errors": res.errors, "notes": res.notes}))

    def _refresh_scheduler(self, rec: DeviceRecord) -> bool:
        """The device's scheduler line read again; False when it could not be read."""
        try:
            line = self.sysfs.scheduler(rec.name)
        except OSError:
            return False
        rec.available, rec.scheduler = line.available, line.active
        rec.state = replace(rec.state, available=rec.available,
                            found=rec.scheduler if rec.state.policy is None else None)
        return True

    def window(self) -> list[Decision]:
        """One window for every device: read the facts, decide, apply. Never raises for one
        device: a device that fails is counted and logged, the others go on."""
        t0 = time.process_time()
        with self.lock:
            try:
                w = self.observer.step()
                self.collector_up, self.collector_error = True, None
            except Exception as e:  # the probe failed this window: keep devices as they are
                self.collector_up, self.collector_error = False, str(e)
                log.error(json.dumps({"event": "collector_error", "error": str(e)}))
                self.rest.observe((), complete=False)
                self.pulse.unsettled()
                return []
            for name in w.vanished:
                self._drop(name)
            for name in w.appeared:
                if name not in self.devices:
                    self._add(name)
                    log.info(json.dumps({"event": "device_added", "device": name}))
            decisions = []
            # this window was a rest's, whole or ended early by the pulse
            resting, failed = self.rest.resting or self.rest.woke is not None, False
            if self.rest.woke is not None:
                log.info(json.dumps({"event": "rest", "resting": False,
                                     "window_s": self.rest.next_window_s(),
                                     "woken": self.rest.woke}))
                self.rest.woke, self.rest_logged = None, False
            for f in w.features:
                rec = self.devices.get(f.device) or self._add(f.device)
                try:
                    done = rec.state.trials
                    self._read_facts(rec, f)
                    d = self._decide(rec, f)
                    if resting and d.action == "hold":
                        d = replace(d, state=after_rest_window(d.state))
                    if log.isEnabledFor(logging.DEBUG):
                        log.debug(json.dumps(views.window_line(d)))
                    decisions.append(self._apply(rec, d, f))
                    for t in rec.state.trials:
                        if t not in done:   # a trial ended this window
                            rec.trials[trial_outcome(t)] += 1
                            # a kept trial switches nothing, so without this line the
                            # journal would not say why the candidate stayed
                            log.info(json.dumps({
                                "event": "trial", "device": rec.name,
                                "outcome": trial_outcome(t), "cell": t.cell.rsplit(":", 1)[-1],
                                "base": t.base, "candidate": t.candidate,
                                "gain": None if t.gain is None else round(t.gain, 4),
                                "why": t.why}))
                except Exception as e:  # one bad device degrades that device only
                    failed = True
                    rec.errors += 1
                    rec.last_error = f"{type(e).__name__}: {e}"
                    log.exception(json.dumps({"event": "device_error", "device": rec.name,
                                              "error": rec.last_error}))
            self.rest.observe((d.calm for d in decisions),
                              complete=not failed and not w.appeared and not w.vanished)
            self.windows += 1
            if self.rest.resting != self.rest_logged:
                self.rest_logged = self.rest.resting
                log.info(json.dumps({"event": "rest", "resting": self.rest.resting,
                                     "window_s": self.rest.next_window_s()}))
            if not self.rest.resting:
                self.pulse.forget()
            if self.rest.calm:
                self.pulse.calm_window(self._rates(), self._classes())
            else:
                self.pulse.unsettled()
            self.last_window_s = time.process_time() - t0
            self.window_cpu_s += self.last_window_s
            return decisions

    def moved(self) -> str | None:
        """At rest, every window_s: whether a disk changed pace (rest.Pulse), ending the rest."""
        return self.pulse.moved(list(self.devices))

    def _rates(self) -> dict[str, tuple[float, float, float]]:
        """The last window's rates of each device, as the pulse compares them."""
        return {r.name: (r.features.iops, r.features.read_ratio or 0.0,
                         r.features.read_bytes_per_s + r.features.write_bytes_per_s)
                for r in self.devices.values() if r.features is not None}

    def _classes(self) -> dict[str, str | None]:
        """The last window's class of each device, as the pulse tells workloads apart."""
        return {r.name: r.features.workload_class.full_key()
                if r.features is not None and r.features.workload_class is not None else None
                for r in self.devices.values()}

    def _drop(self, name: str) -> None:
        self.devices.pop(name, None)
        # Its originals stay in the state file: if it comes back, a restart restores it.
        self.actuator.stop_watching(name)
        self.sysfs.let_go(name)
        log.warning(json.dumps({"event": "device_vanished", "device": name}))

    def _read_facts(self, rec: DeviceRecord, f: WindowFeatures) -> None:
        """What is true of the device now: its scheduler line, the window, and whether someone
        changed what ioaz set (then the device goes to manual)."""
        read = self._refresh_scheduler(rec)
        rec.features = f
        rec.snapshot = self.observer.prev.get(rec.name)
        if rec.state.mode not in (Mode.MANUAL, Mode.PAUSED):
            # the line just read is the scheduler's now: not read twice (each read is dear
            # where a system call is, in a VM without KVM)
            drift = self.actuator.check_drift(rec.name, rec.scheduler if read else None)
            if drift:
                why = ", ".join(f"{d.key} is {d.actual!r}, we set {d.expected!r}"
                                for d in drift)
                rec.state = to_manual(rec.state, f"changed behind ioaz's back: {why}")
                log.warning(json.dumps({"event": "manual", "device": rec.name, "why": why}))

    def _decide(self, rec: DeviceRecord, f: WindowFeatures) -> Decision:
        """The pure part: the window and the device's state in, a decision out."""
        decide = self.config.decide
        d = step(f, rec.state, decide.settings, self.provider, self.clock(), decide.policies)
        rec.decision, rec.decision_time = d, self.wall()
        return d

    def _apply(self, rec: DeviceRecord, d: Decision, f: WindowFeatures | None) -> Decision:
        """Carry a switch out through the actuator (or only log it, dry run); any other
        decision just becomes the device's state."""
        if d.action != "switch":
            rec.state = d.state
            return d
        now = d.now
        res = d.resolution
        target = res.scheduler if res else None
        before = rec.scheduler
        if target is None:
            rec.state = on_switch_failed(rec.state, now)
            self._record(rec, d, before, None, ok=False, errors=["no scheduler for the policy"])
            return d
        # a verdict's policy that the running scheduler already realises, as it is: the disk
        # does not change, so neither do the dwell and cooldown clocks (on_same_scheduler)
        same = before == target and not (res and res.knobs) and d.reason in (Reason.MATRIX,
                                                                               Reason.MODEL)
        if self.config.dry_run:
            rec.state = on_same_scheduler(rec.state, d.state) if same else d.state
            self._record(rec, d, before, target, ok=True, dry=True)
            return d
        raid = any(fnmatch.fnmatchcase(rec.name, g) for g in self.config.raid)
        knobs = self.knobs_for(rec.name, d.goal, target, res.knobs if res else {})
        result = self.actuator.apply_tuned(rec.name, Realisation(target, knobs),
                                           f, self.queue_for(rec), raid=raid)
        if result.ok and same:
            rec.state = on_same_scheduler(rec.state, d.state)
        elif result.ok:
            rec.state = d.state
        else:
            rec.state = on_switch_failed(rec.state, now)
            rec.errors += 1
            rec.last_error = "; ".join(result.errors)
        if result.stall_s is not None:
            rec.stalls.observe(result.stall_s)
        self._refresh_scheduler(rec)
        self._record(rec, d, before, target, ok=result.ok, stall=result.stall_s,
                     errors=result.errors, notes=result.notes)
        return d

    def knobs_for(self, device: str, goal: str, scheduler: str,
                  policy_knobs: dict[str, Value]) -> dict[str, Value]:
        """What ioazd writes with `scheduler` on `device`: the tunables its matrix measured on
        this kind of disk (the stream curve), then the policy's own knobs over them."""
        info = self.devices[device].state.info
        return {**self.provider.tunables(info, goal).get(scheduler, {}), **policy_knobs}

    def _record(self, rec: DeviceRecord, d: Decision, before: str | None,
                target: str | None, ok: bool, dry: bool = False,
                stall: float | None = None, errors: list[str] | None = None,
                notes: list[str] | None = None) -> None:
        sw = SwitchRecord(time=self.wall(), device=rec.name, from_scheduler=before,
                          to_scheduler=target, from_policy=d.previous, to_policy=d.policy,
                          reason=d.reason, why=d.text, stall_s=stall, ok=ok, dry_run=dry,
                          errors=list(errors or []), notes=list(notes or []))
        # A new policy realised by the scheduler already running (fcfs -> none on none) is a
        # decision, not a scheduler switch: it is logged, not counted.
        changed = before != target
        if ok and not dry and changed:
            rec.switches[(before or "", target or "", d.reason)] += 1
        self.history.append({**sw.as_dict(), "class": d.workload_class, "goal": d.goal,
                             "verdict": views.verdict_dict(d), "features": d.features})
        res = d.resolution
        event = ("switch" if changed else "policy_change") if ok else "switch_failed"
        log.info(json.dumps({"event": event, "device": rec.name,
                             "from": before, "to": target, "policy": d.policy,
                             "reason": d.reason, "why": d.text,
                             "realised": res.reason if res else None,
                             "fell_back": bool(res and res.fell_back), "stall_s": stall,
                             "dry_run": dry, "errors": sw.errors, "notes": sw.notes}))

    # -- stopping -------------------------------------------------------------------------

    def stop(self) -> list[dict[str, Any]]:
        """Give every device back: originals restored, manual devices left to the admin."""
        out = []
        with self.lock:
            for name, rec in self.devices.items():
                if rec.state.mode is Mode.MANUAL:
                    self.actuator.forget(name)
                    out.append({"device": name, "restored": False,
                                "why": "manual: left as the administrator set it"})
            for r in self.actuator.restore_all():
                out.append({"device": r.device, "restored": r.restored, "errors": r.errors,
                            **({"state_not_cleared": r.state_kept} if r.state_kept else {})})
            log.info(json.dumps({"event": "stop", "restore": out}))
        return out

    # -- control (ioazctl) ----------------------------------------------------------------

    def _rec(self, device: str) -> DeviceRecord:
        rec = self.devices.get(device)
        if rec is None:
            raise ControlError(f"unknown device {device!r} (managed: "
                               f"{', '.join(sorted(self.devices)) or 'none'})")
        return rec

    def control_pin(self, device: str, policy: str, duration_s: float | None) -> dict:
        with self.lock:
            rec = self._rec(device)
            self.rest.disturb()   # its effect in an ordinary window, not a rest's
            table = self.config.decide.policies
            known = table.policies() if table else []
            if policy not in known:
                raise ControlError(f"unknown policy {policy!r} (expected one of "
                                   f"{', '.join(sorted(known))})")
            if duration_s is not None and duration_s <= 0:
                raise ControlError(f"pin duration must be positive, got {duration_s}")
            rec.state = pin(rec.state, policy, self.clock(), duration_s)
            log.info(json.dumps({"event": "pin", "device": device, "policy": policy,
                                 "for_s": duration_s}))
            return {"device": device, "mode": rec.state.mode.value, "policy": policy,
                    "for_s": duration_s}

    def control_unpin(self, device: str) -> dict:
        with self.lock:
            rec = self._rec(device)
            self.rest.disturb()   # its effect in an ordinary window, not a rest's
            rec.state = unpin(rec.state)
            log.info(json.dumps({"event": "unpin", "device": device}))
            return {"device": device, "mode": rec.state.mode.value}

    def control_goal(self, device: str, goal: str) -> dict:
        with self.lock:
            rec = self._rec(device)
            self.rest.disturb()   # its effect in an ordinary window, not a rest's
            if goal not in GOALS:
                raise ControlError(f"unknown goal {goal!r} (expected one of "
                                   f"{', '.join(GOALS)})")
            rec.state = set_goal(rec.state, goal)
            log.info(json.dumps({"event": "goal", "device": device, "goal": goal}))
            return {"device": device, "goal": goal}

    def control_pause(self, device: str) -> dict:
        with self.lock:
            rec = self._rec(device)
            self.rest.disturb()   # its effect in an ordinary window, not a rest's
            rec.state = pause(rec.state)
            log.info(json.dumps({"event": "pause", "device": device}))
            return {"device": device, "mode": rec.state.mode.value}

    def control_resume(self, device: str) -> dict:
        with self.lock:
            rec = self._rec(device)
            self.rest.disturb()   # its effect in an ordinary window, not a rest's
            was_manual = rec.state.mode is Mode.MANUAL
            rec.state = resume(rec.state, self.clock())
            if was_manual:
                # The administrator's values become the new baseline to drift from.
                self.actuator.stop_watching(device)
            log.info(json.dumps({"event": "resume", "device": device}))
            return {"device": device, "mode": rec.state.mode.value}

    def control_reload(self) -> dict:
        """Re-read the config and everything it names; a bad file keeps the old config."""
        with self.lock:
            self.rest.disturb()
            try:
                # the command line's --dry-run still holds; the file's own value is compared
                # below (passing the running value hid a file's true -> false)
                new = load_config(self.config.file, dry_run=self.config.dry_run_flag)
            except ConfigError as e:
                log.error(json.dumps({"event": "reload_rejected", "error": str(e)}))
                raise ControlError(f"reload rejected, old configuration kept:\n{e}") from e
            # what was built once at start keeps its running value; the answer says which
            # settings of the file wait for a restart
            later = {k: (getattr(self.config, k), getattr(new, k)) for k in RESTART_ONLY
                     if getattr(self.config, k) != getattr(new, k)}
            new = replace(new, **{k: old for k, (old, _) in later.items()})
            self.config = new
            self.observer.set_thresholds(new.thresholds)
            self.selection.update(new.include, new.exclude)
            self.provider = self.verdicts_for(new)
            waiting = {k: f"{old} -> {want} (takes a restart)"
                       for k, (old, want) in later.items()}
            for w in knob_warnings(new.decide):
                log.warning(json.dumps({"event": "config_warning", "warning": w}))
            log.info(json.dumps({"event": "reload", "config": new.file,
                                 "not_applied": waiting}, default=str))
            return {"reloaded": new.file, "not_applied": waiting}

    # -- views (status, explain, history: the dicts themselves are views.py's) -------------

    def status(self) -> dict[str, Any]:
        with self.lock:
            wall, now = self.wall(), self.clock()
            return {"source": self.source.name, "fallback_reason": self.fallback_reason,
                    "dry_run": self.config.dry_run, "window_s": self.config.window_s,
                    "resting": self.rest.resting, "next_window_s": self.rest.next_window_s(),
                    "windows": self.windows, "uptime_s": wall - self.started,
                    "config": self.config.file, "collector_up": self.collector_up,
                    "devices": [views.device_status(r, wall, now) for r in
                                sorted(self.devices.values(), key=lambda r: r.name)]}

    def explain(self, device: str) -> dict[str, Any]:
        with self.lock:
            rec = self._rec(device)
            settings = self.config.decide.settings
            goal = goal_for(rec.name, rec.state.goal, settings.goals, settings.goal)
            return {**views.explanation(rec, [h for h in self.history if h["device"] == device],
                                        settings, self.wall(), self.clock()),
                    "decided_by": {"goal": goal,
                                   **self.provider.source(rec.state.info, goal)}}

    def history_list(self, device: str | None = None, limit: int = 50) -> list[dict]:
        with self.lock:
            if device is not None:
                self._rec(device)
            items = [h for h in self.history if device is None or h["device"] == device]
            return items[-limit:]

