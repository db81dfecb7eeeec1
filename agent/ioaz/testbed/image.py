"""The guest image: a Debian 12 root file system made by mmdebstrap from Debian's packages alone.

The recipe (packages, kernels, the files laid over the tree) is hashed; an image is built once per
recipe under CACHE/<hash>/ and reused until the recipe changes. CACHE is the machine's, not the
checkout's (/var/cache/ioaz/testbed, or $IOAZ_TESTBED_CACHE), as apt's package cache is: a
fresh clone boots the image another checkout built (3 minutes saved in every `make test` of a
fresh clone), and the guests never write to it (qemu's snapshot=on). The image holds Debian's
6.12 kernel (the release whose headers the host has, so ioaz's elevators built on the host load in
the guest), Debian 12's own 6.1 and trixie-backports' 7.3 (trixie.py), each with the initrd
initramfs-tools makes in the chroot.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ioaz.testbed import trixie
from ioaz.testbed.errors import TestbedError, run_logged

REPO = Path(__file__).resolve().parents[3]
BUILD = REPO / "build" / "testbed"       # this checkout's runs and disks
CACHE = Path(os.environ.get("IOAZ_TESTBED_CACHE") or "/var/cache/ioaz/testbed")
# the host's own sources file: its mirror is used, no host name is typed
SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
RELEASE_61 = "6.1.0-56-amd64"
ROOT_LABEL = "ioazroot"
IMAGE_SIZE = "8G"   # sparse; about 2 GB are used

# What the guest runs: ioaz's runtime (as `make install` has it), the probe's libbpf, the workloads
# the real-kernel comparison runs, RAID, BCC with headers for kernels without BTF, and Debian's
# ansible-core to run deploy/ansible's role on the guest itself (its apt module needs python3-apt).
PACKAGES = (
    "systemd", "systemd-sysv", "udev", "dbus", "kmod", "procps", "iproute2", "util-linux", "bash",
    "make", "socat", "e2fsprogs", "python3", "python3-yaml", "python3-prometheus-client", "libbpf1",
    "bpftool", "fio", "mdadm", "postgresql", "postgresql-contrib", "postmark", "dbench", "sysbench",
    "python3-bpfcc", "bpfcc-tools", "initramfs-tools", "ansible-core", "python3-apt",
    "zstd",   # initramfs-tools' default compressor (without it, gzip)
    "gawk", "bsdextrautils",   # blktests' awk and its summary's `column`
)

# Files laid over the tree (path -> text). The 9p shares: the checkout read-only at /mnt/ioaz, the
# results directory read-write at /mnt/results.
OVERLAY = {
    "etc/hostname": "ioaz-testbed\n",
    "etc/fstab": (
        f"LABEL={ROOT_LABEL} / ext4 defaults 0 1\n"
        "ioaz /mnt/ioaz 9p trans=virtio,version=9p2000.L,msize=262144,ro,nofail,"
        "x-systemd.device-timeout=10s 0 0\n"
        "results /mnt/results 9p trans=virtio,version=9p2000.L,msize=262144,nofail,"
        "x-systemd.device-timeout=10s 0 0\n"),
    # Runs the host's command once the system is up, then powers off, whatever the outcome.
    # SuccessAction/FailureAction only work in [Unit]. Type=exec, not oneshot: the boot is over
    # when the command starts (is-system-running says "running", as on a server).
    "etc/systemd/system/ioaz-testbed-run.service": (
        "[Unit]\n"
        "Description=ioaz testbed: run the host's command, then power off\n"
        "After=multi-user.target mnt-results.mount mnt-ioaz.mount\n"
        "Requires=mnt-results.mount\n"
        "ConditionKernelCommandLine=ioaz.testbed.run\n"
        "SuccessAction=poweroff-force\n"
        "FailureAction=poweroff-force\n"
        "[Service]\n"
        "Type=exec\n"
        "TimeoutStartSec=infinity\n"
        "ExecStart=/bin/bash /mnt/results/.testbed/run.sh\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"),
    # `ioaz-lab testbed shell`: the serial console logs root in.
    "etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf": (
        "[Service]\nExecStart=\n"
        "ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 %I $TERM\n"),
    "etc/systemd/system.conf.d/ioaz-testbed.conf": "[Manager]\nDefaultTimeoutStartSec=30s\n",
    # The user-mode NIC (only with --metrics-port, restrict=on: it reaches nothing outside) by DHCP,
    # so the host can scrape the guest's metrics through the forwarded port.
    "etc/systemd/network/20-ioaz-testbed.network": "[Match]\nName=en*\n[Network]\nDHCP=ipv4\n",
}
ENABLED = ("ioaz-testbed-run.service", "systemd-networkd.service")
# Timers and services that would only compete with the experiment (postgresql starts on demand).
MASKED = ("apt-daily.timer", "apt-daily-upgrade.timer", "man-db.timer", "e2scrub_all.timer",
          "fstrim.timer", "e2scrub_reap.service", "systemd-timesyncd.service",
          "systemd-networkd-wait-online.service")
DISABLED = ("postgresql.service",)


def release_612() -> str:
    """The 6.12 release whose headers the host has (make deps: linux-headers-6.12-amd64)."""
    found = [p.name.removeprefix("linux-headers-") for p in Path("/usr/src").glob(
        "linux-headers-6.12.*-amd64") if not p.name.endswith(("-rt-amd64", "-cloud-amd64"))]
    if not found:
        raise TestbedError("no /usr/src/linux-headers-6.12.*-amd64 on the host: `make deps` "
                           "installs linux-headers-6.12-amd64")
    return sorted(found, key=lambda r: [int(x) for x in re.findall(r"\d+", r)[:3]])[-1]


def bookworm_kernels() -> dict[str, str]:
    """The kernels Debian 12 has: installed by mmdebstrap with their headers."""
    return {"6.12": release_612(), "6.1": RELEASE_61}


def build_elevators(repo: Path, release: str, log: Path) -> None:
    """kmod's elevators (ioaz_sched.ko) for the guest kernel `release`, from Debian's headers on
    the host, in kmod/build/<release>/. One build at a time per checkout: two lanes of guests
    (`make test`) may build for one kernel, and both makes would write its objects and
    kmod/ioaz_sched.ko together."""
    lock = repo / "kmod" / "build" / ".make.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        run_logged(["make", "-C", str(repo / "kmod"), f"KDIR=/usr/src/linux-headers-{release}"],
                   f"kmod build for {release}", log)


def kernels() -> dict[str, str]:
    """Kernel series -> release, as the guest has them (7.3 from trixie-backports)."""
    return {**bookworm_kernels(), trixie.SERIES_73: trixie.RELEASE_73}


def recipe() -> dict[str, object]:
    rels = sorted(bookworm_kernels().values())
    pkgs = [*PACKAGES, *(f"linux-image-{r}" for r in rels), *(f"linux-headers-{r}" for r in rels)]
    return {"format": 1, "suite": "bookworm", "packages": pkgs, "overlay": OVERLAY,
            "backports": [trixie.RELEASE_73],
            "enabled": list(ENABLED), "masked": list(MASKED), "disabled": list(DISABLED),
            "root_label": ROOT_LABEL,
            "size": IMAGE_SIZE}


def recipe_hash(r: dict[str, object] | None = None) -> str:
    text = json.dumps(r or recipe(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Image:
    dir: Path

    @property
    def disk(self) -> Path:
        return self.dir / "root.img"

    def kernel(self, release: str) -> tuple[Path, Path]:
        vmlinuz = self.dir / "boot" / f"vmlinuz-{release}"
        initrd = self.dir / "boot" / f"initrd.img-{release}"
        if not (vmlinuz.exists() and initrd.exists()):
            raise TestbedError(f"the image {self.dir} has no kernel {release}")
        return vmlinuz, initrd

    @property
    def manifest(self) -> dict[str, object]:
        return json.loads((self.dir / "manifest.json").read_text())


def cached() -> Image | None:
    d = CACHE / recipe_hash()
    return Image(d) if (d / "manifest.json").exists() else None


@contextmanager
def _lock() -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)   # a second builder waits, then finds the image made
        yield


def _check_host() -> None:
    for tool in ("mmdebstrap", "mkfs.ext4", "chroot", "systemctl"):
        if shutil.which(tool) is None:
            raise TestbedError(f"{tool} is not installed on the host (`make testbed` installs it)")
    if not SOURCES.exists():
        raise TestbedError(f"{SOURCES} is missing: the image is built from the host's own sources")


def build(force: bool = False, log: Path | None = None) -> Image:
    """The image for the current recipe, built if it is not cached."""
    with _lock():
        img = cached()
        if img is not None and not force:
            return img
        _check_host()
        r = recipe()
        h = recipe_hash(r)
        final = CACHE / h
        work = CACHE / f"{h}.tmp"
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)
        work.mkdir(parents=True)
        log = log or work / "build.log"
        tree = work / "tree"
        t0 = time.monotonic()
        include = "--include=" + ",".join(r["packages"])  # type: ignore[arg-type]
        run_logged(["mmdebstrap", "--variant=minbase", include, "bookworm", str(tree),
                    str(SOURCES)], "mmdebstrap", log)
        t_strap = time.monotonic() - t0
        trixie.add_kernel(tree, SOURCES, log)
        for rel, text in OVERLAY.items():
            p = tree / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        for d in ("mnt/ioaz", "mnt/results"):
            (tree / d).mkdir(parents=True, exist_ok=True)
        run_logged(["chroot", str(tree), "passwd", "-d", "root"], "passwd -d root", log)
        run_logged(["systemctl", f"--root={tree}", "enable", *ENABLED], "enabling units", log)
        run_logged(["systemctl", f"--root={tree}", "mask", *MASKED], "masking timers", log)
        run_logged(["systemctl", f"--root={tree}", "disable", *DISABLED], "disabling services", log)
        (work / "boot").mkdir()
        for rel in kernels().values():
            for name in (f"vmlinuz-{rel}", f"initrd.img-{rel}"):
                src = tree / "boot" / name
                if not src.exists():
                    raise TestbedError(f"the chroot has no /boot/{name} (initramfs-tools failed?)")
                shutil.copy2(src, work / "boot" / name)
        run_logged(["mkfs.ext4", "-q", "-F", "-L", ROOT_LABEL, "-d", str(tree),
                    str(work / "root.img"), IMAGE_SIZE], "mkfs.ext4 -d", log)
        used = int(subprocess.run(["du", "-sm", str(tree)], capture_output=True,
                                  text=True).stdout.split()[0])
        shutil.rmtree(tree)
        manifest = {"recipe": r, "hash": h, "built": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                   time.gmtime()),
                    "mmdebstrap_s": round(t_strap, 1),
                    "build_s": round(time.monotonic() - t0, 1), "tree_mb": used,
                    "kernels": kernels()}
        (work / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        work.rename(final)
        # images of older recipes (2 GB each, never booted again) and failed builds' leftovers
        for old in CACHE.iterdir():
            if old != final and re.fullmatch(r"[0-9a-f]{12}(\.tmp)?", old.name):
                shutil.rmtree(old, ignore_errors=True)
        return Image(final)
