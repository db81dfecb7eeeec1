"""Boot the guest under qemu (TCG: KVM does not work on these machines) and run one command in it.

The checkout is shared read-only at /mnt/ioaz and a results directory read-write at /mnt/results
(virtio-9p). The guest's ioaz-testbed-run.service runs results/.testbed/run.sh after
multi-user.target and powers off; its output and exit status come back through the share. A guest
that does not power off by the timeout is killed; its serial console log stays in the results.
"""
from __future__ import annotations

import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from ioaz.testbed import disks as disks_mod
from ioaz.testbed import image as image_mod
from ioaz.testbed.errors import TestbedError

GUEST_METRICS_PORT = 19647   # deploy/ioaz.yaml's metrics port, forwarded to the host on request


@dataclass
class Options:
    kernel: str = "6.12"                       # a series of image.kernels()
    disks: list[disks_mod.DiskSpec] = field(default_factory=list)
    memory_mb: int = 2048
    cpus: int = 2
    timeout_s: float = 900.0
    results: Path | None = None                # default: a fresh build/testbed/runs/<time> dir
    metrics_port: int = 0                      # host port (127.0.0.1) for the guest's metrics
    append: str = ""                           # more kernel command line
    path_credit_us: float = 0.0                # model disks: the VM path's cost, not charged


@dataclass
class Result:
    rc: int
    output: str
    results: Path
    console: Path
    boot_s: float | None                       # qemu start to the command's start
    wall_s: float


RUN_SH = """#!/bin/bash
# Written by the host (ioaz.testbed.vm) for one run.
R=/mnt/results/.testbed
echo "$(cut -d' ' -f1 /proc/uptime)" > "$R/started"
export PYTHONPATH=/mnt/ioaz/agent PYTHONDONTWRITEBYTECODE=1 IOAZ_RESULTS=/mnt/results
cd /mnt/ioaz
( {cmd} ) 2>&1 | tee "$R/output" > /dev/console
echo "${{PIPESTATUS[0]}}" > "$R/rc"
sync
"""


def results_dir(given: Path | None) -> Path:
    d = given or image_mod.BUILD / "runs" / time.strftime("%Y%m%d-%H%M%S")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _command_line(cmd: Sequence[str]) -> str:
    # One argument is a shell command line (pipes, &&); several are one command and its arguments.
    if not cmd:
        raise TestbedError("no command to run: ioaz-lab testbed run -- CMD...")
    return cmd[0] if len(cmd) == 1 else shlex.join(cmd)


def qemu_command(img: image_mod.Image, opts: Options, results: Path, run: bool,
                 disk_args: list[str]) -> list[str]:
    rels = image_mod.kernels()
    if opts.kernel not in rels:
        raise TestbedError(f"--kernel {opts.kernel}: the image has {', '.join(sorted(rels))}")
    vmlinuz, initrd = img.kernel(rels[opts.kernel])
    append = f"root=LABEL={image_mod.ROOT_LABEL} rw console=ttyS0 panic=-1 loglevel=4"
    if run:
        # the serial getty's vhangup would cut the command's console output
        append += " ioaz.testbed.run=1 systemd.mask=serial-getty@ttyS0.service"
    if opts.append:
        append += " " + opts.append
    nic = ["-nic", "none"]
    if opts.metrics_port:
        # restrict=on: the guest reaches nothing; only the forwarded port comes in
        nic = ["-nic", f"user,restrict=on,hostfwd=tcp:127.0.0.1:{opts.metrics_port}-:"
                       f"{GUEST_METRICS_PORT}"]
    # One host thread runs both vCPUs: with multi-threaded TCG, the kernel patching a tracepoint
    # site (text_poke_bp, as BPF attaches) while the other vCPU runs through it ended in
    # "Oops: int3" in blk_update_request in 1 of 6 boots.
    return ["qemu-system-x86_64", "-accel", "tcg,thread=single", "-m", str(opts.memory_mb),
            "-smp", str(opts.cpus), "-nographic", "-no-reboot", *nic,
            "-kernel", str(vmlinuz), "-initrd", str(initrd), "-append", append,
            "-drive", f"file={img.disk},if=virtio,format=raw,cache=unsafe,snapshot=on",
            "-virtfs", f"local,path={image_mod.REPO},mount_tag=ioaz,security_model=none,"
                       "readonly=on,id=ioaz",
            "-virtfs", f"local,path={results},mount_tag=results,security_model=none,id=results",
            *disk_args]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BOOT_ATTEMPTS = 2   # a guest whose kernel dies before the command starts is booted once more
# A boot reaches the command in about 25 s under TCG (40 s beside a busy host); one that has not
# in this long hung before anything of the command ran, and is treated like one that died.
BOOT_DEADLINE_S = 240.0

# Where a kernel's own account of its death begins on the console.
_OOPS_MARKS = ("BUG:", "Oops:", "general protection fault", "invalid opcode:", "Kernel panic",
               "WARNING:", "Call Trace:", "blocked for more than", "rcu_sched self-detected stall",
               "rcu: INFO:")


class GuestCrashedBooting(TestbedError):
    """The guest stopped before the command started: nothing of the command ran."""


def run(cmd: Sequence[str], opts: Options, echo: bool = False) -> Result:
    """Boot, run cmd as root after multi-user.target, power off; the command's exit status.

    Under TCG, 1 in a few hundred boots dies in the kernel before systemd reaches the command
    (seen in CI: an oops in PID 1's page fault at 17 s), or hangs there (BOOT_DEADLINE_S).
    Nothing of the command ran then, so the guest is booted once more; the dead boot's console
    log is kept beside the results and named.
    A guest that dies after the command started is an error of the run, never retried.
    """
    results = results_dir(opts.results)
    for attempt in range(1, BOOT_ATTEMPTS + 1):
        try:
            return _boot_and_run(cmd, opts, results, echo)
        except GuestCrashedBooting as e:
            if attempt == BOOT_ATTEMPTS:
                raise
            kept = _keep_console(results, attempt)
            print(f"testbed: the guest died while booting, before the command started (its "
                  f"console log is kept as {kept}); booting again:\n{e}", flush=True)
    raise AssertionError("unreachable")


def _keep_console(results: Path, attempt: int) -> Path:
    kept = results / f"console-boot{attempt}-died.log"
    (results / "console.log").replace(kept)
    return kept


def _boot_and_run(cmd: Sequence[str], opts: Options, results: Path, echo: bool) -> Result:
    img = image_mod.cached()
    if img is None:
        raise TestbedError("no testbed image for this recipe: run `ioaz-lab testbed build` "
                           "(or `make testbed`)")
    ctl = results / ".testbed"
    ctl.mkdir(exist_ok=True)
    for stale in ("rc", "output", "started"):
        (ctl / stale).unlink(missing_ok=True)
    (ctl / "run.sh").write_text(RUN_SH.format(cmd=_command_line(cmd)))
    console = results / "console.log"
    t0 = time.monotonic()
    with ExitStack() as stack:
        qemu = qemu_command(img, opts, results, True,
                            disks_mod.qemu_args(opts.disks, results, stack,
                                                 opts.path_credit_us))
        with open(console, "wb") as con:
            proc = subprocess.Popen(qemu, stdin=subprocess.DEVNULL, stdout=con,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            stack.callback(_kill, proc)
            shown = 0
            boot_s = None
            while proc.poll() is None:
                waited = time.monotonic() - t0
                if boot_s is None and (ctl / "started").exists():
                    boot_s = waited
                if boot_s is None and waited > min(BOOT_DEADLINE_S, opts.timeout_s):
                    _kill(proc)
                    raise GuestCrashedBooting(
                        f"the guest had not started the command {waited:.0f} s after qemu "
                        f"started (a boot takes about 25 s) and was killed; its console log "
                        f"{console} ends:\n{crash_excerpt(console.read_text(errors='replace'))}")
                if waited > opts.timeout_s:
                    _kill(proc)
                    raise TestbedError(hung_report(opts.timeout_s, boot_s, ctl, console))
                if echo:
                    shown = _echo_new(console, shown)
                time.sleep(0.2)
            if echo:
                _echo_new(console, shown)
    wall = time.monotonic() - t0
    rc_file = ctl / "rc"
    output = (ctl / "output").read_text(errors="replace") if (ctl / "output").exists() else ""
    if not rc_file.exists():
        error = TestbedError if (ctl / "started").exists() else GuestCrashedBooting
        raise error(f"the guest stopped (qemu exit {proc.returncode}) before the command "
                    f"finished; its console log {console} says:\n"
                    f"{crash_excerpt(console.read_text(errors='replace'))}")
    return Result(int(rc_file.read_text().strip() or 255), output, results, console,
                  boot_s, wall)


def hung_report(timeout_s: float, boot_s: float | None, ctl: Path, console: Path) -> str:
    """Why a guest was killed at the timeout, with what a reader of CI's log needs to see where
    it stopped: the command's last output and the kernel's first word of trouble, if any."""
    out = ctl / "output"
    tail = out.read_text(errors="replace").splitlines()[-15:] if out.exists() else []
    started = f"the command started {boot_s:.0f} s after qemu" if boot_s is not None else \
        "the command never started"
    return (f"the guest did not finish within {timeout_s:.0f} s and was killed ({started}); "
            f"its console log: {console}\nthe command's last output:\n" + "\n".join(tail) +
            f"\nthe console:\n{crash_excerpt(console.read_text(errors='replace'))}")


def crash_excerpt(console: str, most: int = 60) -> str:
    """The console from the kernel's first word of trouble (up to `most` lines), else its end."""
    lines = console.splitlines()
    for i, line in enumerate(lines):
        if any(mark in line for mark in _OOPS_MARKS):
            return "\n".join(lines[i:i + most])
    return "\n".join(lines[-20:])


def shell(opts: Options) -> int:
    """An interactive guest on this terminal (the serial console logs root in)."""
    img = image_mod.cached()
    if img is None:
        raise TestbedError("no testbed image: run `ioaz-lab testbed build` first")
    results = results_dir(opts.results)
    with ExitStack() as stack:
        qemu = qemu_command(img, opts, results, False,
                            disks_mod.qemu_args(opts.disks, results, stack,
                                                 opts.path_credit_us))
        print(f"results share: {results} (/mnt/results in the guest); quit with Ctrl-A X")
        return subprocess.call(qemu)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def _echo_new(console: Path, shown: int) -> int:
    data = console.read_bytes()
    if len(data) > shown:
        print(data[shown:].decode(errors="replace"), end="", flush=True)
    return len(data)
