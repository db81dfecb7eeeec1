"""apply / restore / drift against the fake sysfs tree (the real one: tests/integration)."""
from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from fake_sysfs import FakeKernel
from ioaz import sysblock as sf
from ioaz.actuate.actuator import Actuator, RetryPolicy
from ioaz.actuate.recover import recover
from ioaz.actuate.state import STATE_FILE, StateStore
from ioaz.actuate.types import QueueSettings
from ioaz.realisation import Realisation


@pytest.fixture
def kernel(tmp_path: Path) -> FakeKernel:
    k = FakeKernel(tmp_path / "sys")
    k.add_device("sdb", active="mq-deadline", queue_depth=64, dev="8:16")
    # An administrator's own tuning, which restore() must bring back.
    k.write("sdb", sf.knob_key("read_expire"), "300")
    k.write("sdb", sf.READ_AHEAD_KB, "4096")
    k.log.clear()
    return k


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def act(kernel: FakeKernel, tmp_path: Path, sleeps: list[float]) -> Actuator:
    return Actuator(kernel, StateStore(tmp_path / "run"), sleep=sleeps.append)


def test_apply_writes_scheduler_then_knobs_then_queue_settings(act: Actuator,
                                                               kernel: FakeKernel) -> None:
    r = act.apply("sdb", Realisation("bfq", {"slice_idle": 0}),
                  QueueSettings(nr_requests=64, read_ahead_kb=128, queue_depth=32))
    assert r.ok, r.errors
    assert [k for _, k, _ in kernel.log] == [
        sf.SCHEDULER, sf.knob_key("slice_idle"), sf.NR_REQUESTS, sf.READ_AHEAD_KB,
        sf.QUEUE_DEPTH]
    assert r.switched and r.scheduler_before == "mq-deadline" and r.scheduler_after == "bfq"
    assert r.stall_s is not None and r.stall_s >= 0
    assert r.took() == {sf.SCHEDULER: "bfq", sf.knob_key("slice_idle"): "0",
                        sf.NR_REQUESTS: "64", sf.READ_AHEAD_KB: "128", sf.QUEUE_DEPTH: "32"}


def test_originals_are_on_disk_before_the_first_write(act: Actuator, kernel: FakeKernel) -> None:
    seen: list[dict] = []
    kernel.on_write = lambda *_: seen.append(json.loads(act.state.path.read_text()))
    act.apply("sdb", Realisation("kyber"), QueueSettings(read_ahead_kb=0))
    original = seen[0]["devices"]["sdb"]
    assert original["scheduler"] == "mq-deadline"
    assert original["knobs"][sf.knob_key("read_expire")] == "300"
    assert original["queue"] == {sf.NR_REQUESTS: "256", sf.READ_AHEAD_KB: "4096",
                                 sf.QUEUE_DEPTH: "64"}


def test_a_later_change_keeps_the_first_originals(act: Actuator) -> None:
    assert act.apply("sdb", Realisation("kyber")).saved_originals
    second = act.apply("sdb", Realisation("none"), QueueSettings(nr_requests=32))
    assert second.ok and not second.saved_originals
    assert act.state.get("sdb")["scheduler"] == "mq-deadline"


def test_nothing_to_change_writes_nothing_and_saves_nothing(act: Actuator,
                                                            kernel: FakeKernel) -> None:
    r = act.apply("sdb", Realisation("mq-deadline", {"read_expire": 300}))
    assert r.ok and not r.switched and r.stall_s is None
    assert kernel.log == [] and not act.state.path.exists()


def test_restore_puts_everything_back_in_order_and_drops_the_entry(act: Actuator,
                                                                   kernel: FakeKernel) -> None:
    act.apply("sdb", Realisation("bfq", {"slice_idle": 0}),
              QueueSettings(nr_requests=64, read_ahead_kb=16, queue_depth=32))
    kernel.log.clear()
    r = act.restore("sdb")
    assert r.ok and r.restored, r.errors
    # Scheduler first, its knobs, then the queue settings backwards (nr_requests came back with
    # the scheduler switch, so it needs no write).
    assert [k for _, k, _ in kernel.log] == [
        sf.SCHEDULER, sf.knob_key("read_expire"), sf.QUEUE_DEPTH, sf.READ_AHEAD_KB]
    assert kernel.scheduler("sdb").active == "mq-deadline"
    assert kernel.read("sdb", sf.knob_key("read_expire")) == "300"
    assert kernel.read("sdb", sf.READ_AHEAD_KB) == "4096"
    assert kernel.read("sdb", sf.QUEUE_DEPTH) == "64"
    assert not act.state.path.exists()


def test_restore_of_a_vanished_device_is_tolerated_and_keeps_the_entry(
        act: Actuator, kernel: FakeKernel) -> None:
    kernel.add_device("sdc", dev="8:32")
    act.apply("sdb", Realisation("kyber"))
    act.apply("sdc", Realisation("kyber"))
    kernel.remove_device("sdb")
    results = {r.device: r for r in act.restore_all()}
    assert results["sdb"].vanished and not results["sdb"].restored
    assert results["sdc"].restored and kernel.scheduler("sdc").active == "none"
    assert list(act.state.load()) == ["sdb"]


@pytest.mark.parametrize("dev", ["8:16", "8:48"])
def test_a_different_disk_under_the_same_name_is_not_restored(act: Actuator, kernel: FakeKernel,
                                                             dev: str) -> None:
    """A loop device is 7:N whatever file it holds, and a new disk takes the free sdb: the
    kernel's diskseq tells them apart, and the old disk's originals go to neither."""
    act.apply("sdb", Realisation("kyber"))
    kernel.remove_device("sdb")
    kernel.add_device("sdb", active="none", dev=dev)
    kernel.log.clear()
    r = act.restore("sdb")
    assert r.replaced and not r.restored and r.ok
    assert "diskseq:2" in r.errors[0] and "diskseq:1" in r.errors[0]
    assert kernel.log == [] and kernel.scheduler("sdb").active == "none"
    assert act.state.get("sdb") is None


def test_crash_recovery_writes_nothing_onto_another_disk_of_the_same_name(
        kernel: FakeKernel, tmp_path: Path) -> None:
    Actuator(kernel, StateStore(tmp_path / "run")).apply("sdb", Realisation("kyber"))
    # the daemon is killed; the disk is detached and another attached as sdb, same 8:16
    kernel.remove_device("sdb")
    kernel.add_device("sdb", active="bfq", dev="8:16")
    kernel.log.clear()
    (r,) = recover(tmp_path / "run", actuator=Actuator(kernel, StateStore(tmp_path / "run")))
    assert r.replaced and kernel.log == [] and kernel.scheduler("sdb").active == "bfq"


def test_a_new_disk_under_an_old_name_gets_its_own_originals_saved(act: Actuator,
                                                                  kernel: FakeKernel) -> None:
    act.apply("sdb", Realisation("kyber"))
    kernel.remove_device("sdb")
    kernel.add_device("sdb", active="bfq", dev="8:16")
    res = act.apply("sdb", Realisation("mq-deadline"))
    assert res.ok and res.saved_originals and "dropped" in res.notes[0]
    entry = act.state.get("sdb")
    assert entry is not None and entry["scheduler"] == "bfq" and entry["identity"] == "diskseq:2"
    assert act.restore("sdb").restored and kernel.scheduler("sdb").active == "bfq"


def test_ebusy_is_retried_with_growing_backoff(act: Actuator, kernel: FakeKernel,
                                               sleeps: list[float]) -> None:
    kernel.faults[("sdb", sf.SCHEDULER)] = [errno.EBUSY, errno.EBUSY]
    r = act.apply("sdb", Realisation("kyber"))
    assert r.ok and r.steps[0].attempts == 3
    assert sleeps == [0.01, 0.02]


def test_a_busy_queue_gets_a_longer_budget_than_a_bad_value(act: Actuator, kernel: FakeKernel,
                                                            sleeps: list[float]) -> None:
    """EBUSY lasts as long as another writer's switch (Linux 7.2+): 7 attempts, 0.63 s at most;
    then the write fails, says so, and the disk keeps a scheduler."""
    kernel.faults[("sdb", sf.SCHEDULER)] = [errno.EBUSY] * 6
    r = act.apply("sdb", Realisation("kyber"))
    assert r.ok and r.steps[0].attempts == 7
    assert sleeps == [0.01, 0.02, 0.04, 0.08, 0.16, 0.32]
    sleeps.clear()
    kernel.faults[("sdb", sf.SCHEDULER)] = [errno.EBUSY] * 7
    r = act.apply("sdb", Realisation("bfq"))
    assert not r.ok and r.steps[0].attempts == 7 and len(sleeps) == 6
    assert "EBUSY" in r.errors[0] and "after 7 attempts" in r.errors[0]
    assert kernel.scheduler("sdb").active == "kyber"


def test_a_bad_knob_value_names_device_file_and_value_and_keeps_a_scheduler(
        act: Actuator, kernel: FakeKernel, sleeps: list[float]) -> None:
    r = act.apply("sdb", Realisation("kyber", {"read_lat_nsec": "fast"}))
    assert not r.ok
    msg = r.errors[0]
    assert "sdb" in msg and "/queue/iosched/read_lat_nsec" in msg and "'fast'" in msg
    assert "EINVAL" in msg
    assert len(sleeps) == RetryPolicy().attempts - 1  # bounded
    assert kernel.scheduler("sdb").active == "kyber"


def test_unknown_knob_is_an_error_listing_the_schedulers_knobs(act: Actuator) -> None:
    r = act.apply("sdb", Realisation("kyber", {"slice_idle": 0}))
    assert not r.ok and "no knob 'slice_idle'" in r.errors[0] and "read_lat_nsec" in r.errors[0]


def test_failed_switch_puts_the_previous_scheduler_back(act: Actuator,
                                                        kernel: FakeKernel) -> None:
    kernel.failed_switch_leaves = "none"
    kernel.faults[("sdb", sf.SCHEDULER)] = [errno.ENOMEM]
    r = act.apply("sdb", Realisation("bfq", {"slice_idle": 0}))
    assert not r.ok and r.rolled_back
    assert "ENOMEM" in r.errors[0] and "'bfq'" in r.errors[0]
    assert kernel.scheduler("sdb").active == "mq-deadline" == r.scheduler_after
    assert sf.knob_key("slice_idle") not in [k for _, k, _ in kernel.log]


def test_unavailable_scheduler_changes_nothing(act: Actuator, kernel: FakeKernel) -> None:
    r = act.apply("sdb", Realisation("vr"))
    assert not r.ok and "'vr' is not available" in r.errors[0]
    assert kernel.log == [] and not act.state.path.exists()


def test_no_state_dir_means_no_change(kernel: FakeKernel, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    act = Actuator(kernel, StateStore(tmp_path / "file" / "run"))
    r = act.apply("sdb", Realisation("kyber"))
    assert not r.ok and "cannot save its original settings" in r.errors[0]
    assert kernel.log == []


def test_missing_device_and_missing_queue_depth(act: Actuator, kernel: FakeKernel) -> None:
    assert "no such device" in act.apply("sdz", Realisation("none")).errors[0]
    kernel.add_device("loop3", dev="7:3")
    r = act.apply("loop3", Realisation("none"), QueueSettings(queue_depth=32))
    assert r.ok and "no device/queue_depth" in r.notes[0]


def test_clamped_value_is_reported_as_what_took(act: Actuator) -> None:
    r = act.apply("sdb", Realisation("mq-deadline"), QueueSettings(nr_requests=2))
    (step,) = r.steps
    assert step.ok and step.clamped and step.got == "4"
    assert "took '4'" in step.message()


def test_drift_is_a_change_behind_our_back(act: Actuator, kernel: FakeKernel) -> None:
    act.apply("sdb", Realisation("bfq", {"slice_idle": 0}), QueueSettings(nr_requests=64))
    assert act.check_drift("sdb") == []
    kernel.write("sdb", sf.READ_AHEAD_KB, "8")  # never written by us: not drift
    assert act.check_drift("sdb") == []
    kernel.write("sdb", sf.knob_key("slice_idle"), "8")
    (d,) = act.check_drift("sdb")
    assert (d.key, d.expected, d.actual) == (sf.knob_key("slice_idle"), "0", "8")
    kernel.write("sdb", sf.SCHEDULER, "none")
    keys = {d.key for d in act.check_drift("sdb")}
    assert keys == {sf.SCHEDULER, sf.NR_REQUESTS}  # the gone knobs are not listed
    # the scheduler line the caller has just read stands for the file, either way
    assert {d.key for d in act.check_drift("sdb", "none")} == keys
    kernel.write("sdb", sf.SCHEDULER, "bfq")
    assert {d.key for d in act.check_drift("sdb", "none")} == keys


def test_our_own_switch_resetting_nr_requests_is_not_drift(act: Actuator) -> None:
    act.apply("sdb", Realisation("bfq"), QueueSettings(nr_requests=64))
    act.apply("sdb", Realisation("none"))
    assert act.check_drift("sdb") == []


def test_vanished_device_drifts(act: Actuator, kernel: FakeKernel) -> None:
    act.apply("sdb", Realisation("kyber"))
    kernel.remove_device("sdb")
    (d,) = act.check_drift("sdb")
    assert d.key == sf.SCHEDULER and d.actual is None


def test_recover_in_a_new_actuator_restores_from_the_state_file(
        act: Actuator, kernel: FakeKernel, tmp_path: Path) -> None:
    act.apply("sdb", Realisation("none"), QueueSettings(read_ahead_kb=0))
    del act  # the process "dies": only the state file is left
    fresh = Actuator(kernel, StateStore(tmp_path / "run"))
    results = recover(actuator=fresh)
    assert [r.restored for r in results] == [True]
    assert kernel.scheduler("sdb").active == "mq-deadline"
    assert kernel.read("sdb", sf.knob_key("read_expire")) == "300"
    assert kernel.read("sdb", sf.READ_AHEAD_KB) == "4096"
    assert recover(actuator=fresh) == []


@pytest.mark.parametrize("corrupt", [
    b"", b'{"devices": {"sdb": ', bytes(range(256)) + bytes(range(44)), b'{"sdb": "caf\xe9"}',
    b"[1,2]", b'{"devices": ["sdb", "sdc"]}', None,
], ids=["empty", "truncated", "300-bytes", "not-utf8", "list", "devices-list", "directory"])
def test_after_a_corrupt_state_file_switches_and_restores_work_again(
        act: Actuator, kernel: FakeKernel, tmp_path: Path, corrupt: bytes | None) -> None:
    """Reliability 3.3: a crash with two devices switched, then the state file is spoilt.
    On 2026-11-23 every later switch failed "cannot save its original settings" and SIGTERM
    put nothing back. Now: the file is set aside, the next switch saves the values in force,
    and a stop restores them and clears the file. (The crashed run's originals are lost with
    the file; only its .prev may hold them.)"""
    kernel.add_device("sdc", active="mq-deadline", dev="8:32")
    act.apply("sdb", Realisation("bfq"))
    act.apply("sdc", Realisation("bfq"))
    path = act.state.path
    path.unlink()
    if corrupt is None:
        path.mkdir()
    else:
        path.write_bytes(corrupt)
    fresh = Actuator(kernel, StateStore(tmp_path / "run"))      # the restarted daemon
    assert recover(actuator=fresh) == []
    assert fresh.state.set_aside == 1
    r = fresh.apply("sdb", Realisation("kyber"))
    assert r.ok and r.switched and r.saved_originals, r.errors
    assert [x.restored for x in fresh.restore_all()] == [True]
    assert kernel.scheduler("sdb").active == "bfq"              # the values in force before
    assert not path.exists()
    assert len(list(path.parent.glob(f"{STATE_FILE}.corrupt-*"))) == 1   # kept aside


def test_forget_leaves_the_device_as_the_admin_set_it(act: Actuator, kernel: FakeKernel) -> None:
    act.apply("sdb", Realisation("kyber"))
    kernel.write("sdb", sf.SCHEDULER, "bfq")
    act.forget("sdb")
    assert act.check_drift("sdb") == [] and act.restore_all() == []
    assert kernel.scheduler("sdb").active == "bfq"


def test_apply_tuned_scales_deadline_expiries_with_latency(act: Actuator,
                                                           kernel: FakeKernel) -> None:
    from ioaz.classify.types import WindowFeatures
    f = WindowFeatures(device="sdb", window_s=1.0, iops=100.0, read_bytes_per_s=4e5,
                       write_bytes_per_s=0.0, read_ratio=1.0, seq_ratio=0.0, processes=16,
                       avg_depth=60.0, mean_size_bytes=4096.0, p50_latency_s=0.3,
                       p99_latency_s=0.7, merge_ratio=0.0)
    r = act.apply_tuned("sdb", Realisation("mq-deadline"), f)
    assert r.ok, r.errors
    assert kernel.read("sdb", sf.knob_key("read_expire")) == "1400"
    assert kernel.read("sdb", sf.knob_key("write_expire")) == "14000"
    assert any("Carroll 5.1.1" in n for n in r.notes)


def test_a_hand_broken_state_entry_fails_that_device_only(act: Actuator,
                                                          kernel: FakeKernel) -> None:
    kernel.add_device("sdc", dev="8:32")
    act.apply("sdc", Realisation("kyber"))
    text = act.state.path.read_text().replace('"devices": {',
                                              '"devices": {"sdb": {"dev": "8:16"}, ')
    act.state.path.write_text(text)        # a hand edit: no scheduler, no knobs
    results = {r.device: r for r in act.restore_all()}
    # sdb's entry cannot be restored from and is dropped (a copy of the file set aside);
    # sdc's originals, in the same file, are restored
    assert "sdb" not in results and act.state.set_aside == 1
    assert "sdb: scheduler is None" in (act.state.last_set_aside or "")
    assert results["sdc"].restored


def _tmpfs(where: Path, size: str = "64k") -> None:
    import os
    import subprocess
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")


def _umount(where: Path) -> None:
    import subprocess
    subprocess.run(["umount", str(where)], capture_output=True, check=False)


@pytest.mark.parametrize("how", ["full", "read-only"])
def test_a_state_dir_that_cannot_be_written_at_restore_says_the_values_are_back(
        kernel: FakeKernel, tmp_path: Path, how: str) -> None:
    """Reliability 3.10 and 3.12: the state directory fills up or turns read-only after the
    switches. A switch of another device is refused with the reason. Restore puts every value
    back and says so (restored), and says the state file could not be updated (state_kept),
    rather than 'restored: false'. The next start finds nothing left to write and clears the
    entry."""
    import subprocess
    run = tmp_path / "run"
    _tmpfs(run)
    try:
        kernel.add_device("sdc", active="mq-deadline", dev="8:32")
        act = Actuator(kernel, StateStore(run))
        act.apply("sdb", Realisation("bfq", {}), QueueSettings())
        act.apply("sdc", Realisation("bfq", {}), QueueSettings())
        if how == "full":
            import os
            fd = os.open(run / "filler", os.O_WRONLY | os.O_CREAT)
            try:
                while os.write(fd, b"\0" * 4096):
                    pass
            except OSError:
                pass        # full
            finally:
                os.close(fd)
            want = "No space left"
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(run)], check=True)
            want = "Read-only file system"
        # a device never switched before: its originals cannot be saved, so no switch
        kernel.add_device("sdd", active="mq-deadline", dev="8:48")
        new = act.apply("sdd", Realisation("bfq", {}), QueueSettings())
        assert not new.ok and not new.switched
        assert "cannot save its original settings" in " ".join(new.errors), new.errors
        assert want in " ".join(new.errors), new.errors
        assert kernel.scheduler("sdd").active == "mq-deadline"
        r = act.restore("sdb")
        assert r.restored and kernel.scheduler("sdb").active == "mq-deadline", r.errors
        assert r.state_kept is not None and want in r.state_kept, r.state_kept
        if how == "read-only":
            subprocess.run(["mount", "-o", "remount,rw", str(run)], check=True)
        else:
            (run / "filler").unlink()
        # the next start: sdb's entry is still there, and nothing of it is left to write
        kernel.log.clear()
        again = {x.device: x for x in Actuator(kernel, StateStore(run)).restore_all()}
        assert again["sdb"].restored and again["sdb"].state_kept is None
        assert not [k for d, k, _ in kernel.log if d == "sdb"]
    finally:
        _umount(run)


def test_no_switch_without_room_to_save_the_originals(kernel: FakeKernel, tmp_path: Path) -> None:
    """Reliability 3.9: a state directory full before the first switch. The switch is refused
    with the reason and the disk left as it was: a change whose originals cannot be kept is
    a change that a crash could not undo."""
    import os
    run = tmp_path / "run"
    _tmpfs(run, "16k")
    try:
        fd = os.open(run / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        r = Actuator(kernel, StateStore(run)).apply("sdb", Realisation("bfq", {}),
                                                    QueueSettings())
        assert not r.ok and not r.switched
        why = " ".join(r.errors)
        assert "cannot save its original settings" in why and "No space left" in why, why
        assert kernel.scheduler("sdb").active == "mq-deadline"
    finally:
        _umount(run)
