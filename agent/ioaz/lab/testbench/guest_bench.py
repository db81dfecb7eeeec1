"""Runs in the testbed guest: every workload under every contender, round after round.

    python3 -m ioaz.lab.testbench.guest_bench /mnt/results/plan.json

The plan (written by testbed/bench.py on the host) names the workloads, the contenders, the rounds
and the run lengths. A contender is a kernel scheduler set statically (through the actuator and
its state file, as ioazd would set it, and put back after the run) or `ioazd` with a config,
started from the kernel's default scheduler (`ioazd-dry@STATIC`: from STATIC, set first). With
`raid` in the plan the raw workloads run on an md array over the first disks instead of one disk,
and a static contender is set on every member. Each round runs the contenders in another order
(rotated, and reversed every other round), so that drift on this shared host falls on all of
them alike.

What each run leaves in /mnt/results/raw/: the workload's own output, the disks' block-layer
stat files before and after, ioazd's log with the seconds since the run started, and one line
in runs.jsonl per run, written as it ends (a run killed half-way keeps what finished). Parsing
is the host's.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ioaz.actuate import Actuator, QueueSettings, Realisation, StateStore, recover
from ioaz.actuate.knob_rules import kernel_writeback_throttling
from ioaz.lab.testbench.guest_trace import BfqTrace, VmSampler, mount_tracefs
from ioaz.lab.testbench.workloads import BY_NAME, Workload, placement
from ioaz.sysblock import BlockSysfs

RESULTS = Path(os.environ.get("IOAZ_RESULTS", "/mnt/results"))
STATE_DIR = Path("/run/ioaz-bench/static")
FS = "/mnt/fs"


# `lateN@STATIC`: the kernel's default for the run's first N s, then STATIC, set as a static
# contender is: what arriving late costs a scheduler by itself. ioazd reaches its first choice
# some seconds in, and a scheduler that builds on a process's history (bfq) may not do as well
# from there as from the start.
# `primedN@STATIC`: the same, but the switch is made by a short-lived process that reads one
# block of the disk right after it, so that its bfq queue is the first bfq creates. bfq marks
# for a merge the queues created within 180 ms of the one it created last and merges them
# 0.6 s later for good, unless that one has no process left (docs/testbed.md, forty-eighth
# run): the running processes' queues, created together at a switch, are then merged with
# nothing. The helper's reader is a child that reads one block after another until the
# switch is written: during the switch it waits at the frozen queue with the running processes.
# It shares the CPU of the process writing the switch, at a higher real-time priority, so that
# when the queue thaws (in that write) it runs before them; every other CPU is held by a
# spinner at real-time priority until the write returns, so that no woken process runs there
# first (docs/testbed.md, fifty-first to fifty-fourth runs: neither a reader spinning on the
# other vCPU nor one woken there was first). Its I/O is set back to best effort: bfq marks no
# queue for a merge with one of another I/O class, and a real-time task's is real-time. It
# exits 0.3 s after the switch, not at once.
LATE = re.compile(r"(late|primed)(\d+)@(.+)")
PRIME = """
import ctypes, json, mmap, os, sys, time
dev, scheduler_file, sched = sys.argv[1], sys.argv[2], sys.argv[3]
IOPRIO_SET = {"x86_64": 251, "aarch64": 30}[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
cpus = sorted(os.sched_getaffinity(0))
flag = mmap.mmap(-1, 16)   # [0]: 2 once written; [1]: helpers ready; [8:16]: blocks read
parent = os.getpid()


def helper(cpu, prio):
    # killed with the writer, whatever ends it (a timeout kills only the writer): a spinner
    # left at real-time priority would hold its CPU for good
    libc.prctl(1, 9)   # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != parent:   # the writer was gone before the prctl
        os._exit(1)
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))


pids = []
for i, cpu in enumerate(cpus):
    pid = os.fork()
    if pid == 0 and i == 0:   # the reader, on the writer's CPU, above it
        fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        helper(cpu, 2)
        # best effort at the level of a process at this nice, as the running processes have
        # by default: a real-time task's I/O is real-time, and bfq marks no queue for a merge
        # with one of another class
        level = (os.getpriority(os.PRIO_PROCESS, 0) + 20) // 5
        if libc.syscall(IOPRIO_SET, 1, 0, 2 << 13 | level):
            sys.exit(f"ioprio_set: {os.strerror(ctypes.get_errno())}")
        flag[1] += 1
        n = 0
        while flag[0] != 2:
            os.preadv(fd, [buf], 0)
            n += 1
        flag[8:16] = n.to_bytes(8, "little")
        # its queue must outlive the burst of queues the switch creates (bfq forgets a freed
        # queue as its last created) and be gone by bfq's check 0.6 s after them
        time.sleep(0.3)
        os._exit(0)
    if pid == 0:   # a spinner holding another CPU
        helper(cpu, 1)
        flag[1] += 1
        while flag[0] != 2:
            pass
        os._exit(0)
    pids.append(pid)
    while flag[1] != i + 1:   # one at a time: [1] is not atomic
        if os.waitpid(pid, os.WNOHANG)[0]:
            flag[0] = 2   # the others stop
            sys.exit("a helper ended before it was ready")
        time.sleep(0.001)
try:
    os.sched_setaffinity(0, {cpus[0]})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    fd = os.open(scheduler_file, os.O_WRONLY)
    t = time.monotonic()
    os.write(fd, sched.encode())
    took = time.monotonic() - t
    os.close(fd)
finally:
    flag[0] = 2   # never leave a helper reading or spinning
    for pid in pids:
        os.waitpid(pid, 0)
print(json.dumps({"write_s": round(took, 3), "reads": int.from_bytes(flag[8:16], "little"),
                  "cpus": len(cpus)}))
"""


def late_of(contender: str) -> tuple[int, str] | None:
    """(N, STATIC) of `lateN@STATIC` and `primedN@STATIC`, None for every other contender."""
    m = LATE.fullmatch(contender)
    return (int(m.group(2)), m.group(3)) if m else None


def prime_switch(sysfs: BlockSysfs, dev: str, scheduler: str) -> dict[str, Any]:
    """Switch `dev` to `scheduler` with a helper that reads blocks of it during the switch and
    one right after, then exits. Its figures: how long the write of the switch took, how many
    blocks the helper read, how many CPUs it held."""
    r = subprocess.run([sys.executable, "-c", PRIME, f"/dev/{dev}",
                        str(sysfs.path(dev, "queue/scheduler")), scheduler],
                       text=True, capture_output=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"switching {dev} to {scheduler} with a primed read failed "
                           f"({r.returncode}): {r.stderr.strip()[-800:]}")
    return dict(json.loads(r.stdout))


# `STATIC+KNOB=VALUE...`: STATIC with its elevator's sysfs knobs set too (queue/iosched/KNOB),
# as an operator would set them by hand: `bfq+low_latency=0`. Static like STATIC itself.
KNOB = re.compile(r"([a-z_]+)=(-?\d+)")


def knobbed(static: str) -> tuple[str, dict[str, int]] | None:
    """(SCHEDULER, knobs) of `SCHEDULER+KNOB=VALUE...`, (SCHEDULER, {}) of a plain name, None
    where a knob is not KNOB=INTEGER."""
    sched, *given = static.split("+")
    found = [KNOB.fullmatch(k) for k in given]
    if not all(found):
        return None
    return sched, {m.group(1): int(m.group(2)) for m in found if m}


def sh(cmd: str, env: dict[str, str] | None = None, check: bool = True,
       timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(["bash", "-c", cmd], env=env, text=True, capture_output=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{cmd[:200]!r} failed ({r.returncode}): {r.stderr.strip()[-800:]}")
    return r


def disk_by_serial(i: int) -> str:
    sh("udevadm settle")
    link = Path(f"/dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ{i:04d}")
    return link.resolve().name


def prepare_fs_disk(dev: str) -> None:
    """An ext4 file system on the whole disk, mounted at FS."""
    # one inode a MiB: the inode tables are written now (128 MiB on 500 GB), not by a
    # background thread during the runs
    sh(f"mkfs.ext4 -q -F -T largefile -E lazy_itable_init=0,lazy_journal_init=0 /dev/{dev}")
    sh(f"mkdir -p {FS} && mount -o noatime /dev/{dev} {FS}")


def make_array(level: str, members: list[str], chunk_kb: int) -> str:
    """An md array over MEMBERS, as `mdadm --create` makes one by default but for the initial
    sync: the disks are new and a resync would read all of them (hours on 500 GB model disks)
    and run beside every contender. Its parity is not valid until written, which reads never
    notice."""
    sh(f"mdadm --create /dev/md0 --run --assume-clean --level={level} "
       f"--raid-devices={len(members)} --chunk={chunk_kb} --metadata=1.2 "
       + " ".join(f"/dev/{d}" for d in members))
    sh("udevadm settle")
    return "md0"


def disk_stats(sysfs: BlockSysfs, devs: list[str]) -> dict[str, list[int]]:
    return {d: [int(x) for x in sysfs.read(d, "stat").split()] for d in devs}


def cpu_busy_s() -> float:
    """The guest's CPU seconds spent on anything but idling (all CPUs, /proc/stat)."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    # user nice system idle iowait irq softirq: waiting for the disk is idle for the CPU
    return (sum(f) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int, tid: int | None = None) -> float:
    """A process's own CPU seconds (user and system, with BPF programs run in its syscalls);
    with `tid`, that one thread's."""
    stat_file = f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat"
    after_name = Path(stat_file).read_text().rsplit(")", 1)[1].split()
    return (int(after_name[11]) + int(after_name[12])) / os.sysconf("SC_CLK_TCK")


DEBUGFS = Path("/sys/kernel/debug")


def sched_counters(dev: str) -> dict[str, int]:
    """The elevator's own counters in debugfs (ioaz's stream: waits, waits_paid, ...), kept
    since the scheduler was set on `dev`; {} where it keeps none or debugfs is not there."""
    if not (DEBUGFS / "block").is_dir():
        subprocess.run(["mount", "-t", "debugfs", "debugfs", str(DEBUGFS)],
                       capture_output=True, check=False)
    out = {}
    d = DEBUGFS / "block" / dev / "sched"
    for f in sorted(d.iterdir()) if d.is_dir() else ():
        try:
            text = f.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            out[f.name] = int(text)
    return out


def quiesce() -> None:
    """Every run starts from the same place: dirty data written, the page cache empty."""
    sh("sync; echo 3 > /proc/sys/vm/drop_caches; sync")


def notify_socket() -> tuple[socket.socket, str]:
    """A datagram socket in the abstract namespace, as systemd gives a Type=notify service,
    and its $NOTIFY_SOCKET ("@name")."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"ioaz-bench-notify-{os.getpid()}-{id(sock)}"
    sock.bind("\0" + name)
    return sock, "@" + name


def wait_ready(sock: socket.socket, proc: subprocess.Popen, timeout_s: float) -> bool:
    """Whether PROC sent READY=1 to SOCK within TIMEOUT_S; False as soon as it exits first."""
    end = time.monotonic() + timeout_s
    sock.settimeout(0.5)
    while time.monotonic() < end and proc.poll() is None:
        try:
            message = sock.recv(4096)
        except TimeoutError:
            continue
        if b"READY=1" in message.split(b"\n"):
            return True
    return False


class Ioazd:
    """ioazd from the shared checkout, its log lines stamped with seconds since start.

    It is up, and the workload may begin, when it sends READY=1 to the notify socket it is
    given, as `systemctl start` of its Type=notify unit waits for: after its first window, with
    the API and the metrics served. Its start's one-time work (the services' imports, about 2 s
    of CPU under TCG) is then not charged to the first workload, as an operator's long-running
    daemon does not pay it; its windows' CPU still is."""

    def __init__(self, config: dict[str, Any], logfile: Path, profile: Path | None = None,
                 verbose: bool = False) -> None:
        cfg = Path("/run/ioaz-bench/ioazd.yaml")
        cfg.parent.mkdir(parents=True, exist_ok=True)   # no static run may have made it yet
        cfg.write_text(json.dumps(config))   # JSON is YAML
        # kept open until ioazd has stopped: its STOPPING=1 must find someone to send to
        self.notify, address = notify_socket()
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            # --verbose: every window's class and verdict, for a mix's switch lags (lag.py).
            # Only there: a line a window costs ioazd about a tenth of its window's CPU in
            # this guest, and an operator runs it without (ioazd-cpu-2026-11-28).
            [sys.executable, *(["-m", "cProfile", "-o", str(profile)] if profile else []),
             "-m", "ioaz.daemon.main", "--config", str(cfg),
             *(["--verbose"] if verbose else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "NOTIFY_SOCKET": address})
        self.out = open(logfile, "w")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not wait_ready(self.notify, self.proc, 120):
            self.stop()
            raise RuntimeError(f"ioazd did not become ready (READY=1) in 120 s; its log: "
                               f"{logfile}")
        self.mark("ready")

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.out.write(f"{time.monotonic() - self.t0:.2f} {line}")
            self.out.flush()

    def mark(self, what: str) -> None:
        # the wall clock too: the mixes stamp their phases' starts with `date` (workloads.py)
        self.out.write(f"{time.monotonic() - self.t0:.2f} @@ {what} wall={time.time():.3f}\n")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.reader.join(10)
        self.out.close()
        self.notify.close()
        return rc


def order(contenders: list[str], rnd: int, wl_index: int) -> list[str]:
    """Who goes first moves on by one every round (and workload); every other round the rest
    follow in the opposite direction, so nobody always runs right after the same neighbour."""
    n = len(contenders)
    k = (rnd + wl_index) % n
    step = -1 if rnd % 2 else 1
    return [contenders[(k + step * i) % n] for i in range(n)]


def main(plan_file: str) -> int:
    plan = json.loads(Path(plan_file).read_text())
    raw = RESULTS / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    if plan.get("bfq_module"):   # before anything loads the kernel's own
        sh(f"if [ -d /sys/module/bfq ]; then rmmod bfq; fi; "
           f"insmod /mnt/ioaz/{plan['bfq_module']}")
    sh("insmod /mnt/ioaz/kmod/build/$(uname -r)/ioaz_sched.ko 2>/dev/null; "
       "modprobe -q -a bfq kyber-iosched", check=False)
    if "bfq" in (plan.get("trace") or ()):
        mount_tracefs()
    sysfs = BlockSysfs()
    act = Actuator(sysfs, StateStore(STATE_DIR))
    for r in recover(actuator=act):
        print(f"restored {r.device} from an earlier run: {r.restored}", flush=True)
    raid = plan.get("raid")
    members = [disk_by_serial(i) for i in range(plan.get("members", 1) if raid else 1)]
    fsdev = disk_by_serial(len(members))
    devs = [*members, fsdev]   # the disks a contender sets; an md array has no scheduler
    for d in devs:
        if plan.get("queue_depth"):
            sysfs.write(d, "device/queue_depth", str(plan["queue_depth"]))
    rawdev = make_array(raid, members, plan["chunk_kb"]) if raid else members[0]
    workloads: list[Workload] = [BY_NAME[n] for n in plan["workloads"]]
    if any(w.disk == "fs" or w.setup for w in workloads):
        prepare_fs_disk(fsdev)
    env = {**os.environ, "RAW": rawdev, "FS_DEV": fsdev, "FS": FS,
           "RT": f"{plan['runtime_s']:g}", "PHASE": f"{plan['phase_s']:g}",
           **placement(int(sysfs.read(rawdev, "size")) * 512)}
    for setup in dict.fromkeys(w.setup for w in workloads if w.setup):
        t = time.monotonic()
        sh(setup, env=env)
        print(f"setup {time.monotonic() - t:.0f} s: {setup[:70]}", flush=True)
    info = {"kernel": os.uname().release, "raw": rawdev, "fs": fsdev,
            "bfq_module": plan.get("bfq_module"),
            "bfq_srcversion": sh("cat /sys/module/bfq/srcversion", check=False).stdout.strip(),
            "raid": raid, "members": members,
            "array": sh(f"mdadm --detail /dev/{rawdev}").stdout if raid else None,
            "default_scheduler": {d: sysfs.scheduler(d).active for d in devs},
            "available": {d: sysfs.scheduler(d).available for d in devs},
            "queue_depth": {d: sysfs.queue_depth(d) for d in devs},
            "nr_requests": {d: sysfs.read(d, "queue/nr_requests") for d in devs},
            "read_ahead_kb": {d: sysfs.read(d, "queue/read_ahead_kb") for d in devs},
            "mem_kb": int(Path("/proc/meminfo").read_text().split()[1])}
    (RESULTS / "guest.json").write_text(json.dumps(info, indent=1))
    runs = open(RESULTS / "runs.jsonl", "a")
    for rnd in range(plan["rounds"]):
        for wi, w in enumerate(workloads):
            for c in order(plan["contenders"], rnd, wi):
                runs.write(json.dumps(run_one(plan, w, c, rnd, env, act, devs, raw,
                                              rawdev)) + "\n")
                runs.flush()
    return 0


def run_one(plan: dict[str, Any], w: Workload, contender: str, rnd: int,
            env: dict[str, str], act: Actuator, devs: list[str], raw: Path,
            rawdev: str) -> dict[str, Any]:
    tag = f"{w.name}.{contender}.{rnd}"
    out = raw / f"{tag}.out"
    quiesce()
    daemon = None
    # a static contender, or the one under `ioazd-dry@STATIC`, which ioazd then only observes
    static = plan.get("dry_over", {}).get(contender) or (
        contender.partition("@")[2] if "@" in contender else
        None if contender.startswith("ioazd") else contender)
    late = late_of(contender)

    def set_static() -> None:
        assert static is not None
        sched, knobs = plan.get("tuned", {}).get(static) or knobbed(static) or (static, {})
        for d in devs:
            res = act.apply(d, Realisation(sched, dict(knobs)),
                            QueueSettings(wbt_lat_usec=kernel_writeback_throttling(sched)))
            if not res.ok:
                raise RuntimeError(f"{d}: switching to {static}: {'; '.join(res.errors)}")

    switched: dict[str, Any] = {}
    traces = set(plan.get("trace") or ())
    disk = env["FS_DEV"] if w.disk == "fs" else env["RAW"]
    bfq_trace = BfqTrace(act.sysfs, disk, plan.get("trace_bfq_s", 20),
                         raw / f"{tag}.bfq.txt.gz") if "bfq" in traces else None

    def set_late() -> None:
        t = time.monotonic()
        try:
            if bfq_trace:
                bfq_trace.start()   # before the switch: bfq's first queues are what it shows
            if contender.startswith("primed"):
                # the originals saved first (the default's own throttling written), since the
                # helper's switch is not the actuator's
                now = act.sysfs.scheduler(disk).active
                res = act.apply(disk, Realisation(now),
                                QueueSettings(wbt_lat_usec=kernel_writeback_throttling(now)))
                if not res.ok:
                    raise RuntimeError(f"{disk}: {'; '.join(res.errors)}")
                sched = (knobbed(static or "") or (static, {}))[0]
                switched["primed"] = prime_switch(act.sysfs, disk, str(sched))
            set_static()
            switched.update(at_s=round(t - start, 2), took_s=round(time.monotonic() - t, 3))
        except (RuntimeError, OSError) as e:
            switched["error"] = str(e)

    if static and not late:
        set_static()
    if contender.startswith("ioazd"):
        daemon = Ioazd(plan["ioazd"][contender], raw / f"{tag}.ioazd.log",
                       raw / f"{tag}.ioazd.prof" if plan.get("profile") else None,
                       verbose=bool(w.phases or plan.get("verbose")))
    stat_devs = list(dict.fromkeys([*devs, rawdev]))
    wbt = {d: act.sysfs.read(d, "queue/wbt_lat_usec") for d in devs
           if act.sysfs.has(d, "queue/wbt_lat_usec")}
    before = disk_stats(act.sysfs, stat_devs)
    busy0 = cpu_busy_s()
    daemon0 = process_cpu_s(daemon.proc.pid) if daemon else 0.0
    # its main thread runs the windows; the others are the probe's sampler, the API and metrics
    pid = daemon.proc.pid if daemon else 0
    window0 = process_cpu_s(pid, pid) if daemon else 0.0
    sampler = VmSampler(act.sysfs, disk, raw / f"{tag}.vm.tsv") if "vm" in traces else None
    trace_at = plan.get("trace_bfq_at", 0) if bfq_trace and not late else 0
    if bfq_trace and not late and not trace_at:
        bfq_trace.start()
    start = time.monotonic()
    trace_timer = threading.Timer(trace_at, bfq_trace.start) if bfq_trace and trace_at else None
    if trace_timer:
        trace_timer.start()
    if daemon:
        daemon.mark("workload start")
    timer = threading.Timer(late[0], set_late) if late else None
    if timer:
        timer.start()
    r = sh(w.script, env={**env, "OUT": str(out)}, check=False,
           timeout=plan["runtime_s"] * 10 + plan["phase_s"] * 40 + 600)
    wall = time.monotonic() - start
    if sampler:
        sampler.stop()
    if trace_timer:
        trace_timer.cancel()
    if bfq_trace:
        bfq_trace.cancel()
    if timer:
        timer.cancel()
        timer.join()
        if "error" in switched:
            raise RuntimeError(f"{contender}: {switched['error']}")
    if daemon:
        daemon.mark("workload end")
    after = disk_stats(act.sysfs, stat_devs)
    # what ioazd had chosen for each disk when the workload ended (its stop puts them back)
    chosen = {d: act.sysfs.scheduler(d).active for d in devs} if daemon else None
    counters = {d: c for d in stat_devs if (c := sched_counters(d))}
    cpu = {"busy_s": round(cpu_busy_s() - busy0, 2), "cpus": os.cpu_count(),
           "ioazd_s": round(process_cpu_s(pid) - daemon0, 2) if daemon else None,
           "ioazd_window_thread_s": round(process_cpu_s(pid, pid) - window0, 2)
           if daemon else None}
    daemon_rc = daemon.stop() if daemon else None
    for d in devs if static else ():
        back = act.restore(d)
        if not back.ok:
            raise RuntimeError(f"{d}: restoring after {contender}: {'; '.join(back.errors)}")
    line = {"workload": w.name, "contender": contender, "round": rnd, "rc": r.returncode,
            "wall_s": round(wall, 2), "out": out.name, "stat_before": before,
            "stat_after": after, "cpu": cpu, "stderr": r.stderr[-500:], "ioazd_rc": daemon_rc,
            "scheduler_at_end": chosen, "sched_counters": counters, "wbt_at_start": wbt,
            "scheduler_after": {d: act.sysfs.scheduler(d).active for d in devs},
            "late_switch": switched or None}
    print(f"{tag}: rc {r.returncode}, {wall:.1f} s", flush=True)
    return line


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1]))
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        print(f"guest_bench: {e}", file=sys.stderr)
        sys.exit(1)
