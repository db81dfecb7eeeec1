"""The VM harness's reading of dmesg, no VM needed: every splat fails a test but the one the
emulator makes on its own, and that one only whole and without ioaz_sched in it."""
from __future__ import annotations

import vmharness

# From the 6.12 safety run of 2026-11-26 (multi-threaded TCG), trimmed.
EMULATOR = """\
[   10.977826] ------------[ cut here ]------------
[   10.979141] WARNING: CPU: 0 PID: 220 at arch/x86/kernel/traps.c:1120 exc_debug_kernel+0xca/0x160
[   10.980851] Modules linked in: ioaz_sched(OE) null_blk configfs
[   10.981794] CPU: 0 UID: 0 PID: 220 Comm: modprobe Tainted: G OE 6.12.117+deb12-amd64 #1
[   10.982160] RIP: 0010:exc_debug_kernel+0xca/0x160
[   10.982921] Call Trace:
[   10.983499]  <#DB>
[   10.983889]  asm_exc_debug+0x1e/0x40
[   10.984076] RIP: 0010:kmem_cache_alloc_noprof+0xc8/0x2f0
[   10.984372]  </#DB>
[   10.984390]  __anon_vma_prepare+0x44/0x1e0
[   10.984511]  asm_exc_page_fault+0x26/0x30
[   10.984956] ---[ end trace 0000000000000000 ]---""".splitlines()


def boot(lines: list[str]) -> vmharness.Boot:
    return vmharness.Boot(console="", sections={"dmesg": ["[ 2.2] null_blk: module loaded",
                                                          *lines]}, returncode=0)


def test_the_emulators_own_single_step_splat_is_reported_not_failed() -> None:
    b = boot(EMULATOR)
    assert b.dmesg_problems() == []
    assert len(b.dmesg_excused()) == 1 and "exc_debug_kernel" in b.dmesg_excused()[0]


def test_the_same_splat_with_ioaz_in_its_trace_fails() -> None:
    ours = [*EMULATOR[:9], "[   10.984380]  vr_dispatch_request+0x20/0x90 [ioaz_sched]",
            *EMULATOR[9:]]
    b = boot(ours)
    assert b.dmesg_excused() == []
    assert any("exc_debug_kernel" in line for line in b.dmesg_problems())
    assert any("Call Trace" in line for line in b.dmesg_problems())


def test_any_other_splat_fails() -> None:
    other = [line.replace("arch/x86/kernel/traps.c:1120 exc_debug_kernel",
                          "block/blk-mq.c:2050 blk_mq_run_hw_queue") for line in EMULATOR]
    b = boot(other)
    assert b.dmesg_excused() == [] and len(b.dmesg_problems()) == 2
    # a WARNING outside any cut-here block, and a BUG line, still count
    assert boot(["[ 1.0] BUG: kernel NULL pointer dereference"]).dmesg_problems()
