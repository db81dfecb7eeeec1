"""Run in the guest: the CO-RE probe (libbpf) and the BCC probe attached at once, on the same fio
workloads, each read before and after every workload. Prints one JSON line per workload with both
probes' raw counts and features; the host's test compares them (test_guest_kernel61.py).

The BCC probe is opened by open_source("auto") with the kernel's BTF hidden, so the choice a
kernel without BTF gets is tested too. usage: python3 probe_compare.py DEVICE SECONDS
"""
from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import time

from ioaz.classify.features import compute_features
from ioaz.probe import Source, open_source
from ioaz.probe.bpf_source import BpfSource
from ioaz.probe.sampler import SamplePlan

# name -> fio arguments. Each is a case the probe must read right (issue 18): one stream, streams
# that interleave, random I/O over the disk and inside 1 MiB, threads of one process, a mix.
WORKLOADS = {
    "seq-read": ["--rw=read", "--bs=64k", "--numjobs=1"],
    "interleaved-4": ["--rw=read", "--bs=4k", "--numjobs=4", "--offset_increment=10g"],
    "rand-read-4": ["--rw=randread", "--bs=4k", "--numjobs=4"],
    "dense-random-1m": ["--rw=randread", "--bs=4k", "--numjobs=1", "--size=1m"],
    "threads-8": ["--rw=randread", "--bs=4k", "--numjobs=8", "--thread"],
    "mixed-rw": ["--rw=randrw", "--rwmixread=70", "--bs=16k", "--numjobs=2"],
    "seq-write": ["--rw=write", "--bs=128k", "--numjobs=1", "--offset=20g"],
}


def counts(snap) -> dict:
    return {"completed": snap.completed, "bytes": snap.completed_bytes, "bios": snap.bios,
            "bios_seq": snap.bios_seq, "lat_sum_ns": snap.lat_sum_ns,
            "lat_hist": snap.lat_hist, "size_hist": snap.size_hist,
            "threads": len(snap.threads or {}), "procs": len(snap.procs or {}),
            "in_flight": snap.in_flight}


def features(old, new) -> dict:
    f = compute_features(old, new)
    return {"seq_ratio": f.seq_ratio, "read_ratio": f.read_ratio, "iops": f.iops,
            "processes": f.processes, "threads": f.threads, "avg_depth": f.avg_depth,
            "mean_size_bytes": f.mean_size_bytes, "p50_latency_s": f.p50_latency_s,
            "p99_latency_s": f.p99_latency_s,
            "latency_hist": {str(k): v for k, v in sorted(f.latency_hist.items())}}


class Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def open_bcc_as_without_btf() -> tuple[Source, dict]:
    """open_source("auto") on this kernel with its BTF hidden from user space (a tmpfs over
    /sys/kernel/btf), as on a kernel built without it: it must take the BCC probe, and say so."""
    said = Said()
    logging.getLogger("ioaz.probe").addHandler(said)
    subprocess.run(["mount", "-t", "tmpfs", "none", "/sys/kernel/btf"], check=True)
    t = time.monotonic()
    try:
        src, why = open_source("auto")
    finally:
        subprocess.run(["umount", "/sys/kernel/btf"], check=True)
    return src, {"auto": src.name, "fallback": why, "log": said.lines,
                 "open_s": round(time.monotonic() - t, 1)}


def read_both(core: BpfSource, bcc: Source, dev: str) -> dict:
    """Both probes' snapshots of the same instant: the CO-RE probe's counts did not move while
    the BCC probe was read (udev reads a disk after a writer closes it, at any moment)."""
    for _ in range(50):
        a = core.read().get(dev)
        b = bcc.read().get(dev)
        c = core.read().get(dev)
        if a is None or c is None or (a.completed, a.bios) == (c.completed, c.bios):
            break
        time.sleep(0.1)
    return {"bpf": a, "bcc": b}


def kernel_in_flight(dev: str) -> list[int]:
    """The reads and writes in flight on the disk by the kernel's own count."""
    with open(f"/sys/block/{dev}/inflight") as f:
        return [int(x) for x in f.read().split()]


def read_quiet(core: BpfSource, bcc: Source, dev: str) -> dict:
    """read_both at an instant when no request is in flight by the kernel's count, before and
    after the read: udev's watch rule reads a disk a writer has closed (blkid), so its reads
    may still be on the way a second after fio is done, and both probes rightly count them."""
    if shutil.which("udevadm"):
        subprocess.run(["udevadm", "settle", "--timeout=10"], check=False)
    for _ in range(50):
        idle = kernel_in_flight(dev) == [0, 0]
        got = read_both(core, bcc, dev)
        if idle and kernel_in_flight(dev) == [0, 0]:
            break
        time.sleep(0.2)
    return got


def bpf_run_stats() -> dict:
    """Each probe's programs' runs and run time since kernel.bpf_stats_enabled was set: the
    CO-RE probe's are BTF tracing programs, the BCC probe's classic and raw tracepoints."""
    out = {k: {"run_cnt": 0, "run_time_ns": 0} for k in ("bpf", "bcc")}
    shown = subprocess.run(["bpftool", "--json", "prog", "show"], check=True,
                           capture_output=True, text=True).stdout
    for prog in json.loads(shown):
        who = {"tracing": "bpf", "tracepoint": "bcc", "raw_tracepoint": "bcc"}.get(prog["type"])
        if who:
            out[who]["run_cnt"] += prog.get("run_cnt", 0)
            out[who]["run_time_ns"] += prog.get("run_time_ns", 0)
    return out


def main() -> int:
    dev, seconds = sys.argv[1], sys.argv[2]
    core = BpfSource().open()    # while the kernel's BTF is in sight
    bcc, auto = open_bcc_as_without_btf()
    print(json.dumps(auto), flush=True)
    # A first request, so both probes know the disk before the first workload.
    subprocess.run(["dd", f"if=/dev/{dev}", "of=/dev/null", "bs=4k", "count=1", "iflag=direct"],
                   check=True, capture_output=True)
    # what each probe's programs cost, both on the same requests (in TCG: compare, not absolute)
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    try:
        for name, args in WORKLOADS.items():
            before = read_quiet(core, bcc, dev)
            r = subprocess.run(["fio", f"--name={name}", f"--filename=/dev/{dev}", "--direct=1",
                                "--ioengine=psync", f"--runtime={seconds}", "--time_based",
                                "--group_reporting", "--output=/dev/null", *args])
            time.sleep(0.5)
            after = read_quiet(core, bcc, dev)   # both probes have seen the same requests
            out: dict = {"workload": name, "fio_rc": r.returncode}
            for k in ("bpf", "bcc"):
                a, b = before[k], after[k]
                if a is None or b is None:
                    out[k] = None
                    continue
                b.t_ns = a.t_ns + int(float(seconds) * 1e9)   # the same window for both
                out[k] = {"features": features(a, b), "counts": counts(b)}
            print(json.dumps(out), flush=True)
        print(json.dumps({"bpf_stats": bpf_run_stats()}), flush=True)
        core.close()
        # Sampled, as ioazd runs it by default (forced even at low rates), on the same loaded
        # BCC probe: the sampler drives its programs and `ctl` as it drives libbpf's.
        plan = SamplePlan.per_window(0.1, 1.0)
        bcc.suspend()
        bcc.plan = SamplePlan(plan.fraction, plan.period_s, plan.warmup_s, full_below_iops=0)
        bcc.resume()
        fio = subprocess.Popen(["fio", "--name=s", f"--filename=/dev/{dev}", "--direct=1",
                                "--rw=read", "--bs=4k", "--numjobs=2", "--offset_increment=10g",
                                f"--runtime={int(seconds) + 2}", "--time_based",
                                "--output=/dev/null"])
        time.sleep(1)
        a = bcc.read().get(dev)
        time.sleep(float(seconds))
        b = bcc.read().get(dev)
        fio.wait()
        s = bcc.sampler
        print(json.dumps({"sampled": features(a, b), "periods": s.periods if s else None,
                          "drained": s.drained_periods if s else None,
                          "error": s.error if s else "no sampler"}), flush=True)
    finally:
        core.close()
        bcc.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
