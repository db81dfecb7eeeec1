"""Applying a realisation to a device, putting the originals back, and noticing foreign changes.

This is the only module that decides what to do about a write: the order of writes, retrying the
errnos that are worth retrying, rolling a failed scheduler switch back, saving the originals before
the first change. The I/O itself is ioaz.sysblock; what to write is decided upstream (decide/, and
knob_rules.py for knob values).

Every public method returns a result value and does not raise for a single bad device.
"""
from __future__ import annotations

import errno as errno_mod
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ioaz import sysblock as sf
from ioaz.actuate.knob_rules import tune
from ioaz.actuate.state import DEFAULT_STATE_DIR, StateStore
from ioaz.actuate.types import (
    ActuationResult,
    Drift,
    QueueSettings,
    RestoreResult,
    Value,
    WriteStep,
    sysfs_text,
)
from ioaz.classify.types import WindowFeatures
from ioaz.device import DeviceInfo
from ioaz.realisation import Realisation

# What one device can throw at us: the kernel's errno, an unparsable sysfs line, a state entry
# edited by hand into the wrong shape. Caught per device; anything else is our bug and propagates.
_DEVICE_ERRORS = (OSError, ValueError, KeyError, TypeError)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff for the errnos a busy queue gives.

    EBUSY: the queue is being frozen or switched by someone else right now; since Linux 7.2
    (4ff58d6bc9dd) a write to queue/scheduler gets it while another writer holds the queue, for as
    long as that writer's switch takes (56-90 ms in the 7.3 guest with four readers in flight,
    longer on a deep queue of slow requests). Its budget covers several such switches: 7 attempts,
    10+20+...+320 ms, 0.63 s at most. EINVAL: besides a bad value, an elevator switch racing with a
    device reset or a concurrent switch returns it; a bad value fails the same way every time, so
    its bound keeps that cheap (4 attempts, 10+20+40 ms).
    """

    attempts: int = 4
    busy_attempts: int = 7
    first_delay_s: float = 0.01
    factor: float = 2.0
    retry_errnos: frozenset[int] = field(
        default_factory=lambda: frozenset({errno_mod.EINVAL, errno_mod.EBUSY}))

    def attempts_for(self, errno: int | None) -> int:
        """How many attempts a write that failed with `errno` gets in all."""
        if errno not in self.retry_errnos:
            return 1
        return self.busy_attempts if errno == errno_mod.EBUSY else self.attempts


def _errno_text(e: OSError) -> str:
    code = e.errno if e.errno is not None else 0
    name = errno_mod.errorcode.get(code, str(code))
    return f"{os.strerror(code)} ({name})" if e.errno is not None else str(e)


class Actuator:
    def __init__(self, sysfs: sf.BlockSysfs | None = None,
                 state: StateStore | None = None,
                 retry: RetryPolicy = RetryPolicy(),
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.sysfs = sysfs or sf.BlockSysfs()
        self.state = state or StateStore(DEFAULT_STATE_DIR)
        self.retry = retry
        self.sleep = sleep
        self.clock = clock
        # device -> key -> the value read back after our last write; drift is measured against it.
        self.last_written: dict[str, dict[str, str]] = {}

    # ---- reading -------------------------------------------------------------------------

    def _current(self, device: str, key: str) -> str:
        if key == sf.SCHEDULER:
            return self.sysfs.scheduler(device).active
        return self.sysfs.read(device, key)

    def snapshot(self, device: str) -> dict[str, Any]:
        """The values restore() would put back: scheduler, its knobs, the queue settings."""
        entry: dict[str, Any] = {
            "dev": self.sysfs.dev_number(device),
            "identity": self.sysfs.identity(device),
            "saved_at": time.time(),
            "scheduler": self.sysfs.scheduler(device).active,
            "knobs": self.sysfs.knobs(device),
            "queue": {},
            "changed": [],
        }
        for key in sf.QUEUE_SETTINGS:
            if self.sysfs.has(device, key):
                entry["queue"][key] = self.sysfs.read(device, key)
        return entry

    def device_info(self, device: str, raid: bool = False) -> DeviceInfo:
        """What knob_rules needs to know about the device, read from sysfs."""
        return DeviceInfo(name=device, rotational=self.sysfs.rotational(device),
                          queue_depth=self.sysfs.queue_depth(device),
                          hw_tags=self.sysfs.hw_tags(device), raid=raid)

    # ---- writing -------------------------------------------------------------------------

    def _write(self, device: str, key: str, value: Value) -> WriteStep:
        """Write with bounded retries, then read back what the kernel kept."""
        step = WriteStep(device=device, key=key, path=str(self.sysfs.path(device, key)),
                         wanted=sysfs_text(value))
        try:
            step.before = self._current(device, key)
        except (OSError, ValueError):
            pass
        delay = self.retry.first_delay_s
        attempt = 0
        while True:
            attempt += 1
            step.attempts = attempt
            t0 = self.clock()
            try:
                self.sysfs.write(device, key, step.wanted)
            except OSError as e:
                step.elapsed_s = self.clock() - t0
                step.errno, step.error = e.errno, _errno_text(e)
                if attempt >= self.retry.attempts_for(e.errno):
                    break
                self.sleep(delay)
                delay *= self.retry.factor
                continue
            step.elapsed_s = self.clock() - t0
            step.ok, step.errno, step.error = True, None, None
            break
        try:
            step.got = self._current(device, key)
        except (OSError, ValueError) as e:
            if step.ok:
                step.ok = False
                step.error = f"written, but reading it back failed: {e}"
        return step

    def apply(self, device: str, realisation: Realisation,
              queue: QueueSettings | None = None) -> ActuationResult:
        """Switch `device` to the realisation's scheduler, set its knobs, then the queue settings.

        Order (the knobs live under the scheduler, and a switch resets nr_requests): scheduler,
        knobs, nr_requests, read_ahead_kb, device/queue_depth, wbt_lat_usec. Only values that
        differ are written. The originals are saved before the first write the device ever
        gets from us.
        """
        res = ActuationResult(device=device)
        try:
            self._apply(res, realisation, queue or QueueSettings())
        except _DEVICE_ERRORS as e:
            res.fail(f"{device}: {type(e).__name__}: {e}")
        return res

    def apply_tuned(self, device: str, realisation: Realisation,
                    features: WindowFeatures | None, queue: QueueSettings | None = None,
                    raid: bool = False) -> ActuationResult:
        """apply() with the knob rules of knob_rules.tune() filled in; their reasons go to notes.

        The realisation's own knobs and the queue settings passed in win over the rules.
        """
        try:
            info = self.device_info(device, raid=raid)
            tuning = tune(realisation, features, info, queue)
        except _DEVICE_ERRORS as e:
            res = ActuationResult(device=device)
            res.fail(f"{device}: {type(e).__name__}: {e}")
            return res
        res = self.apply(device, Realisation(realisation.scheduler, tuning.knobs), tuning.queue)
        res.notes = tuning.reasons + res.notes
        return res

    def _apply(self, res: ActuationResult, real: Realisation, queue: QueueSettings) -> None:
        device = res.device
        if not self.sysfs.exists(device):
            res.fail(f"{device}: no such device ({self.sysfs.device_dir(device)} is missing)")
            return
        if not self.sysfs.has(device, sf.SCHEDULER):
            res.fail(f"{device}: has no {sf.SCHEDULER}: a bio-based device takes no scheduler")
            return
        line = self.sysfs.scheduler(device)
        res.scheduler_before = res.scheduler_after = line.active
        if real.scheduler not in line.available:
            res.fail(f"{device}: scheduler {real.scheduler!r} is not available in "
                     f"{self.sysfs.path(device, sf.SCHEDULER)} (it offers: "
                     f"{' '.join(line.available) or 'nothing'})")
            return

        wanted_queue: list[tuple[str, Value]] = []
        for key, maybe in ((sf.NR_REQUESTS, queue.nr_requests),
                           (sf.READ_AHEAD_KB, queue.read_ahead_kb),
                           (sf.QUEUE_DEPTH, queue.queue_depth),
                           (sf.WBT_LAT_USEC, queue.wbt_lat_usec)):
            if maybe is None:
                continue
            if not self.sysfs.has(device, key):
                res.notes.append(f"{device}: no {key}, {key.split('/')[-1]}={maybe} not set")
                continue
            wanted_queue.append((key, maybe))

        switching = line.active != real.scheduler
        knob_plan: list[tuple[str, Value]] = [(sf.knob_key(k), v) for k, v in real.knobs.items()]
        plan: list[tuple[str, Value]] = []
        if switching:
            plan.append((sf.SCHEDULER, real.scheduler))
        for key, val in knob_plan + wanted_queue:
            # A switch resets the new scheduler's knobs to its defaults and nr_requests to the
            # queue's default for that scheduler: after one, write everything asked for.
            if (switching or not self.sysfs.has(device, key)
                    or self._current(device, key) != sysfs_text(val)):
                plan.append((key, val))
        if not plan:
            self._remember(device, {}, switched=False)
            return

        if not self._save_originals(res, [k for k, _ in plan]):
            return

        if switching:
            step = self._write(device, sf.SCHEDULER, real.scheduler)
            res.steps.append(step)
            res.stall_s = step.elapsed_s
            if not step.ok or step.got != real.scheduler:
                self._roll_back_switch(res, step, line.active)
                return
            res.switched = True
            res.scheduler_after = step.got
            plan = plan[1:]

        for key, val in plan:
            if sf.is_knob_key(key) and not self.sysfs.has(device, key):
                have = [k.rsplit("/", 1)[-1] for k in self.sysfs.knobs(device)]
                res.fail(f"{device}: {real.scheduler} has no knob {key.rsplit('/', 1)[-1]!r} "
                         f"({self.sysfs.path(device, key)} missing; it has: {' '.join(have)})")
                continue
            step = self._write(device, key, val)
            res.steps.append(step)
            if not step.ok:
                res.fail(step.message())
        self._remember(device, res.took(), switched=res.switched)

    def _another_disk(self, device: str, entry: dict[str, Any]) -> str | None:
        """How the disk now called `device` differs from the one `entry` was saved from (None:
        the same disk, or no way to tell)."""
        saved = entry.get("identity")
        if not saved or not self.sysfs.exists(device):
            return None
        now = self.sysfs.identity(device)
        if now is None or now == saved:
            return None
        return f"another disk has the name now ({now}; the originals were saved from {saved})"

    def _save_originals(self, res: ActuationResult, keys: list[str]) -> bool:
        """Make sure the state file holds the device's originals before anything is written."""
        device = res.device
        try:
            entry = self.state.get(device)
            other = self._another_disk(device, entry) if entry is not None else None
            if entry is not None and other:
                res.notes.append(f"{device}: {other}: the saved originals (scheduler "
                                 f"{entry['scheduler']!r}) are dropped, this disk's saved")
                self.state.remove(device)
                self.last_written.pop(device, None)
                entry = None
            if entry is None:
                entry = self.snapshot(device)
                res.saved_originals = True
            changed = list(entry.get("changed", []))
            new_keys = [k for k in keys if k not in changed]
            if new_keys or res.saved_originals:
                entry["changed"] = changed + new_keys
                self.state.put(device, entry)
        except _DEVICE_ERRORS as e:
            res.saved_originals = False
            res.fail(f"{device}: cannot save its original settings to {self.state.path} ({e}): "
                     f"leaving the device unchanged")
            return False
        return True

    def _roll_back_switch(self, res: ActuationResult, step: WriteStep, previous: str) -> None:
        """A failed switch: make sure the device runs the scheduler it ran before."""
        device = res.device
        res.fail(step.message() if not step.ok else
                 f"{device}: wrote {step.wanted!r} to {step.path} but it reads {step.got!r}")
        try:
            now = self.sysfs.scheduler(device).active
        except (OSError, ValueError):
            now = None
        if now != previous:
            back = self._write(device, sf.SCHEDULER, previous)
            res.steps.append(back)
            res.rolled_back = back.ok and back.got == previous
            if not res.rolled_back:
                res.fail(f"{device}: could not put scheduler {previous!r} back: {back.message()}")
            now = back.got
        res.scheduler_after = now
        self._remember(res.device, {sf.SCHEDULER: now} if now else {}, switched=now != previous)

    def _remember(self, device: str, took: dict[str, str | None], switched: bool) -> None:
        """Record what we now own on the device, for check_drift().

        A switch changes values we did not write (nr_requests goes to the new scheduler's default,
        the old knobs disappear), so after one the remembered queue settings are read again and
        the old scheduler's knobs are forgotten.
        """
        mem = dict(self.last_written.get(device, {}))
        if switched:
            mem = {k: v for k, v in mem.items() if not sf.is_knob_key(k)}
            for key in list(mem):
                if key == sf.SCHEDULER:
                    continue
                try:
                    mem[key] = self._current(device, key)
                except (OSError, ValueError):
                    mem.pop(key)
        try:
            mem[sf.SCHEDULER] = self.sysfs.scheduler(device).active
        except (OSError, ValueError):
            pass
        mem.update({k: v for k, v in took.items() if v is not None})
        self.last_written[device] = mem

    # ---- drift ---------------------------------------------------------------------------

    def check_drift(self, device: str, scheduler: str | None = None) -> list[Drift]:
        """Values that differ from what we last wrote (udev, tuned, an administrator).

        A different scheduler makes its knobs meaningless, so then only the scheduler and the
        queue settings are compared. An empty list: nothing changed behind our back (or we never
        wrote to this device). `scheduler`: the active one, when the caller has just read it.
        """
        mem = self.last_written.get(device)
        if not mem:
            return []
        out: list[Drift] = []
        sched_changed = False
        for key, expected in mem.items():
            if sched_changed and sf.is_knob_key(key):
                continue
            try:
                actual: str | None = scheduler if key == sf.SCHEDULER and scheduler else \
                    self._current(device, key)
            except (OSError, ValueError):
                actual = None
            if actual != expected:
                out.append(Drift(device, key, expected, actual))
                if key == sf.SCHEDULER:
                    sched_changed = True
        if sched_changed:
            out = [d for d in out if not sf.is_knob_key(d.key)]
        return out

    def stop_watching(self, device: str) -> None:
        """Compare the device with nothing until we write to it again; its originals stay saved.

        For a device that vanished (if it comes back, a restore still has its originals) and for
        one the administrator hands back (their values are the new baseline to drift from).
        """
        self.last_written.pop(device, None)

    def forget(self, device: str) -> None:
        """Give the device up without restoring it (the administrator took it over)."""
        self.last_written.pop(device, None)
        try:
            self.state.remove(device)
        except (OSError, ValueError):
            pass

    # ---- restore -------------------------------------------------------------------------

    def restore(self, device: str) -> RestoreResult:
        """Put back the originals saved before our first change: scheduler, its knobs, queue
        settings in reverse order of change. The state entry goes only once all of it is back."""
        res = RestoreResult(device=device)
        try:
            self._restore(res)
        except _DEVICE_ERRORS as e:
            res.fail(f"{device}: {type(e).__name__}: {e}")
        return res

    def _restore(self, res: RestoreResult) -> None:
        device = res.device
        entry = self.state.get(device)
        if entry is None:
            res.restored = True
            self.last_written.pop(device, None)
            return
        other = self._another_disk(device, entry)
        if other:
            # The disk these originals came from is gone (detached, its loop file changed):
            # they are not this disk's, and a disk attached again starts from the kernel's
            # defaults, so nothing is left to put back anywhere.
            res.replaced = True
            res.errors.append(f"{device}: {other}: its saved originals (scheduler "
                              f"{entry['scheduler']!r}, {entry.get('queue', {})}) are not "
                              "written to it and are dropped")
            self.state.remove(device)
            self.last_written.pop(device, None)
            return
        saved_dev = entry.get("dev")
        if not self.sysfs.exists(device) or (
                saved_dev and self.sysfs.dev_number(device) not in (None, saved_dev)):
            # Nothing to write to: the settings went with the device. Keep the entry (it is not
            # restored) so a later restore_all() or recovery can still act if it comes back.
            res.vanished = True
            res.errors.append(f"{device}: gone, originals kept in {self.state.path}")
            self.last_written.pop(device, None)
            return

        sched_ok = True
        if self.sysfs.scheduler(device).active != entry["scheduler"]:
            step = self._write(device, sf.SCHEDULER, entry["scheduler"])
            res.steps.append(step)
            sched_ok = step.ok and step.got == entry["scheduler"]
            if not sched_ok:
                res.fail(step.message() if not step.ok else
                         f"{device}: scheduler reads {step.got!r} after restoring "
                         f"{entry['scheduler']!r}")
        if sched_ok:
            for key, val in entry.get("knobs", {}).items():
                self._restore_value(res, key, val)

        changed = entry.get("changed", [])
        queue: dict[str, str] = entry.get("queue", {})
        order = [k for k in reversed(changed) if k in queue]
        order += [k for k in reversed(sf.QUEUE_SETTINGS) if k in queue and k not in order]
        for key in order:
            self._restore_value(res, key, queue[key])

        if res.ok:
            res.restored = True
            self.last_written.pop(device, None)
            try:
                self.state.remove(device)
            except OSError as e:
                # the values are back whatever the file says: say that, not "not restored"
                res.state_kept = f"{self.state.path}: {e.strerror or e}"

    def _restore_value(self, res: RestoreResult, key: str, value: str) -> None:
        device = res.device
        if not self.sysfs.has(device, key):
            res.fail(f"{device}: cannot restore {key}={value!r}: "
                     f"{self.sysfs.path(device, key)} is missing")
            return
        if self._current(device, key) == value:
            return
        step = self._write(device, key, value)
        res.steps.append(step)
        if not step.ok:
            res.fail(step.message())
        elif step.got != value:
            res.fail(f"{device}: restoring {value!r} to {step.path} left {step.got!r}")

    def restore_all(self) -> list[RestoreResult]:
        """Restore every device in the state file (on SIGTERM, and at start-up after a crash)."""
        try:
            devices = sorted(self.state.load())
        except (OSError, ValueError) as e:
            return [RestoreResult(device="*", ok=False, errors=[str(e)])]
        return [self.restore(d) for d in devices]
