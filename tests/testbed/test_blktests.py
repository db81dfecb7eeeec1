"""blktests' scheduler tests with ioaz's elevators loaded (issue 18 item 6): block/005 (switch
schedulers while doing IO, on the SATA disk and on null_blk) and block/047 (switch schedulers
concurrently, on null_blk) in the 6.12 and 7.3 guests, where queue/scheduler offers fifo, vr
and stream beside Debian's four. They pass, ioaz's elevators are switched in and out, and dmesg
is clean.

blktests is the field's suite, not this project's code: it is not vendored. Set IOAZ_BLKTESTS to a
checkout of linux-blktests/blktests to run this (one boot, about 3 min); see docs/testbed.md."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from guest_fixture import REPO, guest_image  # noqa: F401 (a fixture)
from ioaz.testbed import disks, image, trixie, vm

ENV = "IOAZ_BLKTESTS"
SKIP = ("blktests is not vendored: set IOAZ_BLKTESTS to a checkout of linux-blktests/blktests; "
        "see docs/testbed.md")
TIMEOUT_S = 15        # blktests' TIMEOUT: fio's runtime in block/005, the switching in block/047
IOAZ = ("fifo", "vr", "stream")


@pytest.fixture(scope="module")
def blktests_tree() -> Path:
    path = Path(os.environ.get(ENV, ""))
    if not os.environ.get(ENV) or not (path / "check").is_file():
        print(SKIP)
        pytest.skip(SKIP)
    return path


@pytest.mark.parametrize("kernel", ["6.12", trixie.SERIES_73])
def test_blktests_scheduler_switching_with_ioaz_elevators(
        blktests_tree: Path, guest_image: image.Image, tmp_path: Path,  # noqa: F811
        kernel: str) -> None:
    if kernel == trixie.SERIES_73:
        trixie.build_kmod(REPO, image.CACHE, image.SOURCES)   # guest_image built 6.12's
    # The results share is the guest's only writable window; blktests is copied to /tmp there.
    shutil.copytree(blktests_tree, tmp_path / "blktests-src", symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "results"))
    res = vm.run([f"bash /mnt/ioaz/tests/testbed/blktests_guest.sh /mnt/results/blktests-src "
                  f"{TIMEOUT_S}"],
                 vm.Options(kernel=kernel, disks=disks.parse("model:wd500"), results=tmp_path,
                            timeout_s=900))
    print(res.output)
    assert res.rc == 0, res.output[-3000:]
    lines = re.findall(r"^@@ (\S+) ?(.*)$", res.output, re.M)
    m = {k: v.strip() for k, v in lines}
    assert m["kernel"] == image.kernels()[kernel] and m.get("insmod") == "ok", m
    disk = m["disk"].split()[0]   # the SATA disk's name in the guest, "sda" "rotational=1"
    for q in (disk, "nullb0"):
        offered = set(m.get(f"offered_{q}", "").split())
        assert {"none", "mq-deadline", "bfq", "kyber", *IOAZ} <= offered, (q, offered)
    results = {tuple(v.split()[:2]): v.split()[2:] for k, v in lines if k == "result"}
    assert set(results) == {("005", disk), ("005", "nullb0"), ("047", "nodev")}, results
    logs = "".join(p.read_text() for p in sorted((tmp_path / "blktests-results").glob("check-*")))
    for key, (status, _runtime, reason) in results.items():
        assert status == "pass", (key, status, reason, logs)
    traced: dict[tuple[str, str], int] = {}
    for k, v in lines:
        if k == "traced" and " buffer " not in v:
            test, func, n = v.split()
            traced[(test, func)] = int(n)
        elif k == "traced":   # "<test> buffer entries-in-buffer/entries-written: K/W  #P:2"
            kept, written = re.search(r"(\d+)/(\d+)", v).groups()
            assert kept == written, f"the trace buffer lost entries: {v}"
    for test in ("block_005", "block_047"):
        for e in IOAZ:
            inits = traced.get((test, f"{e}_init_sched"), 0)
            assert inits > 0, (test, e, traced)
            # every queue that took an ioaz elevator gave it back (blktests restores the old one)
            assert traced.get((test, f"{e}_exit_sched"), 0) == inits, (test, e, traced)
    assert m.get("rmmod") == "ok", m
    assert m["dmesg_bad"] == "0", (tmp_path / "dmesg.txt").read_text()[-3000:]
