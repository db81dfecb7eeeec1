"""`ioaz-lab bench testbed`: ioazd against every static scheduler on model hard disks in the
testbed guest, with real programs, on the real kernel; a Markdown report with plots.

One boot runs everything (guest_bench.py): the workloads of workloads.py, each under every
contender, for a number of rounds with the order of the contenders changed every round. The
kernel's default (mq-deadline on a SATA disk), the bfq-for-rotational rule (Fedora, openSUSE) and
kyber-everywhere (CachyOS) are static contenders here, each the same as its scheduler's row: on
a single rotating disk the rules have nothing else to choose.
"""
from __future__ import annotations

import gzip
import json
import re
import shutil
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ioaz.decide import load_matrix
from ioaz.lab.testbench import host_load, lag, measure
from ioaz.lab.testbench.guest_bench import knobbed, late_of
from ioaz.lab.testbench.workloads import BY_NAME, Workload
from ioaz.located import load_file
from ioaz.testbed import diskcheck, disks, vm
from ioaz.testbed.errors import TestbedError

REPO = Path(__file__).resolve().parents[4]
STATIC = ("none", "mq-deadline", "bfq", "kyber", "fifo", "vr", "stream")
RULES = {"kernel default": "mq-deadline", "bfq rule": "bfq", "kyber everywhere": "kyber"}
GOALS = ("min", "max", "mean", "throughput", "latency")   # daemon config's decide.goal
GUEST_STATE = "/run/ioaz-bench/ioazd"
DRY = "ioazd-dry"
# `ioazd-dry@STATIC`: the control over another scheduler: STATIC set by hand, and ioazd observing
# it in dry run, so that its run against STATIC's is what observing costs under that scheduler.
DRY_OVER = DRY + "@"
KERNEL = "ioazd-kernel"
# ioazd-kernel with trials in the cells no measurement chose (decide trial_unclear)
KERNEL_UNCLEAR = KERNEL + "-unclear"
# and with them in the measured cells too (trial_measured)
KERNEL_TRIALS = KERNEL + "-trials"
# and each trial in ROUNDS rounds, in turns with the cell's policy (decide trial_rounds)
KERNEL_ROUNDS = KERNEL + "-rounds"
ROUNDS = 4
# and with the model trained on that calibration deciding (goal mean), the matrices below its
# confidence (classifier: model); ioazd runs its portable form, so the guest needs no
# scikit-learn
KERNEL_MODEL = KERNEL + "-model"
# and with the trials of ioazd-kernel-trials on the model's verdicts too
KERNEL_MODEL_TRIALS = KERNEL_MODEL + "-trials"
MODEL_CONTENDERS = (KERNEL_MODEL, KERNEL_MODEL_TRIALS)
# Suffixes an ioazd contender can carry, each the same contender with one setting changed, so
# that the setting's worth is measured beside it in one run. RESTLESS: the window never
# lengthened at rest (rest_window_s 0, daemon/rest.py): what the rest saves. WBT_KERNEL: the
# kernel's writeback throttling left as the scheduler sets it (writeback_throttling kernel):
# what turning it off gains or costs, apart from the scheduler ioazd chose.
# NO_IDLE: no idle policy (decide idle_policy null), so ioazd starts from the kernel's
# default as it did before decide/idle.py: what starting the workload under bfq is worth.
# MINUTE: one window a minute, the probe counting every request as at any rate under its
# sampling threshold: on `ioazd-dry@STATIC-minute`, what the probe's programs in the I/O
# path cost apart from ioazd's windows (the control without it: `ioazd-dry@STATIC`).
# NO_MEMBER: the class's process count without membership (process_membership_s 0,
# classify/horizon.py), the horizon's count alone: what membership gains or costs. Its
# thresholds file is the shipped one with that line changed, written beside plan.json.
# NEXT: the matrices given with --next-matrices (derived, not yet shipped) in place of the
# contender's, which the guest reads from the results: what shipping them would change.
RESTLESS = "-restless"
WBT_KERNEL = "-wbt-kernel"
NO_IDLE = "-noidle"
MINUTE = "-minute"
NO_MEMBER = "-nomember"
NO_MEMBER_THRESHOLDS = "thresholds-nomember.yaml"
NEXT = "-next"
NEXT_DIR = "next-matrices"   # in the results: one GOAL.yaml a goal
VARIANTS: dict[str, dict[str, Any]] = {RESTLESS: {"rest_window_s": 0},
                                       WBT_KERNEL: {"writeback_throttling": "kernel"},
                                       NO_IDLE: {"decide": {"idle_policy": None}},
                                       MINUTE: {"window_s": 60, "rest_window_s": 0},
                                       NO_MEMBER: {"thresholds": "/mnt/results/"
                                                                 + NO_MEMBER_THRESHOLDS},
                                       NEXT: {"decide": {"matrix_rules": [
                                           {"match": {"rotational": True},
                                            "matrices": {g: f"/mnt/results/{NEXT_DIR}/{g}.yaml"
                                                         for g in GOALS}}]}}}
KERNEL_CONTENDERS = (KERNEL, KERNEL_UNCLEAR, KERNEL_TRIALS, KERNEL_ROUNDS, *MODEL_CONTENDERS)
# Static stream with the service-time curve calibrated on this kernel's disk (the tunables of
# the kernel matrices, which ioazd-kernel writes with stream): what an operator who ran the
# calibration and set the knobs by hand would have. Plain `stream` is the module's defaults.
STREAM_TUNED = "stream-tuned"
STATIC_CONTENDERS = (*STATIC, STREAM_TUNED)   # every contender that is set once and left
# The matrices calibrated on the testbed's kernel (ioaz-lab calibrate --device in the guest,
# then derive; decision_matrices/kernel/README.md has the commands), per disk model, queue
# depth and goal: ioazd-kernel takes the ones measured on the bench's model disk at the depth
# the bench runs it at.
KERNEL_MATRICES = "kernel/testbed-{model}-qd{depth}-{goal}.yaml"
KERNEL_MODEL_FILE = "kernel/testbed-{model}-qd{depth}-mean.model.json"   # ioaz-lab train's
GUEST_REPO = "/mnt/ioaz"                 # the checkout, as the guest mounts it
AHCI_DEPTH = 32                          # the guest's disks' depth when the plan sets none


TRACES = ("vm", "bfq")   # guest_trace.py's diagnostics


@dataclass
class Plan:
    workloads: list[Workload]
    contenders: list[str] = field(default_factory=lambda: [*STATIC, "ioazd"])
    rounds: int = 3
    runtime_s: float = 20.0
    phase_s: float = 20.0
    model: str = "wd500"
    kernel: str = "6.12"
    queue_depth: int | None = None       # None: the kernel's (32 on AHCI)
    path_credit_us: float | None = None  # None: measured in a first boot
    raid: str | None = None              # "0" | "5" | "10": the raw workloads on an md array
    members: int = 4                     # its disks
    chunk_kb: int = 512                  # its chunk (mdadm's default)
    profile: bool = False                # ioazd under cProfile, a .prof file a run
    verbose: bool = False                # ioazd --verbose on every workload, not only mixes
    cpus: int = 2                        # the guest's vCPUs (all on one host thread)
    trace: tuple[str, ...] = ()          # guest_trace's diagnostics: "vm", "bfq"
    trace_bfq_s: float = 20.0            # how long bfq's messages are kept from its setting
    trace_bfq_at: float = 0.0            # a static contender's trace starts this far in
    bfq_module: str | None = None        # a bfq.ko (relative to the checkout) loaded instead
    next_matrices: str | None = None     # PREFIX of PREFIX-GOAL.yaml, for the -next contenders

    def disk_spec(self) -> str:
        """The raw disk (or the array's members) first, then the file system's disk."""
        n = self.members if self.raid else 1
        return ",".join([f"model:{self.model}"] * (n + 1))

    def seconds(self) -> float:
        """A rough length of the guest's part, for the timeout and for the operator."""
        per = sum(len(w.phases) * self.phase_s if w.phases else
                  (30.0 if w.parser == "dd" else self.runtime_s) for w in self.workloads)
        return self.rounds * len(self.contenders) * (per + 12 * len(self.workloads))


def ioazd_config(goal: str | None) -> dict[str, Any]:
    """The shipped config (deploy/ioaz.yaml), with the guest's paths and disks."""
    cfg = load_file(REPO / "deploy" / "ioaz.yaml").data
    cfg.update(devices={"include": ["sd*"], "exclude": []}, probe="bpf",
               state_dir=GUEST_STATE, socket=f"{GUEST_STATE}/ioaz.sock",
               metrics={"listen": None},
               thresholds="/mnt/ioaz/decision_matrices/thresholds.yaml")
    cfg["decide"]["matrix_dir"] = "/mnt/ioaz/decision_matrices"
    if goal:
        cfg["decide"]["goal"] = goal
    return cfg


def kernel_matrices(queue_depth: int | None, model: str = "wd500") -> dict[str, str]:
    """The calibrated matrix of each goal for a bench on this model disk at this queue depth
    (None: AHCI's)."""
    depth = queue_depth or AHCI_DEPTH
    return {g: KERNEL_MATRICES.format(model=model, depth=depth, goal=g) for g in GOALS}


def next_matrix_files(prefix: str) -> dict[str, Path]:
    """--next-matrices PREFIX: the matrix of each goal, PREFIX-GOAL.yaml (what derive's
    --out-dir and --name write)."""
    return {g: Path(f"{prefix}-{g}.yaml") for g in GOALS}


def kernel_matrix_files(queue_depth: int | None = None, model: str = "wd500") -> list[Path]:
    return [REPO / "decision_matrices" / f
            for f in kernel_matrices(queue_depth, model).values()]


def kernel_model_file(queue_depth: int | None, model: str = "wd500") -> Path:
    return REPO / "decision_matrices" / KERNEL_MODEL_FILE.format(
        model=model, depth=queue_depth or AHCI_DEPTH)


def dry_base(contender: str) -> str | None:
    """The static contender under `ioazd-dry@STATIC` (and its variants), None for every
    other contender."""
    if not contender.startswith(DRY_OVER):
        return None
    return _without_variants(contender.removeprefix(DRY_OVER))[0]


def no_member_thresholds() -> str:
    """The shipped thresholds.yaml with process_membership_s 0 (NO_MEMBER)."""
    text = (REPO / "decision_matrices" / "thresholds.yaml").read_text()
    out, n = re.subn(r"^process_membership_s:.*$", "process_membership_s: 0", text,
                     flags=re.MULTILINE)
    if n != 1:
        raise ValueError("decision_matrices/thresholds.yaml: expected one process_membership_s "
                         f"line for --contenders ...{NO_MEMBER}, found {n}")
    return out


def variant_of(contender: str) -> tuple[str, dict[str, Any]] | None:
    """The ioazd contender under `CONTENDER-SUFFIX...` (VARIANTS, any of them, in any order)
    and the settings its suffixes change; None for a contender without one."""
    if not contender.startswith("ioazd"):
        return None
    base, changed = _without_variants(contender)
    return (base, changed) if changed else None


def _without_variants(name: str) -> tuple[str, dict[str, Any]]:
    base, changed = name, dict[str, Any]()
    while found := next((s for s in VARIANTS if base.endswith(s)), None):
        base = base.removesuffix(found)
        more = VARIANTS[found]
        changed.update({**more, "decide": {**changed.get("decide", {}),
                                           **more.get("decide", {})}}
                       if "decide" in more else more)
    return base, changed


def is_static(contender: str) -> bool:
    """Set before the run and left: a scheduler, stream-tuned, or `STATIC+KNOB=VALUE`
    (guest_bench.knobbed), which an operator can set by hand as well."""
    k = knobbed(contender)
    return contender in STATIC_CONTENDERS or (k is not None and k[0] in STATIC)


def scheduler_of(static: str) -> str:
    """The scheduler a static contender sets: `bfq+low_latency=0` sets bfq."""
    return static.partition("+")[0]


def is_dry(contender: str) -> bool:
    return contender == DRY or dry_base(contender) is not None


# The elevators of kmod/ (ioaz_sched.ko), which the guest loads from kmod/build/<release>/.
ELEVATORS = ("fifo", "vr", "stream")
KMOD_SOURCES = ("Kbuild", "ioaz_sched.h", "ioaz_core.c", "ioaz_fifo.c", "ioaz_vr.c",
                "ioaz_stream.h", "ioaz_stream.c", "ioaz_stream_detect.c")


def needs_elevators(contenders: list[str]) -> bool:
    """A contender sets one of kmod's elevators, or is ioazd, which may choose one."""
    kmod = (*ELEVATORS, STREAM_TUNED)
    return any(scheduler_of(c) in kmod or scheduler_of(dry_base(c) or "") in kmod
               or scheduler_of((late_of(c) or (0, ""))[1]) in kmod or c.startswith("ioazd")
               for c in contenders)


def elevator_module_problem(release: str, repo: Path = REPO) -> str | None:
    """Why the guest of kernel `release` would not have this checkout's elevators, else None.
    Found before booting: in the guest it shows only as a contender failing after the boot."""
    ko = repo / "kmod" / "build" / release / "ioaz_sched.ko"
    if not ko.is_file():
        return f"{ko} is missing"
    newer = [n for n in KMOD_SOURCES
             if (repo / "kmod" / n).stat().st_mtime > ko.stat().st_mtime]
    if newer:
        return f"{ko} is older than kmod/{newer[0]}"
    return None


def tuned_statics(contenders: list[str], queue_depth: int | None = None,
                  model: str = "wd500") -> dict[str, Any]:
    """Static contenders with knobs: name -> [scheduler, knobs] (STREAM_TUNED)."""
    if STREAM_TUNED not in contenders and STREAM_TUNED not in map(dry_base, contenders):
        return {}
    mean = REPO / "decision_matrices" / kernel_matrices(queue_depth, model)["mean"]
    knobs = load_matrix(mean).tunables.get("stream")
    if not knobs:
        raise ValueError(f"--contenders {STREAM_TUNED}: {mean} has no stream tunables "
                         "(decision_matrices/kernel/README.md says how they are made)")
    return {STREAM_TUNED: ["stream", knobs]}


def contender_configs(contenders: list[str], queue_depth: int | None = None,
                      model: str = "wd500") -> dict[str, Any]:
    """ioazd's contenders: `ioazd` (the shipped config), `ioazd-GOAL`, `ioazd-kernel` (the
    shipped config with the matrices calibrated on this kernel's disk of the bench's model, at
    the bench's depth),
    `ioazd-kernel-unclear` (the same, trying other policies where a cell is unclear),
    `ioazd-kernel-trials` (and in the measured cells too), `ioazd-kernel-rounds` (those trials
    in ROUNDS rounds), `ioazd-kernel-model` (the model over the matrices, with the default
    trials: the matrix's choice where the model chose another, a near-tie runner-up) and
    `ioazd-kernel-model-trials` (with those of ioazd-kernel-trials too),
    and `ioazd-dry`, the control: ioazd observing and deciding but never writing (dry_run), so
    that its run against the kernel default's is what observing alone costs in this guest
    (`ioazd-dry@STATIC` likewise over a static contender, which the guest sets first).
    Each with VARIANTS' suffixes after it: the same with their settings changed."""
    out = {}
    for given in contenders:
        base, changed = variant_of(given) or (given, {})
        cfg = _contender_config(base, queue_depth, model)
        if cfg is not None:
            decide = {**cfg.get("decide", {}), **changed.get("decide", {})}
            out[given] = {**cfg, **changed, "decide": decide}
    return out


def _contender_config(c: str, queue_depth: int | None, model: str) -> dict[str, Any] | None:
    """One ioazd contender's config (contender_configs), None for a static contender."""
    if c == "ioazd":
        return ioazd_config(None)
    if c in KERNEL_CONTENDERS:
        cfg = ioazd_config(None)
        cfg["decide"]["matrix_rules"] = [
            {"match": {"rotational": True},
             "matrices": kernel_matrices(queue_depth, model)}]
        if c in (KERNEL_UNCLEAR, KERNEL_TRIALS, KERNEL_ROUNDS, KERNEL_MODEL_TRIALS):
            cfg["decide"]["trial_unclear"] = True
        if c in (KERNEL_TRIALS, KERNEL_ROUNDS, KERNEL_MODEL_TRIALS):
            cfg["decide"]["trial_measured"] = True
        if c == KERNEL_ROUNDS:
            cfg["decide"]["trial_rounds"] = ROUNDS
        if c in MODEL_CONTENDERS:
            cfg["classifier"] = {"type": "model", "min_confidence": 0.6, "model": (
                f"{GUEST_REPO}/decision_matrices/"
                f"{KERNEL_MODEL_FILE.format(model=model, depth=queue_depth or AHCI_DEPTH)}")}
        return cfg
    if is_dry(c):
        return {**ioazd_config(None), "dry_run": True}
    if c.startswith("ioazd-"):
        return ioazd_config(c.removeprefix("ioazd-"))
    return None


def run(plan: Plan, out: Path, echo: bool = False, command: str = "",
        beside: str = "") -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    results = out / "guest"
    results.mkdir(exist_ok=True)
    credit = plan.path_credit_us
    path = None
    if credit is None:
        path = diskcheck.measure_path(10.0, out / "path")
        credit = path["depth1_4k_us"]
    (results / "plan.json").write_text(json.dumps({
        "workloads": [w.name for w in plan.workloads], "contenders": plan.contenders,
        "rounds": plan.rounds, "runtime_s": plan.runtime_s, "phase_s": plan.phase_s,
        "queue_depth": plan.queue_depth, "raid": plan.raid, "members": plan.members,
        "chunk_kb": plan.chunk_kb, "profile": plan.profile,
        "verbose": plan.verbose, "trace": list(plan.trace), "trace_bfq_s": plan.trace_bfq_s,
        "trace_bfq_at": plan.trace_bfq_at, "bfq_module": plan.bfq_module,
        "ioazd": contender_configs(plan.contenders, plan.queue_depth, plan.model),
        # the static contender each `ioazd-dry@STATIC` observes (its variants taken off)
        "dry_over": {c: dry_base(c) for c in plan.contenders if dry_base(c) is not None},
        "tuned": tuned_statics(plan.contenders, plan.queue_depth, plan.model)}, indent=1))
    if any(NO_MEMBER in c for c in plan.contenders):
        (results / NO_MEMBER_THRESHOLDS).write_text(no_member_thresholds())
    if plan.next_matrices:
        (results / NEXT_DIR).mkdir(exist_ok=True)
        for goal, f in next_matrix_files(plan.next_matrices).items():
            shutil.copyfile(f, results / NEXT_DIR / f"{goal}.yaml")
    started = time.time()
    load = host_load.HostLoad(out / HOST_LOAD).start()
    try:
        res = vm.run(["python3 -m ioaz.lab.testbench.guest_bench /mnt/results/plan.json"],
                     vm.Options(kernel=plan.kernel, memory_mb=2048, cpus=plan.cpus,
                                disks=disks.parse(plan.disk_spec()),
                                results=results, timeout_s=plan.seconds() * 2 + 1200,
                                path_credit_us=credit), echo=echo)
    finally:
        load.stop()
    samples = host_load.read_samples(out / HOST_LOAD)
    meta = {"model": plan.model, "kernel": plan.kernel, "rounds": plan.rounds,
            "queue_depth": plan.queue_depth, "cpus": plan.cpus,
            "raid": {"level": plan.raid, "members": plan.members, "chunk_kb": plan.chunk_kb}
            if plan.raid else None,
            "runtime_s": plan.runtime_s, "phase_s": plan.phase_s, "path": path,
            "path_credit_us": credit, "rc": res.rc, "boot_s": res.boot_s,
            "wall_s": round(time.time() - started), "started": time.strftime(
                "%Y-%m-%d %H:%M UTC", time.gmtime(started)), "command": command,
            "beside": beside, "host": host_load.summary(samples),
            "host_runs": host_beside_runs(samples, results)}
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    if res.rc != 0:
        tail = res.output[-3000:]
        raise TestbedError(f"the guest's bench failed (exit {res.rc}); console log "
                           f"{res.console}; what finished is in {results}/runs.jsonl:\n{tail}")
    return meta


HOST_LOAD = "host_load.jsonl"


def host_beside_runs(samples: list[dict[str, Any]], results: Path) -> dict[str, float]:
    """Each run's output file -> the share of the host's CPUs the rest of the host took while
    it ran. A run ends when its output file was last written, by the host's clock (the guest's
    runs under TCG and is not trusted to agree); read right after the bench, as a copy of the
    results keeps no times."""
    out: dict[str, float] = {}
    try:
        lines = (results / "runs.jsonl").read_text().splitlines()
    except OSError:
        return out
    for text in lines:
        line = json.loads(text)
        try:
            end = (results / "raw" / line["out"]).stat().st_mtime
        except OSError:
            continue
        s = host_load.summary(samples, end - line["wall_s"], end)
        if s is not None:
            out[line["out"]] = round(s["others"], 4)
    return out


# ------------------------------------------------------------------------- reading back

def load_meta(out: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((out / "meta.json").read_text()))
    except (OSError, ValueError) as e:
        raise ValueError(f"{out}/meta.json: not a testbed bench's results ({e})") from e


def raw_disks(guest: dict[str, Any]) -> list[str]:
    """The disks under the raw workloads: the one raw disk, or the array's members."""
    return list(guest.get("members") or [guest["raw"]])


def guest_queue_depth(results: Path) -> int | None:
    """The drive queue depth the guest ran the raw disk (or the array's first member) at."""
    g = json.loads((results / "guest.json").read_text())
    return g["queue_depth"].get(raw_disks(g)[0])


def guest_tags(results: Path) -> int:
    """The command slots (blk-mq tags) behind the raw disk, from its queue/nr_requests under the
    default scheduler: an elevator gets 2 x min(tags, 128) (blk_mq_init_sched), none the tags.
    A SCSI disk's device/queue_depth bounds what the drive holds, not the tags: at queue depth 1
    the guest's disks still take 64 requests under mq-deadline (qemu's AHCI, 32 slots a port)."""
    from ioaz.sim.schedulers import BLKDEV_DEFAULT_RQ, NO_ELEVATOR

    g = json.loads((results / "guest.json").read_text())
    disk = raw_disks(g)[0]
    n = int(g["nr_requests"][disk])
    if g["default_scheduler"][disk] in NO_ELEVATOR or n // 2 >= BLKDEV_DEFAULT_RQ:
        return n    # under none; or an elevator at the cap, where the tags are not told apart
    return n // 2


def collect(results: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """workload -> contender -> the rounds' measurements (in round order)."""
    guest = json.loads((results / "guest.json").read_text())
    phase_s = float(json.loads((results / "plan.json").read_text())["phase_s"])
    try:
        beside = load_meta(results.parent).get("host_runs") or {}
    except ValueError:
        beside = {}
    table: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for text in (results / "runs.jsonl").read_text().splitlines():
        line = json.loads(text)
        w = BY_NAME[line["workload"]]
        row: dict[str, Any] = {"round": line["round"], "rc": line["rc"],
                               "wall_s": line["wall_s"], "host_others": beside.get(line["out"])}
        cpu = line.get("cpu")   # absent from the runs of an older guest_bench
        if cpu and line["wall_s"] > 0:
            row["cpu_busy"] = cpu["busy_s"] / (line["wall_s"] * cpu["cpus"])
            if cpu.get("ioazd_s") is not None:
                row["ioazd_cpu"] = cpu["ioazd_s"] / line["wall_s"]
            if cpu.get("ioazd_window_thread_s") is not None:
                row["ioazd_window_cpu"] = cpu["ioazd_window_thread_s"] / line["wall_s"]
        disk = guest["raw"] if w.disk == "raw" else guest["fs"]
        before, after = line.get("stat_before", {}).get(disk), line.get("stat_after", {}).get(disk)
        if before and after and line["wall_s"] > 0:
            row["disk_busy"] = measure.disk_busy(before, after, line["wall_s"])
        if line.get("sched_counters", {}).get(disk):
            row["sched_counters"] = line["sched_counters"][disk]
        if line["rc"] == 0:
            m = measure.run(results / "raw", line, w.parser, disk, bool(w.phases))
            row.update(mb_s=m.disk_mb_s if w.figure == "disk" else m.mb_s, p99_ms=m.p99_ms,
                       disk_mb_s=m.disk_mb_s, phases=m.phases, phase_p99=m.phase_p99_ms)
        else:
            row["error"] = line["stderr"]
        traced = results / "raw" / line["out"].replace(".out", ".bfq.txt.gz")
        if traced.is_file():   # bench --trace bfq
            row["bfq"] = measure.bfq_queues(gzip.decompress(traced.read_bytes()).decode())
        if line["contender"].startswith("ioazd"):
            # on an array, its first member's (scheduler_at_end has every member's last choice)
            log = results / "raw" / line["out"].replace(".out", ".ioazd.log")
            dev = raw_disks(guest)[0] if w.disk == "raw" else guest["fs"]
            row["timeline"] = timeline(log, dev)
            wins = lag.windows(log, dev)   # only from an ioazd run with --verbose
            if w.phases and wins:
                starts = lag.phase_starts(log, results / "raw" / (line["out"] + ".starts"))
                row["lags"] = lag.phase_lags(wins, w.phases, phase_s, starts)
            if line.get("scheduler_at_end"):
                row["scheduler_at_end"] = line["scheduler_at_end"]
        table[w.name][line["contender"]].append(row)
    return {w: dict(c) for w, c in table.items()}


def timeline(log: Path, device: str) -> list[dict[str, Any]]:
    """ioazd's switches on DEVICE, and how its trials ended (a kept one switches nothing),
    seconds from the workload's start."""
    out: list[dict[str, Any]] = []
    for t, ev in lag.events(log):
        if ev.get("device") != device or ev.get("dry_run"):
            continue
        if ev.get("event") in ("switch", "policy_change", "switch_failed"):
            # before the workload (the idle policy at ioazd's start): in hundredths, so that
            # it does not read as 0 s into it
            out.append({"t": round(t, 2 if t < 0 else 1), "event": ev["event"],
                        "to": ev.get("to"),
                        "policy": ev.get("policy"), "reason": ev.get("reason")})
        elif ev.get("event") == "trial":
            out.append({"t": round(t, 1), "event": "trial", "to": None,
                        "policy": ev.get("candidate"), "reason": ev.get("outcome"),
                        "gain": ev.get("gain")})
    return out
