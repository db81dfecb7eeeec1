"""Session fixtures: one VM boot for the functional checks and the BPF probe, one for the
40 s safety run.

Each runs once per kernel (Debian 12's 6.1.0-56 and the installed 6.12 from bookworm-security):
Debian's linux-image package booted in qemu TCG (see vmharness.py) and skip with
the reason when something the VM needs is missing on this machine.
"""
from __future__ import annotations

import pytest
import vmharness
import vmscripts

KERNELS = vmharness.kernels()
# Seconds of switching under load: blktests' block/005 and 047 (tests/testbed/test_blktests.py)
# and the 7.3 guest's racing writer switch these elevators too.
SAFETY_S = 40


def _prepare(krel: str) -> None:
    try:
        vmharness.check_prerequisites(krel)
        vmharness.kernel_tree(krel)
    except vmharness.Unavailable as e:
        pytest.skip(f"kernel VM tests on {krel} cannot run here: {e}")


@pytest.fixture(scope="session", params=KERNELS)
def functional_boot(request: pytest.FixtureRequest) -> vmharness.Boot:
    """The elevators' checks, then the BPF probe's (test_probe_vm.py): one boot for both, as
    each boot costs a TCG kernel start."""
    krel = request.param
    _prepare(krel)
    script, files = vmscripts.functional_script(vmscripts.load_vectors())
    probe, why = vmharness.probe_files()
    if probe:
        script += "\n" + vmscripts.PROBE_SCRIPT
        files.update(probe)
    else:
        vmharness.PROBE_LEFT_OUT[krel] = why
    initrd = vmharness.make_initramfs("functional", script, files, krel)
    b = vmharness.boot(initrd, timeout=300, krel=krel)
    assert "@@BOOTED" in b.console, "the VM did not reach /init:\n" + b.console[-3000:]
    return b


@pytest.fixture(scope="session", params=KERNELS)
def safety_boot(request: pytest.FixtureRequest) -> vmharness.Boot:
    krel = request.param
    _prepare(krel)
    initrd = vmharness.make_initramfs("safety", vmscripts.safety_script(SAFETY_S), krel=krel)
    b = vmharness.boot(initrd, timeout=240, krel=krel)
    assert "@@BOOTED" in b.console, "the VM did not reach /init:\n" + b.console[-3000:]
    return b
