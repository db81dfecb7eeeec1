"""Shared test fixtures: root checks, real loop devices, fio runs.

Integration tests use real devices: loop devices over files in /dev/shm (RAM, so the numbers
do not depend on the root disk), detached again when the test ends.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def need_root(what: str = "loop devices, BPF and sysfs writes") -> None:
    if os.geteuid() != 0:
        pytest.skip(f"needs root for {what}: run `make test` as root")


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (`make deps` installs it)")
    return path


def need_schedulers(dev: str | None, *names: str) -> None:
    """Skip, naming what the kernel offers, when `dev` (None: the first disk with a
    scheduler, for a test whose devices a tool makes) cannot be given one of `names`: some
    hosts' kernels are built without bfq (6.18.44-fc here, 2026-12-04: none, mq-deadline and
    kyber only), and a test of what ioazd does with bfq has no stand-in."""
    files = [Path(f"/sys/block/{dev}/queue/scheduler")] if dev else \
        sorted(Path("/sys/block").glob("*/queue/scheduler"))
    if not files:
        pytest.skip("no block device with a scheduler to read what the kernel offers")
    dev = dev or files[0].parent.parent.name
    offered = files[0].read_text().replace("[", "").replace("]", "").split()
    missing = [n for n in names if n not in offered]
    if missing:
        pytest.skip(f"the host kernel ({os.uname().release}) offers no {', '.join(missing)} "
                    f"on {dev} (queue/scheduler: {' '.join(offered)})")


# Loop devices keep their queue settings across detach and re-attach: every test starts from,
# and leaves behind, the kernel's defaults.
LOOP_DEFAULTS = (("scheduler", "none"), ("rotational", "0"), ("nr_requests", "128"),
                 ("read_ahead_kb", "128"), ("wbt_lat_usec", "0"))


def reset_queue(name: str) -> None:
    for key, value in LOOP_DEFAULTS:
        try:
            Path(f"/sys/block/{name}/queue/{key}").write_text(value)
        except OSError:
            pass


@pytest.fixture
def make_loop() -> Iterator[Callable[..., str]]:
    """A factory of real loop devices: make_loop(size_mb=512) -> "loopN"."""
    need_root()
    need_tool("losetup")
    made: list[tuple[str, Path]] = []

    def make(size_mb: int = 512) -> str:
        backing = Path("/dev/shm") / f"ioaz-test-{uuid.uuid4().hex[:8]}.img"
        with open(backing, "wb") as f:
            f.truncate(size_mb << 20)
        dev = subprocess.run(["losetup", "-f", "--show", str(backing)], check=True,
                             capture_output=True, text=True).stdout.strip()
        made.append((dev, backing))
        reset_queue(os.path.basename(dev))
        return os.path.basename(dev)

    yield make
    for dev, backing in made:
        reset_queue(os.path.basename(dev))
        subprocess.run(["losetup", "-d", dev], capture_output=True)
        backing.unlink(missing_ok=True)


@pytest.fixture
def unprivileged_user() -> Iterator[str]:
    """A throw-away user in no group but its own (the hostile tester's uid 1001), deleted after
    the test."""
    need_root("adding a user")
    need_tool("useradd")
    user = f"ioazt{uuid.uuid4().hex[:6]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", user],
                   check=True)
    yield user
    subprocess.run(["userdel", user], capture_output=True)


def fio_args(dev: str, *, rw: str, jobs: int = 1, bs: str = "4k", seconds: float = 3,
             size_mb: int = 512, extra: tuple[str, ...] = ()) -> list[str]:
    """fio with O_DIRECT psync on a raw loop device; each job in its own region of the device
    so sequential streams never meet."""
    region = max(size_mb // jobs, 1)
    return ["fio", "--name=ioaz", f"--filename=/dev/{dev}", "--direct=1", "--ioengine=psync",
            f"--rw={rw}", f"--bs={bs}", f"--numjobs={jobs}", f"--size={region}m",
            f"--offset_increment={region}m", f"--runtime={seconds}", "--time_based",
            "--output-format=json", *extra]


def fio_totals(report: str) -> dict[str, float]:
    """Sum fio's JSON report over jobs: ios and bytes by direction, and iops."""
    j = json.loads(report[report.index("{"):])
    out = {"read_ios": 0.0, "write_ios": 0.0, "read_bytes": 0.0, "write_bytes": 0.0,
           "iops": 0.0, "runtime_s": 0.0}
    for job in j["jobs"]:
        for d in ("read", "write"):
            out[f"{d}_ios"] += job[d]["total_ios"]
            out[f"{d}_bytes"] += job[d]["io_bytes"]
            out["iops"] += job[d]["iops"]
        out["runtime_s"] = max(out["runtime_s"], job["job_runtime"] / 1000)
    return out


# who `make deb` is told maintains the packages (DEBFULLNAME, DEBEMAIL)
DEB_MAINTAINER = ("ioaz's test suite & co", "tests@ioaz.invalid")


@pytest.fixture(scope="session")
def debs() -> dict[str, Path]:
    """`make deb` once per session: {"ioaz": the .deb, "ioaz-dkms": the DKMS .deb}."""
    for tool in ("dpkg-buildpackage", "dh"):
        need_tool(tool)
    # built as an operator builds their own: DEBFULLNAME/DEBEMAIL name the maintainer
    env = {**os.environ, "DEBFULLNAME": DEB_MAINTAINER[0], "DEBEMAIL": DEB_MAINTAINER[1]}
    r = subprocess.run(["make", "-s", "-C", str(REPO), "deb"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, f"make deb failed:\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}"
    found = {p.name.split("_")[0]: p for p in (REPO / "build" / "deb").glob("*.deb")}
    assert set(found) == {"ioaz", "ioaz-dkms"}, found
    return found
