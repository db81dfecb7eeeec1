"""The fake block sysfs tree (fake_sysfs.FakeKernel) checked against the kernel's behaviour.

Beside the real-sysfs tests in tests/integration/test_actuate_loop.py, this lets the unit tests
inject what a loop device will not do on demand: EBUSY, a switch that fails half way, a vanished
device, a device with device/queue_depth. The behaviours copied from the kernel (checked on 6.18
loop devices, see the integration tests): writing a name to queue/scheduler brackets it and
replaces queue/iosched/ with the new elevator's default knobs and resets nr_requests (128 under
none, 256 with an elevator); an unknown name is EINVAL; nr_requests below 4 is raised to 4.

These tests check the fake against those facts, so a fake that drifts from the kernel
fails here rather than making the actuator tests pass for the wrong reason.
"""
from __future__ import annotations

import errno
from pathlib import Path

import pytest
from fake_sysfs import FakeKernel
from ioaz import sysblock as sf


@pytest.fixture
def kernel(tmp_path: Path) -> FakeKernel:
    k = FakeKernel(tmp_path / "sys")
    k.add_device("loop0")
    return k


def test_fake_switch_brackets_the_new_scheduler_and_swaps_its_knobs(kernel: FakeKernel) -> None:
    kernel.write("loop0", sf.SCHEDULER, "mq-deadline")
    assert kernel.scheduler("loop0").active == "mq-deadline"
    assert kernel.knobs("loop0")[sf.knob_key("read_expire")] == "500"
    assert kernel.read("loop0", sf.NR_REQUESTS) == "256"
    kernel.write("loop0", sf.SCHEDULER, "none")
    assert kernel.knobs("loop0") == {}
    assert kernel.read("loop0", sf.NR_REQUESTS) == "128"


def test_fake_refuses_what_the_kernel_refuses(kernel: FakeKernel) -> None:
    with pytest.raises(OSError) as e:
        kernel.write("loop0", sf.SCHEDULER, "cfq")
    assert e.value.errno == errno.EINVAL
    kernel.write("loop0", sf.SCHEDULER, "bfq")
    with pytest.raises(OSError):
        kernel.write("loop0", sf.knob_key("slice_idle"), "abc")
    kernel.write("loop0", sf.NR_REQUESTS, "2")
    assert kernel.read("loop0", sf.NR_REQUESTS) == "4"
