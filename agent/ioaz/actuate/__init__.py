"""actuate: apply a scheduler, its knobs and queue settings to a block device through sysfs.

    (the reads and writes themselves go through ioaz.sysblock, the one door to block sysfs)
    actuator.py    apply / restore / restore_all / check_drift: order, retries, rollback, state
    state.py       the originals of changed devices, one JSON file written atomically
    recover.py     start-up after a crash: restore from a leftover state file
    knob_rules.py  pure functions from features and device to knob values, each citing its source
    bench.py       the queue stall of each scheduler switch under fio load
"""
from ioaz.actuate.actuator import Actuator, RetryPolicy
from ioaz.actuate.knob_rules import tune
from ioaz.actuate.recover import recover
from ioaz.actuate.state import StateStore
from ioaz.actuate.types import (
    ActuationResult,
    Drift,
    QueueSettings,
    RestoreResult,
    WriteStep,
)
from ioaz.device import DeviceInfo
from ioaz.realisation import Realisation
from ioaz.sysblock import BlockSysfs

__all__ = [
    "ActuationResult",
    "Actuator",
    "BlockSysfs",
    "DeviceInfo",
    "Drift",
    "QueueSettings",
    "Realisation",
    "RestoreResult",
    "RetryPolicy",
    "StateStore",
    "WriteStep",
    "recover",
    "tune",
]
