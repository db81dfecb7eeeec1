"""Session fixtures: one VM boot for the functional checks, one for the 60 s safety run.

Both boot Debian's linux-image-6.1.0-56-amd64 in qemu TCG (see vmharness.py) and skip with
the reason when something the VM needs is missing on this machine.
"""
from __future__ import annotations

import pytest

import vmharness
import vmscripts


def _prepare() -> None:
    try:
        vmharness.check_prerequisites()
        vmharness.kernel_tree()
    except vmharness.Unavailable as e:
        pytest.skip(f"kernel VM tests cannot run here: {e}")


@pytest.fixture(scope="session")
def functional_boot() -> vmharness.Boot:
    _prepare()
    script, files = vmscripts.functional_script(vmscripts.load_vectors())
    initrd = vmharness.make_initramfs("functional", script, files)
    b = vmharness.boot(initrd, timeout=240)
    assert "@@BOOTED" in b.console, "the VM did not reach /init:\n" + b.console[-3000:]
    return b


@pytest.fixture(scope="session")
def safety_boot() -> vmharness.Boot:
    _prepare()
    initrd = vmharness.make_initramfs("safety", vmscripts.safety_script(60))
    b = vmharness.boot(initrd, timeout=240)
    assert "@@BOOTED" in b.console, "the VM did not reach /init:\n" + b.console[-3000:]
    return b
