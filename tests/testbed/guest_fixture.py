"""The testbed image and the elevators for its 6.12 kernel, built once per test module.

(A module of its own, not a conftest.py: in a whole-tree run the name `conftest` is
tests/kmod's.)"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ioaz.testbed import image
from ioaz.testbed.errors import TestbedError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def guest_image() -> image.Image:
    if os.geteuid() != 0:
        pytest.skip("needs root for the testbed image (mmdebstrap) and the guest: run "
                    "`make test` as root")
    for tool in ("qemu-system-x86_64", "mmdebstrap"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (`make testbed` installs it)")
    try:
        img = image.build()
        rel = image.kernels()["6.12"]
    except TestbedError as e:
        pytest.fail(str(e))
    r = subprocess.run(["make", "-C", str(REPO / "kmod"), f"KDIR=/usr/src/linux-headers-{rel}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"kmod build for the guest's {rel} failed:\n{r.stderr[-2000:]}"
    assert (REPO / "bpf" / "build" / "ioaz.bpf.o").exists(), "make bpf builds the probe object"
    return img
