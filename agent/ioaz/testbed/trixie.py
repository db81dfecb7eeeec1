"""What Debian 12 lacks for the newest kernel, from Debian 13's suites on the host's own mirror:
kernel 7.3 from trixie-backports as the guest's third kernel, and a trixie chroot with gcc-14 to
build ioaz's elevators for it (the host's gcc-12 refuses the 7.3 kernel's flags, e.g.
-fmin-function-alignment, so an empty module does not build: kmod/probe.sh's sanity probe).

The kernel's packages are unpacked into the bookworm image (`dpkg -x`: they depend on trixie's
packaging, not on anything the kernel needs at run time), its modules indexed and its initrd made
by the image's own initramfs-tools.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ioaz.testbed.errors import TestbedError, run_logged

RELEASE_73 = "7.3.4+deb13-amd64"
SERIES_73 = "7.3"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# the chroot's packages: a compiler as new as the kernel's, its headers and its block/ sources
CHROOT_PACKAGES = ("gcc-14", "make", "libc6-dev", "libelf-dev", "bc", "kmod", "xz-utils",
                   f"linux-headers-{RELEASE_73}", f"linux-source-{SERIES_73}")


def mirror(sources: Path) -> str:
    """The Debian archive's URI in the host's sources file (its first stanza for bookworm)."""
    text = sources.read_text()
    for stanza in re.split(r"\n\s*\n", text):
        uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
        suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
        if uris and suites and "bookworm" in suites.group(1).split():
            return uris.group(1)
    raise TestbedError(f"{sources}: no stanza with a URI for the bookworm suite")


def sources_list(sources: Path) -> str:
    """One-line-style sources for trixie and trixie-backports on the host's mirror."""
    uri = mirror(sources)
    return "".join(f"deb [signed-by={KEYRING}] {uri} {suite} main\n"
                   for suite in ("trixie", "trixie-backports"))


def download(packages: list[str], dest: Path, sources: Path, log: Path) -> list[Path]:
    """Fetch these trixie(-backports) packages' .deb files into dest (apt's own state stays
    in dest/apt: the host's apt is not touched)."""
    state = dest / "apt"
    for d in ("lists/partial", "archives/partial"):
        (state / d).mkdir(parents=True, exist_ok=True)
    (state / "sources.list").write_text(sources_list(sources))
    opts = [f"-oDir::Etc::SourceList={state / 'sources.list'}", "-oDir::Etc::SourceParts=/dev/null",
            f"-oDir::State::Lists={state / 'lists'}", f"-oDir::Cache={state}",
            f"-oDir::Cache::Archives={state / 'archives'}", "-oAPT::Sandbox::User=root"]
    run_logged(["apt-get", *opts, "update"], "apt-get update (trixie)", log)
    for old in dest.glob("*.deb"):
        old.unlink()
    with open(log, "a") as out:
        r = subprocess.run(["apt-get", *opts, "download", *packages], cwd=dest, stdout=out,
                           stderr=subprocess.STDOUT)
    debs = sorted(dest.glob("*.deb"))
    if r.returncode != 0 or len(debs) != len(packages):
        raise TestbedError(f"could not download {', '.join(packages)} from trixie(-backports) "
                           f"(see {log}); has the registry moved past {RELEASE_73}?")
    return debs


@contextmanager
def _proc_mounted(root: Path) -> Iterator[None]:
    """/proc inside a chroot, for tools that read it (objtool, update-initramfs)."""
    proc = root / "proc"
    proc.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "proc", "proc", str(proc)], check=True)
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(proc)], check=False)


def add_kernel(tree: Path, sources: Path, log: Path) -> None:
    """Kernel 7.3 unpacked into the image tree, with its modules indexed and an initrd made by
    the tree's initramfs-tools: /boot/vmlinuz-REL and /boot/initrd.img-REL, as Debian lays them."""
    work = tree.parent / "kernel-7.3"
    work.mkdir(exist_ok=True)
    # binary: vmlinuz; modules: the modules; base: config, System.map, modules.order/builtin
    debs = download([f"linux-{part}-{RELEASE_73}" for part in ("binary", "modules", "base")],
                    work, sources, log)
    for deb in debs:
        run_logged(["dpkg-deb", "-x", str(deb), str(tree)], f"unpacking {deb.name}", log)
    # trixie keeps them in the modules' directory; bookworm's initramfs-tools looks in /boot
    moddir = tree / "usr" / "lib" / "modules" / RELEASE_73
    for name, boot in (("vmlinuz", "vmlinuz"), ("config", "config"), ("System.map", "System.map")):
        shutil.copy2(moddir / name, tree / "boot" / f"{boot}-{RELEASE_73}")
    run_logged(["chroot", str(tree), "depmod", RELEASE_73], "depmod 7.3", log)
    with _proc_mounted(tree):
        run_logged(["chroot", str(tree), "update-initramfs", "-c", "-k", RELEASE_73],
                   "update-initramfs for 7.3", log)
    shutil.rmtree(work)


def chroot_recipe(sources: Path) -> dict[str, object]:
    return {"format": 1, "suite": "trixie", "packages": list(CHROOT_PACKAGES),
            "mirror": mirror(sources)}


def build_chroot(build: Path, sources: Path) -> Path:
    """The trixie build chroot, made once per recipe under build/trixie-<hash>/root."""
    r = chroot_recipe(sources)
    h = hashlib.sha256(json.dumps(r, sort_keys=True).encode()).hexdigest()[:12]
    final = build / f"trixie-{h}"
    if (final / "root" / "usr" / "src" / f"linux-headers-{RELEASE_73}").exists():
        return final / "root"
    for old in build.glob("trixie-*"):
        shutil.rmtree(old, ignore_errors=True)
    final.mkdir(parents=True)
    log = final / "build.log"
    (final / "sources.list").write_text(sources_list(sources))
    run_logged(["mmdebstrap", "--variant=minbase", "--include=" + ",".join(CHROOT_PACKAGES),
                "trixie", str(final / "root"), str(final / "sources.list")],
               "mmdebstrap (trixie chroot)", log)
    return final / "root"


def build_kmod(repo: Path, build: Path, sources: Path) -> Path:
    """ioaz_sched.ko for kernel 7.3, built in the trixie chroot from the checkout's kmod/
    sources; copied to kmod/build/<release>/, where the guest looks for it. The chroot is the
    machine's (image.CACHE): one checkout builds in it at a time."""
    build.mkdir(parents=True, exist_ok=True)
    with open(build / ".trixie.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_kmod(repo, build, sources)


def _build_kmod(repo: Path, build: Path, sources: Path) -> Path:
    root = build_chroot(build, sources)
    src = root / "kmod"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    for f in (repo / "kmod").iterdir():
        if f.is_file() and (f.suffix in (".c", ".h", ".sh") or f.name in ("Makefile", "Kbuild")):
            shutil.copy2(f, src / f.name)
    log = root.parent / "kmod.log"
    log.write_text("")
    with _proc_mounted(root):
        run_logged(["chroot", str(root), "make", "-C", "/kmod",
                    f"KDIR=/usr/src/linux-headers-{RELEASE_73}"], "kmod build for 7.3", log)
    out = repo / "kmod" / "build" / RELEASE_73
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / "build" / RELEASE_73 / "ioaz_sched.ko", out / "ioaz_sched.ko")
    shutil.copy2(src / "build" / RELEASE_73 / "ioaz_probe.h", out / "ioaz_probe.h")
    return out / "ioaz_sched.ko"
