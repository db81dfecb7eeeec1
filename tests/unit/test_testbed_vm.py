"""The testbed's boot loop, apart from qemu: which deaths are booted again, and what is shown."""
from __future__ import annotations

from pathlib import Path

import pytest
from ioaz.testbed import vm
from ioaz.testbed.errors import TestbedError

OOPS_CONSOLE = "\n".join([
    "[  OK  ] Started something.",
    *[f"[   17.5] filler {i}" for i in range(30)],
    "[   17.59] BUG: kernel NULL pointer dereference, address: 0000000000000004",
    "[   17.59] #PF: supervisor read access in kernel mode",
    "[   17.60] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009",
])


def test_crash_excerpt_starts_at_the_kernels_first_word_of_trouble() -> None:
    got = vm.crash_excerpt(OOPS_CONSOLE)
    assert got.splitlines()[0].endswith("address: 0000000000000004")
    assert "Attempted to kill init" in got
    assert "filler" not in got


def test_crash_excerpt_without_an_oops_is_the_consoles_end() -> None:
    console = "\n".join(f"line {i}" for i in range(100))
    assert vm.crash_excerpt(console).splitlines() == [f"line {i}" for i in range(80, 100)]


def _fake_boots(monkeypatch: pytest.MonkeyPatch,
                outcomes: list[Exception | vm.Result]) -> list[int]:
    calls: list[int] = []

    def boot(cmd: object, opts: vm.Options, results: Path, echo: bool) -> vm.Result:
        calls.append(1)
        (results / "console.log").write_text(f"boot {len(calls)}\n")
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(vm, "_boot_and_run", boot)
    return calls


def test_a_guest_that_dies_booting_is_booted_once_more_and_its_log_kept(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ok = vm.Result(0, "", tmp_path, tmp_path / "console.log", 40.0, 50.0)
    calls = _fake_boots(monkeypatch, [vm.GuestCrashedBooting("oops at 17 s"), ok])
    assert vm.run(["true"], vm.Options(results=tmp_path)) is ok
    assert len(calls) == 2
    assert (tmp_path / "console-boot1-died.log").read_text() == "boot 1\n"
    assert "oops at 17 s" in capsys.readouterr().out


def test_a_guest_that_dies_booting_twice_is_an_error(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    _fake_boots(monkeypatch, [vm.GuestCrashedBooting("first"), vm.GuestCrashedBooting("second")])
    with pytest.raises(vm.GuestCrashedBooting, match="second"):
        vm.run(["true"], vm.Options(results=tmp_path))


def test_a_guest_that_dies_after_the_command_started_is_never_booted_again(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = _fake_boots(monkeypatch, [TestbedError("died in the middle of fio")])
    with pytest.raises(TestbedError, match="middle of fio"):
        vm.run(["true"], vm.Options(results=tmp_path))
    assert len(calls) == 1


def _fake_qemu(monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """_boot_and_run with `sh -c script` in qemu's place (run in the results directory)."""
    monkeypatch.setattr(vm.image_mod, "cached", lambda: object())
    monkeypatch.setattr(vm.disks_mod, "qemu_args", lambda *a: [])
    monkeypatch.setattr(vm, "qemu_command",
                        lambda img, opts, results, run, disk_args:
                        ["sh", "-c", f"cd {results} && {script}"])


def test_a_boot_that_hangs_before_the_command_is_a_boot_death(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_qemu(monkeypatch, "echo '[  20.1] systemd[1]: waiting'; sleep 30")
    monkeypatch.setattr(vm, "BOOT_DEADLINE_S", 0.5)
    with pytest.raises(vm.GuestCrashedBooting, match=r"had not started the command") as e:
        vm._boot_and_run(["true"], vm.Options(results=tmp_path, timeout_s=20), tmp_path, False)
    assert "systemd[1]: waiting" in str(e.value)


def test_a_command_that_hangs_is_reported_with_its_last_output(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_qemu(monkeypatch, "echo 24.0 > .testbed/started; "
                            "printf '@@ insmod ok\\n@@ fifo fifo 120\\n' > .testbed/output; "
                            "echo 'INFO: task fio:312 blocked for more than 120 seconds.'; "
                            "sleep 30")
    with pytest.raises(TestbedError) as e:
        vm._boot_and_run(["true"], vm.Options(results=tmp_path, timeout_s=1.5), tmp_path, False)
    msg = str(e.value)
    assert not isinstance(e.value, vm.GuestCrashedBooting)
    assert "did not finish within 2 s" in msg and "the command started" in msg
    assert "@@ fifo fifo 120" in msg
    assert "task fio:312 blocked for more than 120 seconds" in msg
