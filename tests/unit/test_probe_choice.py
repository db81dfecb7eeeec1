"""open_source's choice of probe: the CO-RE probe, else the BCC probe (a kernel without BTF whose
headers are installed), else /proc/diskstats, each step said. The BCC probe itself is tested for
real in the 6.1 guest (tests/testbed/test_guest_kernel61.py); here the loaders are stand-ins."""
from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from ioaz import probe
from ioaz.probe import bcc_object, bpf_source
from ioaz.probe.bpf_object import ProbeUnavailable


class FakeSource:
    """A BpfSource whose loaders fail as `fails` says."""
    fails: dict[str, str] = {}

    def __init__(self, sample=None, sysfs=None, loader="libbpf"):
        self.loader = loader
        self.name = "bcc" if loader == "bcc" else "bpf"

    def open(self):
        if self.loader in self.fails:
            raise ProbeUnavailable(self.fails[self.loader])
        return self


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(bpf_source, "BpfSource", FakeSource)
    monkeypatch.setattr(probe.diskstats_source, "DiskstatsSource",
                        lambda sysfs=None: SimpleNamespace(open=lambda: SimpleNamespace(
                            name="diskstats")))
    return monkeypatch


def test_btf_present_takes_the_core_probe(fake):
    FakeSource.fails = {}
    fake.setattr(bcc_object, "unavailable_reason", lambda: None)
    src, why = probe.open_source("auto")
    assert src.name == "bpf" and why is None


def test_no_btf_with_headers_takes_bcc_and_says_so(fake, caplog):
    FakeSource.fails = {"libbpf": "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing)"}
    fake.setattr(bcc_object, "unavailable_reason", lambda: None)
    with caplog.at_level(logging.WARNING, logger="ioaz.probe"):
        src, why = probe.open_source("auto")
    assert src.name == "bcc" and why is None    # not a fallback to diskstats
    assert "no BTF" in caplog.text and "BCC probe" in caplog.text


def test_no_btf_no_headers_falls_back_to_diskstats_naming_both(fake):
    FakeSource.fails = {"libbpf": "the kernel has no BTF"}
    fake.setattr(bcc_object, "unavailable_reason",
                 lambda: "no kernel headers at /lib/modules/9.9/build")
    src, why = probe.open_source("auto")
    assert src.name == "diskstats"
    assert "the kernel has no BTF" in why and "/lib/modules/9.9/build" in why


def test_bcc_that_fails_to_compile_falls_back_with_its_error(fake):
    FakeSource.fails = {"libbpf": "no BTF", "bcc": "BCC could not load x.c: Failed to compile"}
    fake.setattr(bcc_object, "unavailable_reason", lambda: None)
    src, why = probe.open_source("auto")
    assert src.name == "diskstats" and "Failed to compile" in why


@pytest.mark.parametrize("prefer", ["bpf", "bcc"])
def test_a_forced_loader_fails_rather_than_falling_back(fake, prefer):
    loader = "libbpf" if prefer == "bpf" else "bcc"
    FakeSource.fails = {loader: f"{loader} broke"}
    fake.setattr(bcc_object, "unavailable_reason", lambda: None)
    with pytest.raises(ProbeUnavailable, match=f"{loader} broke"):
        probe.open_source(prefer)


def test_bcc_forced_where_it_cannot_run_says_why():
    """For real, on this machine: no headers for its kernel (or no BCC for this Python)."""
    why = bcc_object.unavailable_reason()
    if why is None:
        pytest.skip("this machine has the kernel's headers and BCC: the guest test covers it")
    with pytest.raises(ProbeUnavailable) as e:
        probe.open_source("bcc")
    assert str(e.value) in (why, "not root: loading BPF needs CAP_BPF and CAP_PERFMON")
