"""`ioaz-lab bench testbed` end to end, short: one boot of the guest, par-read and IOAZ's disk
zeroing under mq-deadline (the kernel's default) and under ioazd, one round of 5 s runs, on an md
RAID 5 that mdadm makes of three wd500 model disks in the guest. The raw workloads' code is the
same on one disk (the array's place is taken by disk 0); the full bench, on one disk and on the
arrays, every workload and scheduler, three rounds, is `make bench`.

What it holds ioazd to: on zeroing it takes IOAZ's FCFS (fcfs -> none, which merges) from the
bfq its idle policy set at its start, and is not far behind the default; realised as the
merge-less fifo module it ran at 1/30 of it.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from guest_fixture import guest_image  # noqa: F401 (a fixture)
from ioaz.lab.testbench import bench_cli
from ioaz.testbed import image


def test_bench_testbed_short_on_md_raid5(guest_image: image.Image,  # noqa: F811 (the fixture)
                                         tmp_path: Path) -> None:
    """ioazd serves each member on its own (md0 has no scheduler); every member is back on the
    kernel's default after every run."""
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int)
    p.add_argument("--out")
    bench_cli.add_arguments(p)
    r = bench_cli.run_bench(p.parse_args(
        ["--workloads", "par-read,zero", "--contenders", "mq-deadline,ioazd", "--rounds", "1",
         "--runtime", "5", "--path-credit-us", "250", "--raid", "5", "--members", "3",
         "--out", str(tmp_path)]))
    report = Path(r["report"])
    assert "## Summary" in report.read_text() and "md RAID 5" in report.read_text()
    out = report.parent
    guest = json.loads((out / "guest" / "guest.json").read_text())
    assert guest["raw"] == "md0" and len(guest["members"]) == 3, guest
    assert "raid5" in guest["array"] and "Raid Devices : 3" in guest["array"], guest["array"]
    runs = [json.loads(x) for x in (out / "guest" / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 4 and all(x["rc"] == 0 for x in runs), runs
    for x in runs:
        # md0 itself was measured; every disk with a scheduler got the default back
        after, before = x["stat_after"]["md0"], x["stat_before"]["md0"]
        assert after[2] + after[6] > before[2] + before[6], x    # sectors read and written
        assert set(x["scheduler_after"].values()) == {"mq-deadline"}, x
    a = json.loads((out / "results.json").read_text())["testbed"]["analysis"]["workloads"]
    for w in ("par-read", "zero"):
        for c in ("mq-deadline", "ioazd"):
            m = a[w]["contenders"][c]
            assert m["n"] == 1 and m["mb_s"] > 0 and m["disk_mb_s"] > 0, (w, c, m)
    # The zeroing reaches the members as one writer's (md's own thread) sequential writes:
    # ioazd took IOAZ's FCFS (none) for each member on what it saw itself, and was not far
    # behind the default (realised as the merge-less fifo module it once ran at 1/30 of it).
    # Before the workload, the idle policy put the quiet member on bfq (ioazd's start).
    zero = a["zero"]["contenders"]
    tl = zero["ioazd"]["timelines"][0]
    assert [(e["to"], e["reason"]) for e in tl if e["t"] < 0] == [("bfq", "idle_policy")], tl
    assert [e["to"] for e in tl if e["t"] >= 0] == ["none"], zero["ioazd"]
    (end,) = zero["ioazd"]["at_end"]
    assert {end[d] for d in guest["members"]} == {"none"}, end
    assert zero["ioazd"]["mb_s"] > 0.5 * zero["mq-deadline"]["mb_s"], zero
    assert (out / "testbed_throughput.png").stat().st_size > 1000
