"""Calibration of a real block device: fio runs the grid's workloads under every candidate
the kernel offers, ioaz's own probe (BPF, else /proc/diskstats) measures the features, fio's
per-job report gives what each process got.

Safety first (`check_device`): a device that is mounted (or a partition of it), used as swap,
held by another device (dm, md, LVM: holders/), partitioned, or carrying any signature blkid
recognises (filesystem, RAID member, partition table) is refused unless --destructive; a
mounted or held device is refused even then. Without --destructive only read workloads run.
Every scheduler and knob change goes through the actuator with a state file (STATE_DIR, by
default /run/ioaz/calibrate), as ioazd's do: the originals are saved before the first write and
put back when the calibration ends; if the run is killed, the next calibration run restores them
first (the daemon's crash recovery, actuate/recover.py), or `python -m ioaz.actuate.recover
--state-dir STATE_DIR` does.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from ..actuate import Actuator, Realisation, StateStore, recover
from ..actuate.knob_rules import kernel_writeback_throttling, writeback_throttling
from ..actuate.types import QueueSettings
from ..classify.classes import DEFAULT_THRESHOLDS, load_thresholds
from ..classify.types import WindowFeatures
from ..decide import load_policies, resolve
from ..observe import Observer
from ..sim.workloads import fit_layout
from ..sysblock import BlockSysfs
from . import calfs, curve
from .dataset import DatasetWriter, Row
from .grid import FILE_GB, WorkSpec
from .progress import Progress
from .simcal import summarize_windows

DEFAULT_STATE_DIR = "/run/ioaz/calibrate"


class Refused(RuntimeError):
    pass


def device_name(dev: str, sysfs: BlockSysfs) -> str:
    name = os.path.basename(os.path.realpath(dev) if dev.startswith("/") else dev)
    if not sysfs.exists(name):
        raise Refused(f"{dev}: not a whole block device (no {sysfs.device_dir(name)}); "
                      "calibrate the disk, not a partition")
    if not sysfs.has(name, "queue/scheduler"):
        raise Refused(f"{dev}: has no I/O scheduler (queue/scheduler): nothing to calibrate")
    return name


def _dev_of(path: str) -> str | None:
    try:
        return os.path.basename(os.path.realpath(path)) if path.startswith("/dev/") else None
    except OSError:
        return None


def check_device(name: str, destructive: bool, sysfs: BlockSysfs) -> list[str]:
    """Reasons to refuse (empty: go). Raises Refused for what --destructive cannot excuse."""
    parts = sysfs.partitions(name)
    ours = {name, *parts}
    busy = []
    with open("/proc/mounts") as f:
        for line in f:
            src, mnt = line.split()[:2]
            if _dev_of(src) in ours:
                busy.append(f"/dev/{_dev_of(src)} is mounted on {mnt}")
    try:
        with open("/proc/swaps") as f:
            for line in list(f)[1:]:
                if _dev_of(line.split()[0]) in ours:
                    busy.append(f"{line.split()[0]} is in use as swap")
    except OSError:
        pass
    for n in ours:
        holders = sysfs.holders(name, None if n == name else n)
        if holders:
            busy.append(f"/dev/{n} is held by {', '.join(holders)} (device mapper, md, LVM)")
    if busy:
        raise Refused(f"/dev/{name} is in use: {'; '.join(busy)}. Refusing even with "
                      "--destructive")
    data = []
    if parts:
        data.append(f"it has partitions {', '.join(parts)}")
    try:
        out = subprocess.run(["blkid", "-p", "-o", "export", f"/dev/{name}"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            kv = dict(x.split("=", 1) for x in out.stdout.split() if "=" in x)
            what = kv.get("TYPE") or kv.get("PTTYPE") or "a signature"
            data.append(f"blkid finds {what} on it")
    except FileNotFoundError:
        data.append("blkid is not installed, so it cannot be checked for data")
    if data and not destructive:
        raise Refused(f"/dev/{name} holds data ({'; '.join(data)}); calibration writes to it. "
                      "Give --destructive to destroy it")
    return data


def candidates(name: str, sysfs: BlockSysfs) -> dict[str, tuple[str, dict[str, int | str]]]:
    """policy -> (scheduler, knobs): every distinct realisation the kernel offers for the
    policies of policies.yaml, labelled by the policy whose first choice it is (else the
    first policy that falls back to it)."""
    avail = list(sysfs.scheduler(name).available)
    table = load_policies()
    seen: dict[tuple, tuple[str, bool]] = {}
    real: dict[tuple, tuple[str, dict]] = {}
    for pol in table.policies():
        r = resolve(pol, table, avail)
        if r.scheduler is None:
            continue
        key = (r.scheduler, tuple(sorted(r.knobs.items())))
        prev = seen.get(key)
        if prev is None or (prev[1] and not r.fell_back):
            seen[key] = (pol, r.fell_back)
            real[key] = (r.scheduler, dict(r.knobs))
    return {seen[k][0]: real[k] for k in sorted(seen, key=lambda k: seen[k][0])}


def chosen(cands: dict[str, tuple[str, dict[str, int | str]]], want: list[str], name: str,
           sysfs: BlockSysfs) -> dict[str, tuple[str, dict[str, int | str]]]:
    """The candidates --candidates names, or Refused when one of them would not be measured:
    a name policies.yaml does not know, or a policy whose own scheduler the kernel does not
    offer on this device. candidates() drops a policy that falls back to a realisation another
    policy already stands for (vr without ioaz's module is mq-deadline, deadline's), and a
    calibration that silently measured fewer candidates than asked would let derive name
    winners among the rest."""
    table = load_policies()
    unknown = [w for w in want if w not in table.realisations]
    if unknown:
        raise Refused(f"--candidates: {', '.join(unknown)}: no such policy (policies.yaml has "
                      f"{', '.join(sorted(table.realisations))})")
    avail = list(sysfs.scheduler(name).available)
    lacking = [w for w in want if w not in cands and resolve(w, table, avail).fell_back]
    if lacking:
        raise Refused(
            f"--candidates: {', '.join(lacking)}: {name}'s kernel does not offer "
            + ", ".join(sorted({table.realisations[w][0].scheduler for w in lacking}))
            + f" (queue/scheduler lists {' '.join(avail) or 'nothing'}); ioaz's own elevators "
              "come from its module (make -C kmod, then insmod kmod/ioaz_sched.ko)")
    return {k: v for k, v in cands.items() if k in want}


def job_order(works: list[WorkSpec], cands: list[str],
              reps: range) -> list[tuple[WorkSpec, str, int]]:
    """The runs in the order they are made: a workload's repetitions one after the other,
    every candidate once in each, the candidates' order rotated by one from repetition to
    repetition and from workload to workload. A disk and a guest drift over minutes
    (docs/testbed.md: two runs of the same configuration a median 7% apart), so each
    candidate is compared with the others close in time; and the first run after the workload
    changed reads low more often than the others, whichever candidate draws it
    (decision_matrices/kernel/README.md, "The calibration's order"), so that run falls on each
    candidate in turn, not always on the first."""
    jobs: list[tuple[WorkSpec, str, int]] = []
    for i, w in enumerate(works):
        for r in reps:
            k = (i + r) % len(cands) if cands else 0
            jobs.extend((w, cd, r) for cd in cands[k:] + cands[:k])
    return jobs


def recover_leftovers(act: Actuator) -> None:
    """Put back what a killed calibration left changed (the daemon's crash recovery)."""
    for r in recover(actuator=act):
        print(f"{r.device}: restored the settings a killed calibration left (from "
              f"{act.state.path})" if r.ok else
              f"{r.device}: could not restore what a killed calibration left: "
              f"{'; '.join(r.errors)}", file=sys.stderr)
        if not r.ok:
            raise Refused(f"{r.device}: left changed by an earlier calibration and cannot be "
                          f"restored; its originals are in {act.state.path}")


class Candidates:
    """Puts the device under one candidate after another through the actuator.

    Every run starts from the device's originals with its candidate set anew, the same one as
    the run before included: knobs an earlier candidate set never leak into the next one's
    runs, and no run inherits its elevator from the run before: an elevator keeps state from
    one workload's processes to the next (bfq its queues and when it last made one), and the
    bench sets its static contenders, and ioazd its idle policy, anew before the workload.
    (The originals' own scheduler, mq-deadline in the testbed, stays the same instance: the
    kernel keeps an elevator written again.)
    """

    def __init__(self, name: str, act: Actuator, wbt: str | None = None) -> None:
        self.name, self.act, self.wbt = name, act, wbt
        self.current: tuple[str, dict[str, int | str]] | None = None

    def set(self, sched: str, knobs: dict[str, int | str]) -> None:
        if self.current is not None:
            self.restore()
        queue = None
        if self.wbt == "off":
            queue = QueueSettings(wbt_lat_usec=0)
        elif self.wbt == "kernel":
            queue = QueueSettings(wbt_lat_usec=kernel_writeback_throttling(sched))
        res = self.act.apply(self.name, Realisation(sched, dict(knobs)), queue)
        if not res.ok:
            raise RuntimeError(f"cannot set {sched} {knobs} on {self.name}: "
                               f"{'; '.join(res.errors)}")
        self.current = (sched, knobs)

    def restore(self) -> None:
        res = self.act.restore(self.name)
        self.current = None
        if not res.ok:
            raise RuntimeError(f"cannot restore {self.name}: {'; '.join(res.errors)}; its "
                               f"originals stay in {self.act.state.path}")


def wbt_mode(name: str, act: Actuator, sysfs: BlockSysfs, mode: str) -> tuple[str | None, str]:
    """How each candidate's writeback throttling is set (Candidates: "off", "kernel" or None,
    left alone), and what that says, for the log.

    The kernel ties its writeback throttling to the scheduler (bfq turns it off for itself, the
    others keep the 75 ms target on a rotating disk) until someone writes queue/wbt_lat_usec,
    and ioazd writes it: off on a rotating disk under whatever scheduler runs, unless the goal is
    latency (knob_rules.writeback_throttling). Measured with the kernel's tie, a buffered
    writer's result under each candidate would carry a write-back policy ioazd does not run it
    with (docs/testbed.md, "Calibrated with writeback throttling as ioazd runs it"). The tie
    holds only until someone writes queue/wbt_lat_usec, and this calibration's restore does, so
    `kernel` writes the tie with each candidate (knob_rules.kernel_writeback_throttling).
    """
    if not sysfs.has(name, "queue/wbt_lat_usec"):
        return None, "no writeback throttling on this disk"
    if mode == "kernel":
        return "kernel", "writeback throttling as the kernel ties it to each scheduler"
    if writeback_throttling(act.device_info(name), "mean", mode) is None:
        return None, "writeback throttling left as it is (not a rotating disk)"
    return "off", "writeback throttling off under every candidate, as ioazd runs a rotating disk"


def region_bytes(size_bytes: int, span_gb: float = FILE_GB) -> int:
    """Each process's file: span_gb (WorkSpec.span_gb), whole MiB, no larger than
    size_bytes (the device, or a file system's share for each file)."""
    mib = 1 << 20
    return min(round(span_gb * 1e9), size_bytes) // mib * mib


def file_name(w: WorkSpec, i: int) -> str:
    """Process i's file on the file system (WorkSpec.files): a writer's own new file, w.I,
    written from empty and removed after the run; a reader's (or an O_DIRECT mix's) r.I,
    laid out before the runs (lay_out) and kept for the next workload."""
    return f"w.{i}" if w.proc_op(i) == "write" else f"r.{i}"


def laid_out_files(w: WorkSpec) -> list[str]:
    """The files the workload needs to find written before it starts."""
    return [file_name(w, i) for i in range(w.nproc) if w.proc_op(i) != "write"]


def fio_jobfile(w: WorkSpec, dev: str, size_bytes: int, seconds: float,
                directory: str | None = None) -> str:
    """One fio job per process, O_DIRECT (a buffered workload: through the page cache, then
    fsync; a buffered mix: its writers so, its readers too if cached), each on its own file
    (WorkSpec.span_gb: 1 GB unless the workload says) where the workload puts it
    (WorkSpec.file_gb: gap_gb apart), fitted to the device as the simulator fits the same
    workload (sim.workloads.fit_layout). A workload on files (WorkSpec.files) has them in
    `directory`, the file system's mount point, where the file system put them (file_name)."""
    if w.files and directory is None:
        raise ValueError(f"{w.id}: a workload on files needs the file system's directory")
    mib = 1 << 20
    region = region_bytes(size_bytes, w.span_gb)
    starts = fit_layout([w.file_gb(i) for i in range(w.nproc)], [region / 1e9] * w.nproc,
                        size_bytes / 1e9)
    rw = {("seq", "read"): "read", ("seq", "write"): "write", ("seq", "mixed"): "rw",
          ("rand", "read"): "randread", ("rand", "write"): "randwrite",
          ("rand", "mixed"): "randrw"}
    split = w.op == "mixed" and w.buffered       # readers and writers, each its own job
    where = [f"directory={directory}", "fallocate=none"] if w.files else [f"filename={dev}"]
    lines = ["[global]", *where, f"bs={w.size_kb}k", f"runtime={seconds:g}",
             "time_based=1", f"size={region}", "group_reporting=0", "randrepeat=0"]
    if not split:
        lines += [f"direct={int(w.proc_direct(0))}", f"rw={rw[(w.pattern, w.op)]}"]
    if w.op == "mixed" and not split:
        lines.append("rwmixread=70")
    if w.cached:
        # fio's default, said: the device's page cache dropped before the run, so the
        # readers read the disk and not what the last run left in memory
        lines.append("invalidate=1")
    if w.depth > 1 and not w.buffered:
        lines += ["ioengine=libaio", f"iodepth={w.depth}"]
    else:
        lines.append("ioengine=psync")
    # fio counts the fsync in the job's runtime, so a buffered writer's bandwidth is the bytes
    # that reached the disk over the time they took, as dd conv=fdatasync reports; without
    # it, the bytes the page cache took in
    if w.buffered and not split:
        lines.append("end_fsync=1")
    if w.think_ms:
        lines.append(f"thinktime={int(w.think_ms * 1000)}")
    last = (size_bytes - region) // mib * mib
    for i, start in enumerate(starts):
        if w.files:
            # a writer's file goes when its job ends (after its fsync, where it has one), so
            # the next run writes a new file as this one did
            lines += [f"[p{i}]", f"filename={file_name(w, i)}"]
            lines += ["unlink=1"] if w.proc_op(i) == "write" else []
        else:
            lines += [f"[p{i}]", f"offset={min(int(start * 1e9) // mib * mib, last)}"]
        if split:
            lines += [f"rw={rw[(w.pattern, w.proc_op(i))]}", f"direct={int(w.proc_direct(i))}"]
            lines += ["end_fsync=1"] if w.proc_buffered(i) else []
        if w.stagger_ms or w.warmup_s:
            # process i starts i staggers after the first; fio counts ramp_time before its
            # runtime and reports nothing from it, so every job's report covers the same
            # `seconds`, from warmup_s after the last process started
            start = i * w.stagger_ms / 1e3
            lines += [f"startdelay={round(start * 1e6)}us",
                      f"ramp_time={round((ramp_s(w) - start) * 1e6)}us"]
    return "\n".join(lines) + "\n"


def ramp_s(w: WorkSpec) -> float:
    """How long after the first process started the measured seconds begin."""
    return (w.nproc - 1) * w.stagger_ms / 1e3 + w.warmup_s


def fio_outcome(report: dict) -> dict[str, float | None]:
    """Per job (process) MB/s, their min, max, mean, the total, and latency p50/p99 (the
    median of the jobs' completion-latency medians, the worst of their p99s)."""
    per, p50, p99, ios = [], [], [], 0
    for job in report["jobs"]:
        bw = sum(job[d]["bw_bytes"] for d in ("read", "write"))
        per.append(bw / 1e6)
        for d in ("read", "write"):
            pc = (job[d].get("clat_ns") or {}).get("percentile") or {}
            if job[d]["total_ios"] and pc:
                p50.append(pc.get("50.000000", 0) / 1e9)
                p99.append(pc.get("99.000000", 0) / 1e9)
            ios += job[d]["total_ios"]
    p50.sort()
    return {"throughput_mb_s": sum(per), "proc_min_mb_s": min(per), "proc_max_mb_s": max(per),
            "proc_mean_mb_s": sum(per) / len(per),
            "p50_latency_s": p50[len(p50) // 2] if p50 else None,
            "p99_latency_s": max(p99) if p99 else None, "requests": ios}


def run_fio(jobfile: str, timeout: float, what: str) -> tuple[int, str, str]:
    """fio on `jobfile`: its exit code, stdout and stderr. Past `timeout` seconds fio is told
    to stop (SIGINT: it ends its jobs, which would go on using the disk under the next
    candidate), killed with what is left of its process group a minute later, and
    RuntimeError says so."""
    p = subprocess.Popen(["fio", "--output-format=json", jobfile], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        try:
            p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
        # the usual cause: a buffered writer's closing fsync, which writes what the page
        # cache held back at the rate of the writer's pattern (random 4 KiB: minutes)
        raise RuntimeError(f"fio ran {what} past {timeout:g} s and was stopped (a buffered "
                           "writer's closing fsync of many small random writes takes "
                           "minutes); this run is not recorded") from None
    return p.returncode, out, err


def run_one(name: str, source, w: WorkSpec, seconds: float, window_s: float,
            sysfs: BlockSysfs, directory: Path | None = None,
            file_space: int = 0) -> tuple[list[WindowFeatures], dict]:
    """One run of `w`; on files (directory: the mounted file system), each process's file
    `file_space` bytes at most (region_bytes)."""
    dev = f"/dev/{name}"
    size = file_space if directory is not None else sysfs.size_bytes(name) or 0
    if directory is not None:
        region = region_bytes(size, w.span_gb)
        laid = calfs.lay_out(directory, laid_out_files(w), region)
        if laid:
            print(f"laid out {', '.join(laid)} ({region / 1e9:.2f} GB each) in "
                  f"{directory}", file=sys.stderr)
    with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as jf:
        jf.write(fio_jobfile(w, dev, size, seconds,
                             str(directory) if directory is not None else None))
    obs = Observer(source, load_thresholds(DEFAULT_THRESHOLDS), [name], sysfs)
    windows: list[WindowFeatures] = []
    stop = threading.Event()

    def watch() -> None:
        obs.start()
        nxt = time.monotonic() + window_s
        while not stop.is_set():
            stop.wait(max(0.0, nxt - time.monotonic()))
            nxt += window_s
            windows.extend(f for f in obs.step().features if f.device == name)

    th = threading.Thread(target=watch, daemon=True)
    try:
        th.start()
        rc, out, err = run_fio(jf.name, (seconds + 2 * ramp_s(w)) * 4 + 60, f"{w.id} on {dev}")
    finally:
        stop.set()
        th.join()
        os.unlink(jf.name)
    if rc != 0:
        raise RuntimeError(f"fio failed on {dev}: {err.strip()[:300]}")
    report = json.loads(out[out.index("{"):])
    # windows that ended before the measured seconds began are not the workload (fio's
    # report leaves that time out too)
    return windows[int(ramp_s(w) / window_s):], fio_outcome(report)


UDEV_RULES = Path("/run/udev/rules.d")


def _udev_change(name: str) -> None:
    subprocess.run(["udevadm", "control", "--reload"], capture_output=True, check=False)
    subprocess.run(["udevadm", "trigger", "--action=change", "--settle", f"/dev/{name}"],
                   capture_output=True, check=False)


@contextmanager
def udev_unwatched(name: str, rules: Path = UDEV_RULES,
                   control: Path = Path("/run/udev/control")) -> Iterator[str]:
    """udev not watching the disk while it is calibrated. Its watch rule reads a whole disk a
    writer has closed (blkid, in a worker that lives on), and fio opens and closes the disk for
    writing as it sets up: the worker's reads fell inside the run and it joined the class, so
    a 1-process writer read as 3 processes (docs/limits.md). A runtime rule after the watch
    rule takes it off; it is removed, and the watch back, when the calibration ends."""
    if not shutil.which("udevadm") or not control.exists():
        yield "no udev running"
        return
    rule = rules / f"61-ioaz-calibrate-{name}.rules"
    rules.mkdir(parents=True, exist_ok=True)
    rule.write_text("# ioaz-lab calibrate: no udev watch while it writes the disk\n"
                    f'ACTION=="add|change", KERNEL=="{name}", OPTIONS+="nowatch"\n')
    _udev_change(name)
    try:
        yield f"udev's watch off on {name} while it is calibrated"
    finally:
        rule.unlink(missing_ok=True)
        _udev_change(name)


def run(args: argparse.Namespace, works: list[WorkSpec], sysfs: BlockSysfs) -> int:
    from ..probe import open_source
    if os.geteuid() != 0:
        raise Refused("a real device needs root (sysfs scheduler writes, O_DIRECT, BPF)")
    act = Actuator(sysfs, StateStore(getattr(args, "state_dir", None) or DEFAULT_STATE_DIR))
    recover_leftovers(act)
    name = device_name(args.device, sysfs)
    found = check_device(name, args.destructive, sysfs)
    if found:
        print(f"/dev/{name}: {'; '.join(found)}: destroying it (--destructive)",
              file=sys.stderr)
    on_files = [w for w in works if w.files]
    if on_files and len(on_files) != len(works):
        raise Refused(f"{len(on_files)} workloads on files (-f) and {len(works) - len(on_files)} "
                      "on the raw device in one calibration: the raw device's writes would "
                      "destroy the file system; calibrate them apart")
    if not args.destructive:
        skipped = [w for w in works if w.op != "read" or w.files]
        works = [w for w in works if w.op == "read" and not w.files]
        if skipped:
            print(f"without --destructive: read workloads on the raw device only "
                  f"({len(skipped)} with writes or on files skipped)", file=sys.stderr)
    cands = candidates(name, sysfs)
    if args.candidates:
        cands = chosen(cands, [c.strip() for c in args.candidates.split(",") if c.strip()],
                       name, sysfs)
    if not cands or not works:
        raise Refused("nothing to run (no candidates or no workloads)")
    seconds = args.seconds or (1.0 if args.quick else 4.0)
    window_s = 0.25 if seconds <= 2 else 0.5
    out = Path(args.out or f"calibration-{name}.csv")
    cap = (sysfs.size_bytes(name) or 0) // 512
    c = curve.measure(f"/dev/{name}", cap, points=10 if args.quick else 20,
                      samples=3 if args.quick else 9, max_s=5 if args.quick else 60)
    doc = curve.write(c, str(out) + ".curve.json")
    print(f"service-time curve of {name} (timed O_DIRECT reads) -> {out}.curve.json; stream "
          f"tunables {doc['stream_tunables']}", file=sys.stderr)
    # stream runs with the curve just measured, as ioazd will run it on this disk (derive puts
    # the same tunables in the matrices): with the module's built-in curve its wait for a
    # stream's next request is a fraction of this disk's seek and rotation (docs/testbed.md)
    if doc["stream_tunables"]["svc_max_us"] > 0 and cands.get("stream", ("",))[0] == "stream":
        cands["stream"] = ("stream", {**doc["stream_tunables"], **cands["stream"][1]})
    source, why = open_source(args.probe, sysfs=sysfs)
    if why:
        print(f"probe: {why}", file=sys.stderr)
    wbt, wbt_note = wbt_mode(name, act, sysfs, getattr(args, "writeback_throttling", "auto"))
    q = Candidates(name, act, wbt)
    jobs = job_order(works, list(cands), range(args.first_rep, args.first_rep + args.reps))
    bar = Progress(len(jobs), f"calibrate {name}")
    print(f"candidates on {name}: " + ", ".join(
        f"{p}={s}" + ("[" + ",".join(f"{k}={v}" for k, v in kn.items()) + "]" if kn else "")
        for p, (s, kn) in cands.items()) + f"; {wbt_note}", file=sys.stderr)
    state_dir = Path(getattr(args, "state_dir", None) or DEFAULT_STATE_DIR)
    try:
        with DatasetWriter(out) as ds, ExitStack() as stack:
            todo = [j for j in jobs if (j[0].id, j[1], j[2]) not in ds.done]
            if todo:
                print(stack.enter_context(udev_unwatched(name)), file=sys.stderr)
            # the file system is made only when a run is left to make on it (a resumed
            # calibration that is done leaves the disk as it is)
            directory = stack.enter_context(
                calfs.mounted(f"/dev/{name}", state_dir / f"fs-{name}")) \
                if on_files and todo else None
            # a file system holds, at most, every reader's file and one workload's writers'
            space = calfs.free_bytes(directory) // (2 * max(w.nproc for w in works)) \
                if directory is not None else 0
            if todo:
                # The first run after start-up pays for cold caches and a cold probe
                # (docs/testbed.md, "The first kernel calibration", says how much): run it
                # once unrecorded, so that no candidate is judged on it.
                w, cd, _ = todo[0]
                q.set(*cands[cd])
                run_one(name, source, w, seconds, window_s, sysfs, directory, space)
                print(f"warm-up: {w.id} under {cd}, not recorded", file=sys.stderr)
            for w, cd, r in jobs:
                if (w.id, cd, r) in ds.done:
                    bar.skip()
                    continue
                sched, knobs = cands[cd]
                q.set(sched, knobs)
                windows, res = run_one(name, source, w, seconds, window_s, sysfs,
                                       directory, space)
                ds.write(Row(
                    device=name, workload=w.id, workload_class=w.ioaz_class, candidate=cd,
                    policy=cd, scheduler=sched,
                    knobs=";".join(f"{k}={v}" for k, v in knobs.items()), rep=r,
                    seconds=seconds, features=summarize_windows(windows),
                    throughput_mb_s=res["throughput_mb_s"],
                    proc_min_mb_s=res["proc_min_mb_s"], proc_max_mb_s=res["proc_max_mb_s"],
                    proc_mean_mb_s=res["proc_mean_mb_s"],
                    p50_latency_s=res["p50_latency_s"], p99_latency_s=res["p99_latency_s"],
                    requests=int(res["requests"] or 0)))
                bar.step(f"{w.id} {cd}")
    finally:
        source.close()
        q.restore()
    print(f"{out}: {len(jobs)} runs ({bar.skipped} already there), {len(works)} workloads x "
          f"{len(cands)} candidates", file=sys.stderr)
    return 0
