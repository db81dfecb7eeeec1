"""The short versions of `ioaz-lab bench scale` and `bench soak` (ioaz.lab.bench_scale; the
long ones are in `make bench`): ioazd's window loop over many loop devices with disks
detached and attached while it runs, and over a few devices whose workload keeps changing.
Every window inside its length, descriptors and threads flat, every device put back."""
from __future__ import annotations

import pytest
from conftest import need_root, need_schedulers, need_tool


@pytest.mark.root
def test_many_devices_some_coming_and_going():
    need_root()
    need_tool("fio")
    from ioaz.lab.bench_scale import scale
    r = scale(24, 12, window_s=1.0, churn_every=4, churn=3)
    print(r)
    assert r["detached"] == 9 and r["attached"] == 9
    assert r["managed_at_end"] == 24, r
    assert r["windows_over_length"] == 0, r
    assert r["fds_first_last"][1] - r["fds_first_last"][0] <= 4, r
    assert r["threads_first_last"][1] == r["threads_first_last"][0], r
    assert r["not_restored"] == [] and r["not_back"] == [], r
    # the log's warnings are the detaches and nothing else: each detached device is found gone
    # at the next window (9 detached, the last 3 after the last window)
    assert r["log"]["events"] == {"device_vanished": 6}, r["log"]


@pytest.mark.root
def test_a_changing_workload_leaves_nothing_behind():
    need_root()
    need_tool("fio")
    need_schedulers(None, "bfq")   # the random readers' phase: the matrices' anticipatory
    from ioaz.lab.bench_scale import soak
    r = soak(3, 24.0, phase_s=6.0, window_s=0.5)
    print(r)
    assert r["phases"] == 4 and r["switches"] >= 3 and r["errors"] == 0, r
    # switching goes on after the first phase: the mark at 4.8 s (of 24) is still in the
    # random readers' phase, and the sequential reader after it is another class. (Whether the
    # writer's phase brings a switch of its own depends on the matrix, so it is not asked.) Every
    # switch is in the history, with the policy changes that kept the scheduler.
    assert r["switches_tenths"][-1] > r["switches_tenths"][2], r["switches_tenths"]
    assert r["history_kept"] >= r["switches"], r
    # a window over its length is listed with the switches made in it
    assert len(r["long_windows"]) == min(r["windows_over_length"], 50), r
    assert r["fds_warm_last"][1] - r["fds_warm_last"][0] <= 2, r
    assert r["threads_warm_last"][1] == r["threads_warm_last"][0], r
    assert r["rss_kb_warm_last"][1] - r["rss_kb_warm_last"][0] < 8 << 10, r
    assert r["not_restored"] == [] and r["not_back"] == [], r
    # reliability.md 6.7: nothing in the daemon's log at WARNING or above, from any logger:
    # no warning, no error, so no traceback (log.exception writes at ERROR)
    assert r["log"]["events"] == {}, r["log"]


@pytest.mark.root
def test_the_loads_can_run_in_a_cgroup_of_their_own_and_leave_none_behind():
    """--loads-cgroup, as systemd would part the workload from ioazd.service: the fio loads run
    in a CPU cgroup of their own, and the group and every load in it are gone at the end."""
    import os
    import subprocess
    from pathlib import Path

    need_root()
    need_tool("fio")
    root = Path("/sys/fs/cgroup")
    if not (root / "cpu" / "cpu.shares").exists() and "cpu" not in (
            (root / "cgroup.subtree_control").read_text().split()
            if (root / "cgroup.subtree_control").exists() else []):
        pytest.skip("no CPU cgroup controller to put the loads in (cgroup v1 cpu or v2 cpu)")
    from ioaz.lab.bench_scale import scale
    r = scale(6, 4, window_s=1.0, churn_every=2, churn=1, loads_cgroup=True)
    print(r)
    assert r["loads_cgroup"] is True and r["managed_at_end"] == 6, r
    assert r["not_restored"] == [] and r["not_back"] == [], r
    base = root / "cpu" if (root / "cpu" / "cpu.shares").exists() else root
    assert not (base / f"ioaz-bench-loads-{os.getpid()}").exists()
    for d in r["busy_devices"]:   # fio's job processes too, which outlive a killed parent
        left = subprocess.run(["pgrep", "-f", f"--filename=/dev/{d} "], capture_output=True,
                              text=True)
        assert left.stdout.strip() == "", (d, left.stdout)
