"""The class's process count over a horizon of windows (ioaz.classify.horizon): a reader the
scheduler keeps waiting still counts, one that exited does not, and the Observer and the
simulator's agent both classify by it. Against the real probe and fio:
tests/integration/test_probe_fio.py."""
from __future__ import annotations

import os
import subprocess

import pytest
from fake_sysfs import fake_disks
from ioaz.classify.classes import Thresholds, ThresholdsError, classify, load_thresholds
from ioaz.classify.horizon import ProcessHorizon
from ioaz.observe import Observer
from test_features import FakeSource, snap


def test_readers_served_in_turn_count_over_the_horizon():
    # 16 readers, a scheduler serving 5 of them each window (as stream did on wd500)
    h = ProcessHorizon(windows=4, min_share=0.02)
    counts = []
    for w in range(6):
        served = {(w * 5 + i) % 16: 100 for i in range(5)}
        counts.append(h.add(served, alive=set(range(16)) - set(served)))
    assert counts[0] == 5
    assert counts[3:] == [16, 16, 16]   # four windows of 5 cover all 16


def test_an_exited_process_leaves_at_once():
    h = ProcessHorizon(windows=4, min_share=0.02)
    for _ in range(3):
        h.add({p: 100 for p in range(16)})
    # a new phase: 16 readers gone, 4 new ones (other pids); none of the old is alive
    assert h.add({p: 100 for p in range(100, 104)}) == 4
    # an idle but living process listed with 0 (the simulator's way) keeps counting
    h2 = ProcessHorizon(windows=3, min_share=0.02)
    h2.add({1: 50, 2: 50})
    assert h2.add({1: 100, 2: 0}) == 2
    assert h2.add({1: 100}) == 1   # 2 neither submitted nor is alive: exited


def test_a_process_that_touched_the_disk_once_does_not_count():
    h = ProcessHorizon(windows=4, min_share=0.02)
    h.add({1: 1000, 2: 1000, 3: 5})
    assert h.add({1: 1000, 2: 1000}, alive={3}) == 2   # 5 of 4005 bios: under 2%
    assert h.pids() == {1, 2, 3}


def test_writers_a_scheduler_holds_back_stay_in_the_class_while_members():
    # 16 writers all served, then mq-deadline's way: one writer keeps the disk and the others'
    # requests wait, so they submit nothing, for longer than the 4 s horizon
    h = ProcessHorizon(windows=4, min_share=0.02, horizon_s=4.0, membership_s=10.0)
    writers = set(range(16))
    for _ in range(2):
        assert h.add({p: 40 for p in writers}, window_s=1.0) == 16
    # their bios stay in the horizon three windows more (the fourth is the one writer's
    # alone), and membership lasts 10 s after that
    held = [h.add({0: 700}, alive=writers - {0}, window_s=1.0) for _ in range(13)]
    assert held == [16] * 13
    assert h.add({0: 700}, alive=writers - {0}, window_s=1.0) == 1   # then they leave
    # without a membership the horizon alone drops them after 4 s (the count followed the
    # scheduler in force)
    h0 = ProcessHorizon(windows=4, min_share=0.02, horizon_s=4.0)
    h0.add({p: 40 for p in writers}, window_s=1.0)
    assert [h0.add({0: 700}, alive=writers - {0}, window_s=1.0) for _ in range(5)][-1] == 1


def test_a_member_is_kept_by_any_io_though_under_the_share_that_made_it_one():
    # mq-deadline with one writer keeping the disk: every 8 s the others' requests expire, each
    # is served once and submits a batch again, 8 bios against the 2800 of the horizon (0.3%)
    h = ProcessHorizon(windows=4, min_share=0.02, horizon_s=4.0, membership_s=10.0)
    writers = set(range(16))
    assert h.add({p: 40 for p in writers}, window_s=1.0) == 16
    counts = []
    for t in range(1, 41):
        served = {0: 700, **({p: 8 for p in writers - {0}} if t % 8 == 0 else {})}
        counts.append(h.add(served, alive=writers - set(served), window_s=1.0))
    assert counts == [16] * 40
    # the same bios never make a newcomer a member: 8 of 2800 is under the share
    h.add({0: 700, 99: 8}, alive=writers, window_s=1.0)
    assert 99 not in h.members


def test_membership_lasts_as_long_as_the_scheduler_may_hold_a_request():
    # ioazd set write_expire to 30 s (twice a p99 of 15 s): the others wait 30 s in silence
    writers = set(range(16))

    def silent_for(seconds: int, wait_s: float) -> list[int]:
        h = ProcessHorizon(windows=4, min_share=0.02, horizon_s=4.0, membership_s=10.0)
        h.add({p: 40 for p in writers}, window_s=1.0)
        return [h.add({0: 700}, alive=writers - {0}, window_s=1.0, wait_s=wait_s)
                for _ in range(seconds)]

    assert silent_for(30, wait_s=30.0) == [16] * 30
    assert silent_for(30, wait_s=5.0)[-1] == 1      # a shorter expiry: the 10 s stand
    # and no membership at all stays none (the -nomember bench variant)
    h0 = ProcessHorizon(windows=4, min_share=0.02, horizon_s=4.0)
    h0.add({p: 40 for p in writers}, window_s=1.0)
    assert [h0.add({0: 700}, alive=writers - {0}, window_s=1.0, wait_s=30.0)
            for _ in range(5)][-1] == 1


def test_a_member_that_exits_leaves_at_once_and_a_passer_by_never_joins():
    h = ProcessHorizon(windows=4, min_share=0.02, horizon_s=4.0, membership_s=10.0)
    h.add({1: 500, 2: 500, 3: 5}, window_s=1.0)     # 3 touched the disk once: under 2%
    assert h.members.keys() == {1, 2}
    assert h.add({1: 500}, alive={3}, window_s=1.0) == 1   # 2 exited; 3 is no member
    assert h.pids() == {1, 2, 3}                    # 2's liveness is asked once more
    assert h.add({1: 500}, window_s=1.0) == 1 and h.members.keys() == {1}


def test_a_kernel_thread_counts_by_the_horizon_alone():
    # the flusher's workers take turns: as members they would add up past the workload
    h = ProcessHorizon(windows=2, min_share=0.02, horizon_s=2.0, membership_s=10.0)
    kernel = {901, 902, 903}
    for worker in sorted(kernel):
        n = h.add({1: 500, worker: 300}, alive=kernel, window_s=1.0,
                  may_join=lambda p: p not in kernel)
    assert n == 3                        # the writer and the last two workers, by the horizon
    assert h.members.keys() == {1}
    assert h.add({1: 500}, alive=kernel, window_s=1.0, may_join=lambda p: p not in kernel) == 2
    assert h.add({1: 500}, alive=kernel, window_s=1.0, may_join=lambda p: p not in kernel) == 1


def test_kernel_threads_are_told_from_the_proc_stat_flags(tmp_path):
    from ioaz.observe import kernel_thread
    assert kernel_thread(2)                    # kthreadd
    assert not kernel_thread(os.getpid())
    # a command name with ") " in it: the flags are counted from the last parenthesis
    odd = tmp_path / "a) b 1 2 3 4 5 6"
    odd.symlink_to("/bin/sleep")
    p = subprocess.Popen([str(odd), "5"])
    try:
        assert not kernel_thread(p.pid)
    finally:
        p.kill()
        p.wait()
    assert not kernel_thread(p.pid)            # gone: not the kernel's


def test_membership_runs_on_the_simulators_windows_of_one_length():
    # the simulator gives no window_s to add: the horizon's window length stands in
    h = ProcessHorizon.of(Thresholds(process_horizon_s=1, process_membership_s=3), 0.5)
    h.add({1: 100, 2: 100})
    counts = [h.add({1: 100, 2: 0}) for _ in range(8)]   # 2 alive, silent
    # the horizon (two windows) counts it at 1.0 s; a member for 3 s after, then gone
    assert counts == [2] * 7 + [1]


def test_horizon_length_in_windows():
    assert ProcessHorizon.windows_for(4, 1.0) == 4
    assert ProcessHorizon.windows_for(4, 0.5) == 8
    assert ProcessHorizon.windows_for(0, 1.0) == 1   # 0: one window's count
    with pytest.raises(ValueError, match="at least 1"):
        ProcessHorizon(0, 0.02)


def test_class_uses_the_horizon_count():
    from ioaz.classify.types import WindowFeatures
    f = WindowFeatures(device="sdx", window_s=1, iops=100, read_bytes_per_s=4e5,
                       write_bytes_per_s=0, read_ratio=1, seq_ratio=0.95, processes=5,
                       avg_depth=5, mean_size_bytes=4096, p50_latency_s=None,
                       p99_latency_s=None, merge_ratio=0, requests=100)
    assert str(classify(f, Thresholds())) == "4/sequential/read"
    f.class_processes = 16
    assert str(classify(f, Thresholds())) == "16+/sequential/read"


def test_thresholds_horizon_is_checked(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("min_requests: 10\nprocess_horizon_s: -1\n")
    with pytest.raises(ThresholdsError, match=r"t.yaml:2: process_horizon_s .* seconds"):
        load_thresholds(p)
    assert load_thresholds().process_horizon_s == 4   # the shipped file


def test_observer_counts_a_silent_living_process(tmp_path):
    kernel = fake_disks(tmp_path, "sdx")
    # Two real processes: this one, and a child that exits before the last window.
    child = subprocess.Popen(["sleep", "60"])
    me = os.getpid()
    try:
        # window 1: both submit; window 2: only this process does (the child blocked);
        # window 3: the child has exited
        snaps = [snap(10, bios=0, procs={}),
                 snap(11, reads=200, bios=200, seq=200, procs={me: 100, child.pid: 100}),
                 snap(12, reads=400, bios=400, seq=400, procs={me: 300, child.pid: 100}),
                 snap(13, reads=600, bios=600, seq=600, procs={me: 500, child.pid: 100})]
        obs = Observer(FakeSource([{"sdx": s} for s in snaps]), Thresholds(), ["sdx"], kernel)
        obs.start()
        w1, w2 = obs.step().features[0], obs.step().features[0]
        assert (w1.processes, w1.class_processes) == (2, 2)
        assert (w2.processes, w2.class_processes) == (1, 2)   # silent but alive: counted
        child.kill()
        child.wait()
        w3 = obs.step().features[0]
        assert (w3.processes, w3.class_processes) == (1, 1)   # exited: gone at once
    finally:
        child.kill()
        child.wait()


def test_simulated_windows_get_the_agents_count():
    # what calibration stores for derive: the count the agent in the loop would have made
    from ioaz.classify.horizon import fill_class_processes
    from ioaz.classify.types import WindowFeatures

    def win(served: dict[int, int]) -> WindowFeatures:
        return WindowFeatures(device="sim0", window_s=1, iops=1, read_bytes_per_s=0,
                              write_bytes_per_s=0, read_ratio=1, seq_ratio=1,
                              processes=sum(1 for n in served.values() if n), avg_depth=1,
                              mean_size_bytes=4096, p50_latency_s=None, p99_latency_s=None,
                              merge_ratio=0, process_bios=served)

    # the simulator lists every live process, 0 for one that submitted nothing
    ws = [win({p: (100 if (p - w) % 4 == 0 else 0) for p in range(8)}) for w in range(5)]
    fill_class_processes(ws, Thresholds(process_horizon_s=4, min_process_share=0.02))
    assert [w.processes for w in ws] == [2, 2, 2, 2, 2]
    assert [w.class_processes for w in ws] == [2, 4, 6, 8, 8]


def test_the_elevators_expiry_is_read_from_its_knobs(tmp_path):
    kernel = fake_disks(tmp_path, "sdx")
    assert kernel.expiry_s("sdx") == 0.0                 # none: no elevator, no deadline
    kernel.write("sdx", "queue/scheduler", "mq-deadline")
    assert kernel.expiry_s("sdx") == 5.0                 # write_expire 5000 ms
    kernel.write("sdx", "queue/iosched/write_expire", "30000")
    # prio_aging_expire is how long a lower I/O priority may be passed over, not a deadline
    (kernel.path("sdx", "queue/iosched") / "prio_aging_expire").write_text("60000\n")
    assert kernel.expiry_s("sdx") == 30.0
    kernel.write("sdx", "queue/scheduler", "kyber")      # latency targets, no expiry
    assert kernel.expiry_s("sdx") == 0.0
    assert kernel.expiry_s("sdgone") == 0.0


def test_observer_keeps_a_member_as_long_as_the_elevator_may_hold_its_request(tmp_path):
    kernel = fake_disks(tmp_path, "sdx")
    kernel.write("sdx", "queue/scheduler", "mq-deadline")
    child = subprocess.Popen(["sleep", "60"])   # a writer whose requests wait, alive
    me = os.getpid()

    def classes(write_expire_ms: str) -> list[int | None]:
        kernel.write("sdx", "queue/iosched/write_expire", write_expire_ms)
        snaps = [snap(10, bios=0, procs={}), snap(11, bios=200, procs={me: 100, child.pid: 100})]
        for i in range(20):   # 20 s of this process alone submitting
            snaps.append(snap(12 + i, bios=300 + 100 * i,
                              procs={me: 200 + 100 * i, child.pid: 100}))
        obs = Observer(FakeSource([{"sdx": s} for s in snaps]), Thresholds(), ["sdx"], kernel)
        obs.start()
        return [obs.step().features[0].class_processes for _ in range(21)]

    try:
        assert classes("30000")[-1] == 2     # 20 s silent, under a 30 s expiry: still a member
        held = classes("5000")               # the 10 s membership alone
        assert held[0] == 2 and held[-1] == 1
    finally:
        child.kill()
        child.wait()


def _named(name: str) -> subprocess.Popen:
    """A real process that has renamed itself (prctl PR_SET_NAME) and sleeps."""
    p = subprocess.Popen(["python3", "-c", "import ctypes, sys, time; "
                          f"ctypes.CDLL(None).prctl(15, {name.encode()!r}, 0, 0, 0); "
                          "print(flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"\n"   # renamed
    return p


def test_udevs_worker_reading_a_disks_labels_never_joins_the_writers_class(tmp_path):
    # udev reads a disk a writer closed (about 40 bios beside the writer's 200 a second) and
    # its worker lives on: as a member it read a 1-process writer as 2 for 10 s
    from ioaz.observe import udev_worker
    me = os.getpid()
    for name, member in (("(udev-worker)", False), ("systemd-udevd", False), ("blkid", True)):
        other = _named(name)
        try:
            assert udev_worker(other.pid) is not member
            kernel = fake_disks(tmp_path / name, "sdx")
            snaps = [snap(10, bios=0, procs={})]
            snaps += [snap(10 + i, reads=200 * i, bios=200 * i, seq=200 * i,
                           procs={me: 200 * i - 40, other.pid: 40}) for i in range(1, 8)]
            obs = Observer(FakeSource([{"sdx": s} for s in snaps]), Thresholds(), ["sdx"],
                           kernel)
            obs.start()
            counts = [obs.step().features[0].class_processes for _ in range(7)]
            # by the 4 s horizon both count; past it only a member does, for its 10 s
            assert counts[:4] == [2, 2, 2, 2]
            assert counts[4:] == ([2, 2, 2] if member else [1, 1, 1]), name
        finally:
            other.kill()
            other.wait()
    assert not udev_worker(other.pid)          # gone
