"""Where the bench's raw-disk workloads lie on disks of other sizes (workloads.placement): the
wd500's offsets unchanged, a 40 GB Maxtor's within it, and a disk too small refused before the
guest boots; the simulator's twins placed as the guest places them."""
from __future__ import annotations

import argparse
import os
import subprocess

import pytest
from ioaz.lab.testbench import bench_cli, bench_sim, workloads
from ioaz.testbed import modeldisk

GIB = 1 << 30


def capacity(model: str) -> int:
    return modeldisk.make_device(model, 1, None).capacity_sectors * 512


def test_the_wd500_keeps_the_papers_offsets_and_the_maxtor_fits_them_in() -> None:
    assert workloads.placement(capacity("wd500")) == {"PAR_APART_GB": "50",
                                                      "ZERO_AT_MB": str(200 * 1024)}
    for model in ("maxtor40", "wd500"):
        size = capacity(model)
        got = workloads.placement(size)
        apart = int(got["PAR_APART_GB"])
        last_end = (workloads.PAR_FIRST_GB + 3 * apart + 1) * GIB   # the 4th reader's 1 GB
        assert last_end <= size, (model, got)
        assert (int(got["ZERO_AT_MB"]) + 1024) * (1 << 20) <= size, (model, got)
    maxtor = workloads.placement(capacity("maxtor40"))
    assert int(maxtor["PAR_APART_GB"]) >= 5     # still seeks of gigabytes between readers
    with pytest.raises(ValueError, match="the raw disk has 8 GiB: the workloads need 24"):
        workloads.placement(8 * GIB)


def test_the_scripts_take_the_placement_from_their_environment(tmp_path) -> None:
    """bash expands a mix's job file with the placement as the guest exports it, and fio
    reads it with the readers that far apart."""
    env = {**os.environ, "PHASE": "5", **workloads.placement(capacity("maxtor40"))}
    mix = workloads.BY_NAME["phases-contrast"].script
    head = mix[:mix.index("EOF\n", mix.index("<<EOF") + 5) + 4]
    job = tmp_path / "mix.fio"
    head = head.replace("/tmp/phases-contrast.fio", str(job))
    subprocess.run(["bash", "-c", head], env=env, check=True)
    text = job.read_text()
    assert "offset_increment=8g" in text and "${" not in text, text
    parsed = subprocess.run(["fio", "--parse-only", str(job)], env=env, capture_output=True,
                            text=True)
    assert parsed.returncode == 0, parsed.stderr
    par = workloads.BY_NAME["par-read"].script
    echo = subprocess.run(["bash", "-c", "echo " + par.split(" > ")[0].split("--offset=")[1]],
                          env=env, capture_output=True, text=True, check=True).stdout
    assert echo.startswith("10g --offset_increment=8g --size=1g"), echo
    zero = workloads.BY_NAME["zero"].script
    assert "seek=$ZERO_AT_MB" in zero


def test_a_model_too_small_for_the_raw_workloads_is_refused_naming_them() -> None:
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    p.add_argument("--rounds", type=int)
    args = p.parse_args(["--model", modeldisk.ZERO, "--workloads", "par-read,s-1r-seq",
                         "--contenders", "bfq"])
    with pytest.raises(ValueError, match=r"--model zero: the raw disk has 8 GiB: the "
                                         r"workloads need 24 or more \(par-read\)"):
        bench_cli.plan_from(args)
    ok = p.parse_args(["--model", "maxtor40", "--workloads", "par-read,zero",
                       "--contenders", "bfq"])
    assert [w.name for w in bench_cli.plan_from(ok).workloads] == ["par-read", "zero"]


def test_the_simulators_twins_lie_where_the_guests_workloads_do() -> None:
    for apart, model in ((50, "wd500"), (8, "maxtor40")):
        twins = bench_sim.twins(5, 5, apart)
        regions = sorted(q.region_gb for q in twins["par-read"].phases[0].procs)
        assert regions == [10 + apart * i for i in range(4)], (model, regions)
        contrast = twins["phases-contrast:par-read"].phases[0].procs
        assert sorted(q.region_gb for q in contrast) == regions
        assert max(regions) + 1 <= capacity(model) / 1e9
    assert sorted(q.region_gb for q in bench_sim.twins(5, 5)["par-read"].phases[0].procs) == \
        [10, 60, 110, 160]   # the simulator's own par-read, as Xu & Jiang laid it out
