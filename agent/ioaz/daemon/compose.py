"""Building a Daemon from its configuration: which disks it manages, the observer over the probe,
the verdict provider (matrices, or a model over them), all handed to the Daemon, which builds
none of its collaborators itself. ioazd's main, the lab and the tests build it through here.
"""
from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable, Sequence

from ..actuate import Actuator
from ..decide import MatrixVerdicts
from ..decide.verdict import VerdictProvider
from ..observe import Observer
from ..probe import Source
from ..sysblock import BlockSysfs
from ..udevdb import UDEV_PREFIX, UdevDb
from .config import DaemonConfig
from .core import Daemon


class Selection:
    """The disks ioazd manages: devices.include minus devices.exclude, among the disks that
    have a scheduler. An entry is a glob on the kernel's disk name, or `udev:KEY=GLOB` on one
    of the disk's udev properties (`udev:ID_MODEL=WDC_WD5000*`: every disk of that model,
    whatever it is called; a disk udev says nothing of has no properties). A reload replaces
    the entries.

    The scan runs every window, but whether a disk has a scheduler never changes and whether
    it has a medium seldom does: a name's answer is kept for RECHECK_S, a new name is read at
    once, a name gone from the kernel's list is forgotten at once. (Where a system call is dear, a
    VM without KVM, these two reads per disk per window were the largest part of a window.)"""

    RECHECK_S = 10.0

    def __init__(self, include: Sequence[str], exclude: Sequence[str],
                 sysfs: BlockSysfs, clock: Callable[[], float] = time.monotonic,
                 udev: UdevDb | None = None) -> None:
        self.sysfs = sysfs
        self.clock = clock
        self.udev = udev or UdevDb()
        self._known: dict[str, tuple[bool, float]] = {}   # name -> (scheduled, when read)
        self._props: dict[str, tuple[dict[str, str], float]] = {}   # name -> (udev, when)
        self.update(include, exclude)

    def update(self, include: Sequence[str], exclude: Sequence[str]) -> None:
        self.include, self.exclude = list(include), list(exclude)
        # the name globs of each list as one pattern: a list of 200 names, matched name by name
        # for 200 disks every window, was most of a window's CPU
        self._include_names = _one_pattern(self.include)
        self._exclude_names = _one_pattern(self.exclude)
        self._include_udev = [e for e in self.include if e.startswith(UDEV_PREFIX)]
        self._exclude_udev = [e for e in self.exclude if e.startswith(UDEV_PREFIX)]

    def _udev_matches(self, name: str, entry: str, now: float) -> bool:
        """A `udev:KEY=GLOB` entry against the disk's udev properties (read at most every
        RECHECK_S)."""
        key, _, glob = entry[len(UDEV_PREFIX):].partition("=")
        props = self._props.get(name)
        if props is None or now - props[1] >= self.RECHECK_S:
            props = (self.udev.properties(self.sysfs.dev_number(name)), now)
            self._props[name] = props
        value = props[0].get(key)
        return value is not None and fnmatch.fnmatchcase(value, glob)

    def managed(self, name: str, now: float | None = None) -> bool:
        now = self.clock() if now is None else now
        included = bool(self._include_names and self._include_names.match(name)) or any(
            self._udev_matches(name, e, now) for e in self._include_udev)
        return included and not (
            bool(self._exclude_names and self._exclude_names.match(name))
            or any(self._udev_matches(name, e, now) for e in self._exclude_udev))

    def scan(self) -> list[str]:
        now = self.clock()
        known: dict[str, tuple[bool, float]] = {}
        names = self.sysfs.devices()
        for name in names:
            if not self.managed(name, now):
                continue
            answer = self._known.get(name)
            if answer is None or now - answer[1] >= self.RECHECK_S:
                answer = (self.sysfs.scheduled(name), now)
            known[name] = answer
        self._known = known
        self._props = {n: p for n, p in self._props.items() if n in names}
        return [name for name, (scheduled, _) in known.items() if scheduled]


def _one_pattern(entries: Sequence[str]) -> re.Pattern[str] | None:
    """The entries that are globs on the disk's name, as one pattern (fnmatch's own
    translation, so a glob means here what it means to fnmatchcase)."""
    globs = [e for e in entries if not e.startswith(UDEV_PREFIX)]
    if not globs:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs))


def verdicts_for(config: DaemonConfig) -> VerdictProvider:
    """The matrices; with `classifier: {type: model}` the model first, the matrices below its
    confidence threshold (ioaz.model, imported only then: it pulls in scikit-learn)."""
    decide = config.decide
    matrix = MatrixVerdicts(decide.settings.matrix_rules, decide.matrices)
    if config.model is None:
        return matrix
    from ..model.verdicts import ModelVerdicts
    return ModelVerdicts(config.model, matrix, config.min_confidence, config.min_margin)


def build(config: DaemonConfig, source: Source, actuator: Actuator, sysfs: BlockSysfs,
          fallback_reason: str | None = None,
          clock: Callable[[], float] = time.monotonic,
          wall: Callable[[], float] = time.time, udev: UdevDb | None = None) -> Daemon:
    udev = udev or UdevDb()
    selection = Selection(config.include, config.exclude, sysfs, udev=udev)
    observer = Observer(source, config.thresholds, selection.scan, sysfs)
    return Daemon(config, observer, selection, verdicts_for, actuator, sysfs,
                  fallback_reason=fallback_reason, clock=clock, wall=wall, udev=udev)
