"""Boot a Debian kernel in qemu (TCG) with our elevators, null_blk and iotool, run a shell script.

The VM is a busybox initramfs: /init loads configfs, null_blk and ioaz_sched, runs the script
given by the caller and powers off. Results come back over the serial console between
"@@BEGIN name" and "@@END name" lines, so one boot can carry several checks.

Everything downloaded or built lives in tests/kmod/work/ (git-ignored): the kernel package
(apt-get download + dpkg -x), iotool (static), the initramfs images.
"""
from __future__ import annotations

import gzip
import lzma
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORK = HERE / "work"
KMOD = REPO / "kmod"
KREL = "6.1.0-56-amd64"
SERIES_612 = "6.12"


def kernels() -> list[str]:
    """Kernels the VM tests run on: Debian 12's 6.1 and the newest installed 6.12 from
    bookworm-security ("6.12" alone if none is installed: those tests then skip).
    IOAZ_KREL=rel[,rel...] overrides."""
    if os.environ.get("IOAZ_KREL"):
        return os.environ["IOAZ_KREL"].split(",")
    found = sorted((p.name.removeprefix("linux-headers-") for p in
                    Path("/usr/src").glob("linux-headers-6.12.*-amd64")
                    if not p.name.endswith(("-rt-amd64", "-cloud-amd64"))),
                   key=lambda r: [int(x) for x in re.findall(r"\d+", r)[:3]])
    return [KREL, found[-1] if found else SERIES_612]

DMESG_BAD = re.compile(r"WARNING:|BUG:|Oops|lockdep|possible circular|hung_task|"
                       r"rcu_sched self-detected|rcu: INFO|general protection|Kernel panic|"
                       r"Call Trace")
# The one splat the emulator makes on its own: a single-step debug trap in kernel code that no
# kernel code asked for. x86's exc_debug_kernel warns on it and says why ("something is
# wonky ... a known way to trigger this is through QEMU's GDB stub, which leaks #DB into the
# guest"; arch/x86/kernel/traps.c, 6.12). Seen once (2026-11-26, 6.12, multi-threaded TCG) in
# modprobe's page fault during the safety run. Excused only whole and only when no line of
# its trace names ioaz_sched: any splat with our module in it still fails.
EMULATOR_SPLAT = re.compile(r"WARNING: .* at arch/x86/kernel/traps\.c:\d+ exc_debug_kernel")


def splat_blocks(lines: list[str]) -> list[range]:
    """The line ranges of the kernel's splats, from "cut here" to "end trace"."""
    out, start = [], None
    for i, line in enumerate(lines):
        if "[ cut here ]" in line:
            start = i
        elif "---[ end trace" in line and start is not None:
            out.append(range(start, i + 1))
            start = None
    return out


def emulator_splats(lines: list[str]) -> list[range]:
    """The splats that are the emulator's (EMULATOR_SPLAT, no ioaz_sched frame in them)."""
    return [b for b in splat_blocks(lines)
            if any(EMULATOR_SPLAT.search(lines[i]) for i in b)
            and not any("ioaz" in lines[i] and "Modules linked in" not in lines[i]
                        for i in b)]


class Unavailable(Exception):
    """Something the VM needs is missing here; the test skips with this reason."""


def headers_dir(krel: str = KREL) -> Path:
    return Path(f"/usr/src/linux-headers-{krel}")


def check_prerequisites(krel: str = KREL) -> None:
    if krel == SERIES_612:
        raise Unavailable("no linux-headers-6.12.*-amd64 installed (`make deps` installs "
                          "linux-headers-6.12-amd64 and linux-source-6.12)")
    for tool in ("qemu-system-x86_64", "busybox", "cpio", "gcc", "dpkg", "apt-get"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} is not installed (`make deps` installs it)")
    if not (headers_dir(krel) / "Makefile").exists():
        raise Unavailable(f"linux-headers-{krel} is not installed")
    series = ".".join(krel.split(".")[:2]).split("-")[0]
    if not Path(f"/usr/src/linux-source-{series}.tar.xz").exists():
        raise Unavailable(f"linux-source-{series} is not installed")
    if not Path("/usr/lib/x86_64-linux-gnu/libc.a").exists():
        raise Unavailable("libc6-dev (static libc) is not installed")


def kernel_tree(krel: str = KREL) -> Path:
    """The unpacked linux-image package: boot/vmlinuz-* and lib/modules/*."""
    root = WORK / f"image-{krel}"
    if (root / "boot" / f"vmlinuz-{krel}").exists():
        return root
    WORK.mkdir(parents=True, exist_ok=True)
    pkg = f"linux-image-{krel}"
    debs = sorted(WORK.glob(f"{pkg}_*.deb"))
    if not debs:
        r = subprocess.run(["apt-get", "download", pkg], cwd=WORK, capture_output=True,
                           text=True)
        debs = sorted(WORK.glob(f"{pkg}_*.deb"))
        if r.returncode != 0 or not debs:
            raise Unavailable(f"apt-get download {pkg} failed: {r.stderr.strip()[-300:]}")
    tmp = WORK / f"image-{krel}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["dpkg", "-x", str(debs[-1]), str(tmp)], check=True)
    tmp.rename(root)
    return root


def build_module(krel: str = KREL) -> Path:
    r = subprocess.run(["make", "-C", str(KMOD), f"KDIR={headers_dir(krel)}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"kmod build failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    ko = KMOD / "build" / krel / "ioaz_sched.ko"
    if not ko.exists():
        raise RuntimeError(f"kmod build made no {ko}")
    return ko


def build_iotool() -> Path:
    src = HERE / "iotool.c"
    out = WORK / "iotool"
    if out.exists() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-static", "-O2", "-Wall", "-o", str(out), str(src)], check=True)
    return out


def build_probeload() -> Path:
    """probeload.c (the probe's loader, static) against libbpf.a; `make bpf` builds the object."""
    src = HERE / "probeload.c"
    out = WORK / "probeload"
    deps = [src, REPO / "bpf" / "ioaz.h"]
    if out.exists() and all(out.stat().st_mtime >= d.stat().st_mtime for d in deps):
        return out
    for lib in ("libbpf.a", "libelf.a", "libz.a"):
        if not (Path("/usr/lib/x86_64-linux-gnu") / lib).exists():
            raise Unavailable(f"{lib} is not installed (libbpf-dev, libelf-dev, zlib1g-dev)")
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-static", "-O2", "-Wall", "-o", str(out), str(src),
                    "-lbpf", "-lelf", "-lz"], check=True)
    return out


PROBE_OBJ = REPO / "bpf" / "build" / "ioaz.bpf.o"
# Why the probe did not run in a kernel's functional boot (test_probe_vm.py says it), by krel.
PROBE_LEFT_OUT: dict[str, str] = {}


def probe_files() -> tuple[dict[str, bytes], str]:
    """The probe's loader and object for the VM, or why they cannot go in."""
    if not PROBE_OBJ.exists():
        return {}, f"{PROBE_OBJ} is missing: `make bpf` builds it before the tests"
    try:
        loader = build_probeload()
    except Unavailable as e:
        return {}, f"the probe's loader cannot be built here: {e}"
    return {"bin/probeload": loader.read_bytes(), "ioaz.bpf.o": PROBE_OBJ.read_bytes()}, ""


PRELUDE = r"""#!/bin/sh
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mkdir -p /tmp
T=/sys/kernel/tracing
Q=/sys/block/nullb0/queue
S=/sys/kernel/debug/block/nullb0/sched
insmod /lib/modules/$(uname -r)/kernel/fs/configfs/configfs.ko
nullb() {
    rmmod null_blk 2>/dev/null
    insmod /lib/modules/$(uname -r)/kernel/drivers/block/null_blk/null_blk.ko "$@" ||
        echo "null_blk load failed"
    i=0; while [ ! -b /dev/nullb0 ] && [ $i -lt 50 ]; do usleep 100000; i=$((i+1)); done
}
sched() { echo "$1" > $Q/scheduler && { [ "$1" = none ] || echo 128 > $Q/nr_requests; }; }
trace_on() {
    echo 0 > $T/tracing_on; echo 8192 > $T/buffer_size_kb; echo > $T/trace
    echo 1 > $T/events/block/block_rq_issue/enable; echo 1 > $T/tracing_on
}
trace_off() { echo 0 > $T/tracing_on; }
begin() { echo "@@BEGIN $1"; }
end() { echo "@@END $1"; }
echo "@@BOOTED"
"""

EPILOGUE = r"""
begin dmesg; dmesg; end dmesg
echo "@@DONE"
poweroff -f
"""


def make_initramfs(name: str, script: str, files: dict[str, bytes] | None = None,
                   krel: str = KREL) -> Path:
    """An initramfs with busybox, the kernel's configfs/null_blk, our module and iotool."""
    tree = kernel_tree(krel)
    ko = build_module(krel)
    iotool = build_iotool()
    root = WORK / f"root-{name}-{krel}"
    shutil.rmtree(root, ignore_errors=True)
    for d in ("bin", "sbin", "proc", "sys", "dev", "tmp", "etc"):
        (root / d).mkdir(parents=True)
    shutil.copy2(shutil.which("busybox") or "/bin/busybox", root / "bin" / "busybox")
    applets = subprocess.run([str(root / "bin" / "busybox"), "--list"], capture_output=True,
                             text=True, check=True).stdout.split()
    for a in applets:
        if a != "busybox":
            (root / "bin" / a).symlink_to("busybox")
    (root / "sbin" / "modprobe").symlink_to("../bin/busybox")
    mods = root / "lib" / "modules" / krel
    for rel in ("kernel/fs/configfs/configfs.ko",
                "kernel/drivers/block/null_blk/null_blk.ko"):
        dst = mods / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        src = tree / "lib" / "modules" / krel / rel
        if src.exists():
            shutil.copy2(src, dst)
        else:  # 6.12 ships modules xz-compressed; busybox insmod wants them plain
            dst.write_bytes(lzma.decompress(src.with_name(src.name + ".xz").read_bytes()))
    (mods / "extra").mkdir(parents=True)
    shutil.copy2(ko, mods / "extra" / "ioaz_sched.ko")
    # modules.dep and aliases so that writing "vr" to queue/scheduler loads the module
    (mods / "modules.dep").write_text("kernel/fs/configfs/configfs.ko:\n"
                                      "kernel/drivers/block/null_blk/null_blk.ko: "
                                      "kernel/fs/configfs/configfs.ko\n"
                                      "extra/ioaz_sched.ko:\n")
    (mods / "modules.alias").write_text("alias fifo-iosched ioaz_sched\n"
                                        "alias vr-iosched ioaz_sched\n"
                                        "alias stream-iosched ioaz_sched\n")
    shutil.copy2(iotool, root / "bin" / "iotool")
    for rel, data in (files or {}).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    init = root / "init"
    init.write_text(PRELUDE + script + EPILOGUE)
    init.chmod(0o755)
    cpio = subprocess.run("find . | cpio -o -H newc --quiet", shell=True, cwd=root,
                          capture_output=True, check=True).stdout
    out = WORK / f"initrd-{name}-{krel}.gz"
    out.write_bytes(gzip.compress(cpio, compresslevel=1))
    shutil.rmtree(root)
    return out


@dataclass
class Boot:
    console: str
    sections: dict[str, list[str]]
    returncode: int
    krel: str = KREL

    def section(self, name: str) -> list[str]:
        if name not in self.sections:
            tail = "\n".join(self.console.splitlines()[-40:])
            raise AssertionError(f"VM output has no section {name!r}; console tail:\n{tail}")
        return self.sections[name]

    def values(self, name: str) -> dict[str, str]:
        """'key value' lines of a section."""
        out = {}
        for line in self.section(name):
            parts = line.split(None, 1)
            if len(parts) == 2:
                out[parts[0]] = parts[1].strip()
        return out

    def dmesg_problems(self) -> list[str]:
        """The lines of dmesg that say something went wrong, but for the emulator's own."""
        lines = self.sections.get("dmesg", [])
        excused = {i for b in emulator_splats(lines) for i in b}
        return [line for i, line in enumerate(lines)
                if i not in excused and DMESG_BAD.search(line)]

    def dmesg_excused(self) -> list[str]:
        """The WARNING lines of the emulator's own splats (reported, not failed)."""
        lines = self.sections.get("dmesg", [])
        return [lines[b[0] + 1] for b in emulator_splats(lines) if b[0] + 1 < len(lines)]

    @property
    def finished(self) -> bool:
        return "@@DONE" in self.console


def parse_sections(console: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for raw in console.splitlines():
        line = raw.rstrip("\r")
        if line.startswith("@@BEGIN "):
            current = line.split(None, 1)[1].strip()
            sections[current] = []
        elif line.startswith("@@END "):
            current = None
        elif current is not None:
            sections[current].append(line)
    return sections


def boot(initrd: Path, timeout: float, krel: str = KREL, smp: int = 2,
         mem_mb: int = 1024) -> Boot:
    vmlinuz = kernel_tree(krel) / "boot" / f"vmlinuz-{krel}"
    # One host thread for every vCPU, as the testbed's guest (agent/ioaz/testbed/vm.py):
    # multi-threaded TCG let a vCPU run a kernel site another was patching, and a CI boot
    # of 2026-11-27 died of it before /init ("Oops: int3" in enqueue_timer).
    cmd = ["qemu-system-x86_64", "-accel", "tcg,thread=single", "-m", str(mem_mb),
           "-smp", str(smp),
           "-nographic", "-no-reboot", "-nic", "none",
           "-kernel", str(vmlinuz), "-initrd", str(initrd),
           "-append", "console=ttyS0 panic=-1 loglevel=4 nokaslr clocksource=tsc tsc=reliable"]
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=timeout)
        out, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b""), -1
    console = out.decode("utf-8", "replace")
    (WORK / f"console-{initrd.stem}.log").write_text(console)
    return Boot(console, parse_sections(console), rc, krel)


ISSUE_RE = re.compile(r"block_rq_issue: \d+,\d+ (\S+) \d+ \([^)]*\) (\d+) \+ (\d+)")


EVENT_RE = re.compile(r"(\d+\.\d+): block_rq_(insert|issue|complete): \d+,\d+ \S+ (?:\d+ )?"
                      r"\([^)]*\) (\d+) \+ (\d+)")
# how far a request's time on the device may stray from the vector's service_ms: half the 25 ms
# the vectors keep between an arrival and a decision (tests/vectors/README.md)
SERVICE_TOLERANCE_MS = 12.5


def events(lines: list[str]) -> list[tuple[float, str, int, int]]:
    """(time ms, insert|issue|complete, sector, sectors) of each traced block event, in order."""
    out = []
    for line in lines:
        m = EVENT_RE.search(line)
        if m:
            out.append((float(m.group(1)) * 1000.0, m.group(2), int(m.group(3)), int(m.group(4))))
    return out


def clock_error(v: dict, lines: list[str], prime: tuple[int, int]) -> str | None:
    """Why a vector run did not keep the vector's clock, or None when it did.

    A vector reasons about which completions each arrival comes after: a request arriving at
    arrive_ms must reach the scheduler after as many completions (the priming one included) as
    there are multiples of service_ms below arrive_ms, and each request must take service_ms on
    the device. A run on a loaded host that breaks either saw a different sequence of events
    than the vector describes, and its dispatch order says nothing about the elevator. The test
    is the order of events, not absolute times, so a uniform lag does not count against a run."""
    evs = events(lines)
    if not any(kind == "issue" and (s, n) == prime for _, kind, s, n in evs):
        return "the priming request's issue is not in the trace"
    svc = v["service_ms"]
    first: dict[tuple[int, int, str], float] = {}
    for t, kind, s, n in evs:
        first.setdefault((s, n, kind), t)
    completions = sorted(t for t, kind, _, _ in evs if kind == "complete")
    wrong = []
    for r in v["requests"]:
        key = (r["sector"], r["sectors"])
        ins, iss, done = (first.get((*key, k)) for k in ("insert", "issue", "complete"))
        if ins is None or iss is None or done is None:
            return f"{r['id']}: its insert, issue or complete is missing from the trace"
        planned = sum(1 for k in range(1, len(v["requests"]) + 2) if k * svc < r["arrive_ms"])
        seen = sum(1 for t in completions if t < ins)
        if seen != planned:
            wrong.append(f"{r['id']} arrived after {seen} completions, not {planned}")
        if abs(done - iss - svc) > SERVICE_TOLERANCE_MS:
            wrong.append(f"{r['id']} took {done - iss:.1f} ms on the device, not {svc}")
    return "; ".join(wrong) or None


def issued(lines: list[str]) -> list[tuple[int, int, str]]:
    """(sector, sectors, rwbs) of each block_rq_issue trace line, in order."""
    out = []
    for line in lines:
        m = ISSUE_RE.search(line)
        if m:
            out.append((int(m.group(2)), int(m.group(3)), m.group(1)))
    return out
