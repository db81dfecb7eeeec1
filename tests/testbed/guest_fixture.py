"""The testbed image and the elevators for its 6.12 kernel, built once per test module.

(A module of its own, not a conftest.py: in a whole-tree run the name `conftest` is
tests/kmod's.)"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from ioaz.testbed import image
from ioaz.testbed.errors import TestbedError

REPO = Path(__file__).resolve().parents[2]

# The start of a guest script every kernel's test runs: ioaz's three elevators (built for the
# booted kernel) load and serve I/O, then 4 random readers run (left running, as $FIO) while
# `ioazctl observe` classes them with the CO-RE probe. check_elevators_and_probe() reads it.
ELEVATORS_AND_PROBE = r"""
set -u
D=$(basename $(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000))
Q=/sys/block/$D/queue
mbps() {   # fio's JSON on stdin: the first job's read MB/s
  python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"]//10**6)'
}
echo "@@ kernel $(uname -r)"
insmod /mnt/ioaz/kmod/build/$(uname -r)/ioaz_sched.ko && echo "@@ insmod ok"
modprobe bfq; modprobe kyber-iosched
echo "@@ offered $(tr -d '[]' < $Q/scheduler)"
# Each of ours between two reads under the kernel's mq-deadline: the model disk is served
# by a host process, so its rate follows the host's load, and only a ratio within the run
# says whether an elevator holds the disk back.
i=0
for s in mq-deadline fifo mq-deadline vr mq-deadline stream mq-deadline; do
  echo $s > $Q/scheduler
  mb=$(fio --name=r --filename=/dev/$D --direct=1 --rw=read --bs=64k --runtime=2 --time_based \
       --output-format=json | mbps)
  echo "@@ read$i $s $(sed 's/.*\[\(.*\)\].*/\1/' $Q/scheduler) $mb"
  i=$((i+1))
done
fio --name=r --filename=/dev/$D --direct=1 --rw=randread --bs=4k --numjobs=4 --runtime=180 \
    --time_based --output=/dev/null &
FIO=$!
# observe once fio's four jobs run and the disk has their reads: under a loaded TCG host fio's
# start can take longer than the four windows (seen once: every window after the first empty)
t=0
until [ "$(pgrep -c -x fio)" -ge 5 ] && [ "$(awk '{print $1}' /sys/block/$D/inflight)" -ge 1 ] ||
      [ $t -ge 600 ]; do sleep 0.1; t=$((t+1)); done
echo "@@ fio_start_ds $t"
sleep 1
python3 -m ioaz.cli.ioazctl observe --json --count 4 --device $D > /mnt/results/obs.json \
    2>/tmp/obs.err
echo "@@ observe_rc $?"
echo "@@ observe_err $(head -c 300 /tmp/obs.err | tr '\n' ' ')"
"""
# The end of it: the readers stopped, and the kernel's log kept and searched.
STOP_READERS = "kill $FIO; wait\n"
DMESG = r"""
dmesg > /mnt/results/dmesg.txt
echo "@@ dmesg_bad $(dmesg | grep -c -e 'BUG:' -e 'WARNING:' -e 'Oops:' -e 'Call Trace:')"
"""


def guest_values(output: str) -> dict[str, str]:
    """The `@@ key value` lines of a guest script's output."""
    return {k: v.strip() for k, v in re.findall(r"^@@ (\S+) ?(.*)$", output, re.M)}


def check_reads(reads: list[str]) -> None:
    """Each of ours read at least half what the slower of the mq-deadline reads around it read.

    `reads` are ELEVATORS_AND_PROBE's "asked active MB/s" lines, mq-deadline at the even places.
    A wd500 reads 64 KiB at 100+ MB/s on a quiet host and a few MB/s on a loaded one, so an
    absolute floor either misses a slow elevator or fails on the host's load (CI once read
    7 MB/s under fifo with the unit tests running beside the guest). The host's load changes
    within seconds too (mq-deadline 7 MB/s before fifo and 33 after it, with another guest in
    the lane beside), so the bound is the slower neighbour: an elevator that holds the disk
    back reads far less than both."""
    rows = [r.split() for r in reads]
    for asked, active, _ in rows:
        assert active == asked, rows
    mb = [int(r[2]) for r in rows]
    assert all(x > 0 for x in mb[0::2]), f"mq-deadline read nothing: {rows}"
    for i in (1, 3, 5):
        around = min(mb[i - 1], mb[i + 1])
        assert mb[i] >= 0.5 * around, \
            f"{rows[i][0]} read {mb[i]} MB/s, mq-deadline {mb[i - 1]} and {mb[i + 1]} around it"


def check_elevators_and_probe(m: dict[str, str], release: str, results: Path) -> None:
    """What ELEVATORS_AND_PROBE must have shown, and a clean dmesg (DMESG)."""
    assert m["kernel"] == release and m.get("insmod") == "ok", m
    offered = set(m["offered"].split())
    assert {"fifo", "vr", "stream", "mq-deadline", "bfq", "kyber"} <= offered, m
    check_reads([m[f"read{i}"] for i in range(7)])
    assert m["observe_rc"] == "0", m["observe_err"]
    windows = [json.loads(x) for x in (results / "obs.json").read_text().splitlines()]
    assert windows and all(w["source"] == "bpf" for w in windows), m["observe_err"]
    w = windows[-1]   # the first window may begin before every fio job has started
    assert w["class"] == {"processes": "4", "pattern": "random", "mode": "read"}, windows
    assert m["dmesg_bad"] == "0", (results / "dmesg.txt").read_text()[-3000:]


def make_kmod(rel: str) -> None:
    """The elevators for the guest kernel `rel` (image.build_elevators), or the test fails
    with the build log's end."""
    try:
        image.build_elevators(REPO, rel, image.CACHE / "kmod.log")
    except TestbedError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def guest_image() -> image.Image:
    if os.geteuid() != 0:
        pytest.skip("needs root for the testbed image (mmdebstrap) and the guest: run "
                    "`make test` as root")
    for tool in ("qemu-system-x86_64", "mmdebstrap"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (`make testbed` installs it)")
    try:
        img = image.build()
        rel = image.kernels()["6.12"]
    except TestbedError as e:
        pytest.fail(str(e))
    make_kmod(rel)
    assert (REPO / "bpf" / "build" / "ioaz.bpf.o").exists(), "make bpf builds the probe object"
    return img
