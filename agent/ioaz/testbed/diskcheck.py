"""The model disk checked against the simulator: the same workload by fio in the guest on one
emulated disk (device/queue_depth 1, scheduler none) and by the simulator on the same model.

A first boot with a disk served by the zero model measures what the VM path itself costs per
request (fio's completion latency at depth 1, and 1/IOPS at depth 32); the model disk of the second
boot is given that round trip as its path credit (modeldisk.py), so that the guest sees the
model's time rather than the path's on top of it. `credit=False` shows the difference.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ioaz.learn import curve
from ioaz.sim.devices import load_device
from ioaz.sim.engine import simulate
from ioaz.sim.workloads import Phase, ProcSpec, Workload
from ioaz.testbed import disks, vm


@dataclass(frozen=True)
class Check:
    name: str
    fio: str            # fio options beyond the common ones
    metric: str         # "mb_s" or "iops"
    size_kb: float
    pattern: str
    depth: int          # requests a process keeps in flight (1: synchronous)


CHECKS = (
    Check("sequential read 128 KiB, depth 1", "--rw=read --bs=128k --ioengine=psync", "mb_s",
          128, "seq", 1),
    Check("random read 4 KiB, depth 1", "--rw=randread --bs=4k --ioengine=psync", "iops",
          4, "rand", 1),
    Check("random read 4 KiB, depth 16", "--rw=randread --bs=4k --ioengine=libaio --iodepth=16",
          "iops", 4, "rand", 16),
)
GUEST_LIB = "/mnt/ioaz/agent/ioaz/testbed/guest/lib.sh"
CURVE_POINTS, CURVE_SAMPLES = 16, 5
# `ioaz-lab calibrate --device`'s distance-to-service-time curve, measured in the guest
CURVE_SCRIPT = (f"python3 -m ioaz.learn.curve /dev/$A --points {CURVE_POINTS} "
                f"--samples {CURVE_SAMPLES} > /mnt/results/curve.json")
COMMON = "--direct=1 --time_based --norandommap --randrepeat=0 --output-format=json"


def path_script(runtime_s: float) -> str:
    """fio on a zero-model disk: what the VM path alone costs, at depth 1 (4 and 128 KiB) and 32."""
    return "\n".join([
        "set -e", f"source {GUEST_LIB}", "Z=$(disk_by_serial 0)", "set_queue $Z 32 none",
        f"fio --name=p1 --filename=/dev/$Z --runtime={runtime_s} {COMMON} --rw=randread --bs=4k "
        "--ioengine=psync > /mnt/results/path-1.json",
        f"fio --name=p128 --filename=/dev/$Z --runtime={runtime_s} {COMMON} --rw=read --bs=128k "
        "--ioengine=psync > /mnt/results/path-128k.json",
        f"fio --name=p32 --filename=/dev/$Z --runtime={runtime_s} {COMMON} --rw=randread --bs=4k "
        "--ioengine=libaio --iodepth=32 > /mnt/results/path-32.json"])


def guest_script(runtime_s: float) -> str:
    lines = ["set -e", f"source {GUEST_LIB}", "A=$(disk_by_serial 0)", "set_queue $A 1 none"]
    for i, c in enumerate(CHECKS):
        lines.append(f"fio --name=c{i} --filename=/dev/$A --runtime={runtime_s} {COMMON} "
                     f"{c.fio} > /mnt/results/check-{i}.json")
    lines.append(CURVE_SCRIPT)
    return "\n".join(lines)


def measure_path(runtime_s: float, results: Path) -> dict[str, float]:
    res = vm.run([path_script(runtime_s)], vm.Options(disks=disks.parse("model:zero:8G"),
                                                      results=results, timeout_s=600))
    if res.rc != 0:
        raise RuntimeError(f"the guest's fio failed (exit {res.rc}):\n{res.output[-2000:]}")
    p1, p128 = _fio(results / "path-1.json"), _fio(results / "path-128k.json")
    p32 = _fio(results / "path-32.json")
    return {"depth1_4k_us": round(p1["clat_mean_us"], 1),
            "depth1_128k_us": round(p128["clat_mean_us"], 1),
            "depth32_4k_us_per_request": round(1e6 / p32["iops"], 1) if p32["iops"] else 0.0}


def _fio(path: Path) -> dict[str, Any]:
    job = json.loads(path.read_text())["jobs"][0]["read"]
    return {"mb_s": job["bw_bytes"] / 1e6, "iops": job["iops"],
            "clat_mean_us": job["clat_ns"]["mean"] / 1e3}


def simulated(model: str, c: Check, host_us: float, duration_s: float) -> float:
    dev = load_device(model)
    span = dev.capacity_sectors * 512 / 1e9
    proc = ProcSpec(name="fio", op="read", pattern=c.pattern, size_kb=c.size_kb,
                    sync=c.depth == 1, depth=c.depth, host_us=host_us, region_gb=0.0,
                    span_gb=span * 0.999)
    r = simulate(dev, "none", Workload(c.name, [Phase(duration_s, [proc])]))
    return r.throughput_mb_s if c.metric == "mb_s" else r.iops


def _on_model_disk(script: str, model: str, runtime_s: float, results: Path, credit: bool,
                   timeout_s: float) -> tuple[vm.Result, dict[str, Any], float]:
    """Two boots: the path measured on a zero disk, then the script on the model disk with
    that path (its 4 KiB depth-1 round trip) credited against the model's time (credit=False:
    none). The guest's result, the path and the credit."""
    path = measure_path(runtime_s / 2, results / "path")
    credit_us = path["depth1_4k_us"] if credit else 0.0
    res = vm.run([script], vm.Options(disks=disks.parse(f"model:{model}"), results=results,
                                      timeout_s=timeout_s, path_credit_us=credit_us))
    if res.rc != 0:
        raise RuntimeError(f"the guest's fio failed (exit {res.rc}):\n{res.output[-2000:]}")
    return res, path, credit_us


def run(model: str, runtime_s: float, results: Path, credit: bool = True) -> dict[str, Any]:
    """The checks of CHECKS, in the guest and in the simulator."""
    res, path, credit_us = _on_model_disk(guest_script(runtime_s), model, runtime_s, results,
                                          credit, 600 + 10 * runtime_s)
    rows = []
    for i, c in enumerate(CHECKS):
        real = _fio(results / f"check-{i}.json")[c.metric]
        sim = simulated(model, c, 20.0, max(20.0, runtime_s))
        rows.append({"check": c.name, "metric": c.metric, "guest": round(real, 2),
                     "sim": round(sim, 2), "ratio": round(real / sim, 3) if sim else None})
    stats = {f.name: json.loads(f.read_text()) for f in results.glob("disk*-stats.json")}
    return {"model": model, "runtime_s": runtime_s, "boot_s": res.boot_s, "path": path,
            "path_credit_us": credit_us, "checks": rows,
            "curve": compare_curve(model, json.loads((results / "curve.json").read_text())),
            "disk_stats": stats}


def compare_curve(model: str, guest: dict[str, Any]) -> list[dict[str, Any]]:
    """The guest's curve against the same reads in the simulator, distance by distance."""
    sim = curve.simulate(load_device(model), model, CURVE_POINTS, CURVE_SAMPLES,
                         capacity_sectors=guest["capacity_sectors"])
    return [{"distance": d, "guest_ms": round(g * 1e3, 3), "sim_ms": round(s * 1e3, 3),
             "ratio": round(g / s, 3) if s else None}
            for d, g, s in zip(guest["distances"], guest["service_s"], sim.service_s,
                               strict=True)]


def render(report: dict[str, Any]) -> str:
    p = report["path"]
    out = [f"the VM path (zero model): {p['depth1_4k_us']} us a 4 KiB request at depth 1, "
           f"{p['depth1_128k_us']} us a 128 KiB one, {p['depth32_4k_us_per_request']} us a "
           f"request at depth 32; credited: {report['path_credit_us']} us",
           f"model {report['model']}:",
           f"{'check':36} {'unit':5} {'guest':>9} {'sim':>9} {'guest/sim':>10}"]
    for r in report["checks"]:
        unit = "MB/s" if r["metric"] == "mb_s" else "IOPS"
        out.append(f"{r['check']:36} {unit:5} {r['guest']:9.1f} {r['sim']:9.1f} "
                   f"{r['ratio']:10.3f}")
    if report.get("curve"):
        out.append("distance-to-service-time curve (calibrate's 4 KiB reads; median of "
                   f"{CURVE_SAMPLES}):")
        out.append(f"{'distance (sectors)':>20} {'guest ms':>9} {'sim ms':>9} {'guest/sim':>10}")
        for r in report["curve"]:
            ratio = f"{r['ratio']:10.3f}" if r["ratio"] else f"{'-':>10}"
            out.append(f"{r['distance']:20d} {r['guest_ms']:9.3f} {r['sim_ms']:9.3f} {ratio}")
    return "\n".join(out)


# ------------------------------------------------------------------ scheduler reordering

@dataclass(frozen=True)
class OrderCheck:
    name: str
    queue_depth: int
    scheduler: str      # the guest's
    sim_scheduler: str  # the simulator's stand-in
    fio: str
    par_read: str       # "" (random readers), "direct" (O_DIRECT) or "buffered" (page cache)


ORDER_SCHEDULERS = (("none", "none"), ("mq-deadline", "deadline"), ("vr", "vr"),
                    ("bfq", "cfq"), ("stream", "stream"))
RANDOM16 = "--rw=randread --bs=4k --ioengine=psync --numjobs=16 --group_reporting"
# Xu & Jiang's par-read (their section 3.3; docs/references.md): four synchronous 4 KiB readers,
# 50 GB apart
PAR_READ = ("--rw=read --bs=4k --ioengine=psync --numjobs=4 --size=1g --offset=10g "
            "--offset_increment=50g --group_reporting")
# as the paper ran it: through the page cache, whose read-ahead (the guest's 128 KiB) makes the
# disk's requests; fio drops the range's cached pages before it starts
PAR_READ_BUFFERED = PAR_READ + " --direct=0 --invalidate=1"


def order_checks() -> list[OrderCheck]:
    checks = [OrderCheck(f"16 random readers, queue_depth 1, {g}", 1, g, s, RANDOM16, "")
              for g, s in ORDER_SCHEDULERS if g != "stream"]
    checks += [OrderCheck(f"16 random readers, queue_depth 32, {g}", 32, g, s, RANDOM16, "")
               for g, s in (("none", "none"), ("mq-deadline", "deadline"))]
    checks += [OrderCheck(f"par-read, queue_depth 1, {g}", 1, g, s, PAR_READ, "direct")
               for g, s in ORDER_SCHEDULERS]
    checks += [OrderCheck(f"par-read buffered, queue_depth 1, {g}", 1, g, s, PAR_READ_BUFFERED,
                          "buffered") for g, s in ORDER_SCHEDULERS]
    return checks


def order_script(runtime_s: float) -> str:
    lines = ["set -e", f"source {GUEST_LIB}", "A=$(disk_by_serial 0)", "load_elevators"]
    for i, c in enumerate(order_checks()):
        lines += [f"set_queue $A {c.queue_depth} {c.scheduler}",
                  f"fio --name=o{i} --filename=/dev/$A --runtime={runtime_s} {COMMON} {c.fio} "
                  f"> /mnt/results/order-{i}.json"]
    return "\n".join(lines)


def simulated_order(model: str, c: OrderCheck, duration_s: float) -> float:
    from ioaz.sim.workloads import par_read, par_read_buffered
    dev = load_device(model, queue_depth=c.queue_depth)
    if c.par_read:
        wl = par_read(duration_s) if c.par_read == "direct" else par_read_buffered(duration_s)
        return simulate(dev, c.sim_scheduler, wl).throughput_mb_s
    span = dev.capacity_sectors * 512 / 1e9 * 0.999
    procs = [ProcSpec(name=f"r{i}", op="read", pattern="rand", size_kb=4, sync=True,
                      region_gb=0.0, span_gb=span) for i in range(16)]
    return simulate(dev, c.sim_scheduler, Workload(c.name, [Phase(duration_s, procs)])).iops


def run_order(model: str, runtime_s: float, results: Path, credit: bool = True
              ) -> dict[str, Any]:
    res, path, credit_us = _on_model_disk(order_script(runtime_s), model, runtime_s, results,
                                          credit, 900 + 15 * runtime_s)
    rows = []
    for i, c in enumerate(order_checks()):
        got = _fio(results / f"order-{i}.json")
        metric = "mb_s" if c.par_read else "iops"
        rows.append({"check": c.name, "metric": metric, "guest": round(got[metric], 2),
                     "sim": round(simulated_order(model, c, max(20.0, runtime_s)), 2),
                     "sim_scheduler": c.sim_scheduler})
    return {"model": model, "runtime_s": runtime_s, "boot_s": res.boot_s, "path": path,
            "path_credit_us": credit_us, "checks": rows}


def render_order(report: dict[str, Any]) -> str:
    out = [f"model {report['model']}: scheduler order, guest against the simulator "
           f"(bfq's stand-in there: cfq); path credit {report['path_credit_us']} us",
           f"{'check':40} {'unit':5} {'guest':>9} {'sim':>9}"]
    for r in report["checks"]:
        unit = "MB/s" if r["metric"] == "mb_s" else "IOPS"
        out.append(f"{r['check']:40} {unit:5} {r['guest']:9.1f} {r['sim']:9.1f}")
    return "\n".join(out)
