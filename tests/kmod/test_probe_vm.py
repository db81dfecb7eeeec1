"""The BPF probe (bpf/build/ioaz.bpf.o, built on this machine's kernel) on other kernels.

The object is CO-RE: it must load and count right on any kernel with BTF, 5.11 and later. Here
it runs on Debian 12's 6.1 and on 6.12 in qemu, loaded by tests/kmod/probeload.c (the same
steps as agent/ioaz/probe/, in C, as the VM has no Python), against null_blk driven by iotool.
"""
from __future__ import annotations

import pytest
import vmharness


@pytest.fixture
def probe_boot(functional_boot: vmharness.Boot) -> vmharness.Boot:
    """The kernel's functional boot (conftest.py), which ran the probe after the elevators."""
    why = vmharness.PROBE_LEFT_OUT.get(functional_boot.krel)
    if why and "missing" in why:
        pytest.fail(why)
    if why:
        pytest.skip(f"probe VM test on {functional_boot.krel} cannot run here: {why}")
    return functional_boot


def device_line(b: vmharness.Boot, section: str) -> dict[str, int]:
    """The probe's counters for nullb0 from a section's `dev MAJ:MIN key value ...` line."""
    lines = b.section(section)
    errors = [ln for ln in lines if ln.startswith("error")]
    assert not errors, f"{b.krel}: probeload failed: {errors}"
    assert "loaded 1" in lines, f"{b.krel}: the object did not load:\n" + "\n".join(lines)
    devt = b.values("probe:env")["devt"]
    for ln in lines:
        parts = ln.split()
        if parts[:2] == ["dev", devt]:
            return {k: int(v) for k, v in zip(parts[2::2], parts[3::2], strict=True)}
    raise AssertionError(f"{b.krel}: no counters for nullb0 ({devt}):\n" + "\n".join(lines))


def test_loads_and_attaches_every_program(probe_boot: vmharness.Boot) -> None:
    v = probe_boot.values("probe:seq")
    assert probe_boot.values("probe:env")["btf"] == "1"
    # bio_queue, 2 bio merges, rq_merge, rq_complete, and getrq (sampled periods only; here
    # it just counts into the always-open slot 0)
    assert v["programs"] == "6", v
    assert v["command_status"] == "0", v
    # every block tracepoint we use takes one argument since 5.11, read from BTF
    assert v["nargs_block_bio_queue"] == "1" and v["nargs_block_rq_merge"] == "1", v


def test_two_interleaved_readers_counted_exactly_and_sequential(
        probe_boot: vmharness.Boot) -> None:
    c = device_line(probe_boot, "probe:seq")
    v = probe_boot.values("probe:seq")
    reads = int(v["a_reads"].split()[-1]) + int(v["b_reads"].split()[-1])
    print(f"{probe_boot.krel}: iotool {reads} reads, probe {c}")
    assert reads > 100
    assert c["read"] == reads and c["write"] == 0
    assert c["bios"] == reads                  # synchronous 4 KiB O_DIRECT: no merging
    assert c["seq"] / c["bios"] > 0.9
    assert c["procs"] == 2
    assert c["lat"] + c["untimed"] == reads and c["lat"] >= 0.99 * reads


def test_random_reader_counted_exactly_and_random(probe_boot: vmharness.Boot) -> None:
    c = device_line(probe_boot, "probe:rand")
    v = probe_boot.values("probe:rand")
    done = int(v["r_completed"])
    print(f"{probe_boot.krel}: iotool {done} completed, probe {c}")
    assert done > 100 and int(v["r_errors"]) == 0
    assert c["read"] == done and c["bios"] == done
    assert c["seq"] / c["bios"] < 0.1
    assert c["procs"] == 1
    # mq-deadline: every request passes the scheduler, so the kernel timestamps each one
    assert c["lat"] == done and c["untimed"] == 0
