"""The testbed image and the elevators for its 6.12 kernel, built once per test module.

(A module of its own, not a conftest.py: in a whole-tree run the name `conftest` is
tests/kmod's.)"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
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
for s in fifo vr stream; do
  echo $s > $Q/scheduler
  mb=$(fio --name=r --filename=/dev/$D --direct=1 --rw=read --bs=64k --runtime=2 --time_based \
       --output-format=json | mbps)
  echo "@@ $s $(sed 's/.*\[\(.*\)\].*/\1/' $Q/scheduler) $mb"
done
fio --name=r --filename=/dev/$D --direct=1 --rw=randread --bs=4k --numjobs=4 --runtime=60 \
    --time_based --output=/dev/null &
FIO=$!
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


def check_elevators_and_probe(m: dict[str, str], release: str, results: Path) -> None:
    """What ELEVATORS_AND_PROBE must have shown, and a clean dmesg (DMESG)."""
    assert m["kernel"] == release and m.get("insmod") == "ok", m
    offered = set(m["offered"].split())
    assert {"fifo", "vr", "stream", "mq-deadline", "bfq", "kyber"} <= offered, m
    for s in ("fifo", "vr", "stream"):
        active, mb = m[s].split()
        assert active == s and int(mb) > 10, (s, m[s])   # a wd500 reads 64 KiB at 100+ MB/s
    assert m["observe_rc"] == "0", m["observe_err"]
    windows = [json.loads(x) for x in (results / "obs.json").read_text().splitlines()]
    assert windows and all(w["source"] == "bpf" for w in windows), m["observe_err"]
    w = windows[-1]   # the first window may begin before every fio job has started
    assert w["class"] == {"processes": "4", "pattern": "random", "mode": "read"}, windows
    assert m["dmesg_bad"] == "0", (results / "dmesg.txt").read_text()[-3000:]


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
    r = subprocess.run(["make", "-C", str(REPO / "kmod"), f"KDIR=/usr/src/linux-headers-{rel}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"kmod build for the guest's {rel} failed:\n{r.stderr[-2000:]}"
    assert (REPO / "bpf" / "build" / "ioaz.bpf.o").exists(), "make bpf builds the probe object"
    return img
