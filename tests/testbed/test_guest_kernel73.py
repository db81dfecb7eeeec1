"""Kernel 7.3 (trixie-backports), the newest the registry has: ioaz's elevators, built for it in a
trixie chroot (its API: the core allocates the elevator_queue; hrtimer_setup), load and serve I/O;
the CO-RE probe classes a workload; and ioaz's actuator switches schedulers while a second writer
races it, as udev would, on a kernel where a racing write fails with EBUSY (7.2, 4ff58d6bc9dd).
One boot."""
from __future__ import annotations

import json

from guest_fixture import (  # noqa: F401 (guest_image: a fixture)
    DMESG,
    ELEVATORS_AND_PROBE,
    REPO,
    STOP_READERS,
    check_elevators_and_probe,
    guest_image,
    guest_values,
)
from ioaz.testbed import disks, image, trixie, vm

SCRIPT = ELEVATORS_AND_PROBE + r"""
python3 /mnt/ioaz/tests/testbed/elevator_race.py $D 60 > /mnt/results/race.json \
    2>/mnt/results/race.err
echo "@@ race_rc $?"
""" + STOP_READERS + DMESG


def test_elevators_probe_and_a_racing_writer_on_the_7_3_kernel(
        guest_image: image.Image, tmp_path) -> None:  # noqa: F811
    ko = trixie.build_kmod(REPO, image.CACHE, image.SOURCES)
    probes = (ko.parent / "ioaz_probe.h").read_text()
    assert "#define IOAZ_HAVE_INIT_SCHED_EQ 1" in probes, probes
    assert "#define IOAZ_HAVE_HRTIMER_SETUP 1" in probes, probes
    res = vm.run([SCRIPT], vm.Options(kernel=trixie.SERIES_73, disks=disks.parse("model:wd500"),
                                      results=tmp_path, timeout_s=600))
    m = guest_values(res.output)
    assert res.rc == 0, res.output[-3000:]
    check_elevators_and_probe(m, trixie.RELEASE_73, tmp_path)
    assert m["race_rc"] == "0", (tmp_path / "race.err").read_text()[-3000:]
    udev, hostile = (json.loads(x) for x in (tmp_path / "race.json").read_text().splitlines())
    print("actuator against a udev-like writer on 7.3:", udev)
    print("actuator against a back-to-back writer on 7.3:", hostile)
    # The race was real: the kernel refused the racer, or made the actuator try again.
    retried = sum(n for a, n in udev["attempts"].items() if int(a) > 1)
    assert udev["racer_busy"] + retried > 0, udev
    assert udev["failed_count"] == 0, udev       # every refusal absorbed by a retry
    for r in (udev, hostile):
        # a write that failed said why; the disk kept a scheduler and got its original back
        assert all("EBUSY" in f for f in r["failed"]), r
        assert r["restored"] and r["scheduler_after"] in m["offered"].split(), r
