#!/usr/bin/env python3
"""Re-runs the peer comparison's hard cases (research/peers.md) against fio's truth: dense random
reads in 1/4/16 MiB, 16 reader threads of one process, 4 and 16 interleaved sequential streams.

For each case and repeat, `ioazctl observe --json` watches a fresh loop device (backed by
/dev/shm) while fio runs 5 s, once with the probe seeing every request (--sample 1) and once
sampled (ioazd's default), alternating. The windows fully inside fio's steady run are kept.
fio's truth for the dense random cases is the share of its reads that start where its previous
one ended, from its own I/O log; the sequential cases are 1.00 by construction. Usage (root):
    .venv/bin/python docs/probe_rerun.py [repeats] > table.md
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

IOAZCTL = os.path.join(os.path.dirname(sys.executable), "ioazctl")
CASES = {   # name: (fio options, threads of one process?)
    "random 4 KiB in 1 MiB": (["--rw=randread", "--size=1m"], False),
    "random 4 KiB in 4 MiB": (["--rw=randread", "--size=4m"], False),
    "random 4 KiB in 16 MiB": (["--rw=randread", "--size=16m"], False),
    "16 random readers, threads of 1 process": (
        ["--rw=randread", "--numjobs=16", "--size=64m", "--offset_increment=64m", "--thread"],
        True),
    "4 sequential readers (processes)": (
        ["--rw=read", "--numjobs=4", "--size=256m", "--offset_increment=256m"], False),
    "16 sequential readers, threads of 1 process": (
        ["--rw=read", "--numjobs=16", "--size=64m", "--offset_increment=64m", "--thread"],
        True),
    "16 sequential readers (processes)": (
        ["--rw=read", "--numjobs=16", "--size=64m", "--offset_increment=64m"], False),
}


def adjacency(iolog: str) -> float:
    """Share of fio's reads that start where its previous read ended (fio iolog v2 or v3:
    `[time] file read offset length`)."""
    last_end, adj, n = None, 0, 0
    with open(iolog) as f:
        for line in f:
            p = line.split()
            if len(p) >= 4 and p[-3] == "read":
                off, ln = int(p[-2]), int(p[-1])
                n += 1
                adj += last_end == off
                last_end = off + ln
    return adj / max(n, 1)


def one(case: str, sample: str) -> dict:
    opts, _ = CASES[case]
    backing = f"/dev/shm/ioaz-rerun-{uuid.uuid4().hex[:8]}.img"
    with open(backing, "wb") as f:
        f.truncate(1024 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", backing], check=True, capture_output=True,
                         text=True).stdout.strip()
    name = os.path.basename(dev)
    try:
        obs = subprocess.Popen([IOAZCTL, "observe", "--json", "-d", name, "-i", "1", "-c", "8",
                                "--sample", sample], stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "io.log")
            single = "--numjobs" not in " ".join(opts)
            cmd = ["fio", "--name=rerun", f"--filename={dev}", "--direct=1", "--ioengine=psync",
                   "--bs=4k", "--runtime=5", "--time_based", "--output-format=terse", *opts]
            if single:
                cmd.append(f"--write_iolog={log}")
            t0 = time.time()
            subprocess.run(cmd, check=True, capture_output=True)
            t1 = time.time()
            # several jobs: sequential ones are 1.00 by construction, random ones unmeasured
            truth = adjacency(log) if single else 1.0 if "--rw=read" in opts else None
        out, _ = obs.communicate(timeout=30)
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)
        os.unlink(backing)
    rows = [json.loads(x) for x in out.splitlines() if x.strip()]
    busy = [r for r in rows if r["iops"] > 0]
    steady = busy[1:-1]   # the first and last windows hold part of fio's run
    return {"truth": truth, "windows": steady, "fio_s": t1 - t0}


def summary(runs: list[dict]) -> str:
    ws = [w for r in runs for w in r["windows"]]
    seq = [w["seq_ratio"] for w in ws if w["seq_ratio"] is not None]
    cls = sorted({"/".join(w["class"][k] for k in ("processes", "pattern", "mode"))
                  + (" (kept)" if w.get("class_kept") else "")
                  for w in ws if w["class"]})
    procs = sorted({w["processes"] for w in ws if w["processes"] is not None})
    thr = sorted({w["threads"] for w in ws if w["threads"] is not None})
    rng = f"{min(seq):.3f}-{max(seq):.3f}" if seq else "-"
    med = f"{statistics.median(seq):.3f}" if seq else "-"
    return f"{med} [{rng}] | {procs} / {thr} | {', '.join(cls)} | {len(ws)}"


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    results: dict[tuple[str, str], list[dict]] = {}
    for _ in range(repeats):
        for case in CASES:
            for sample in ("1", "0.1"):   # alternate the two modes within each repeat
                results.setdefault((case, sample), []).append(one(case, sample))
    print("| case | fio truth (seq share; threads/processes) | probe mode | ioaz seq_ratio median "
          "[min-max] | processes / threads | class | windows |")
    print("|---|---|---|---|---|---|---|")
    for case, (_, threaded) in CASES.items():
        for sample in ("1", "0.1"):
            runs = results[(case, sample)]
            known = [r["truth"] for r in runs if r["truth"] is not None]
            truth = f"{statistics.median(known):.3f}" if known else "~0 (random)"
            jobs = 16 if "16" in case.split()[0] else 4 if case.startswith("4") else 1
            who = f"{jobs} threads / 1 process" if threaded else f"{jobs} processes"
            mode = "every request" if sample == "1" else "sampled 0.1"
            print(f"| {case} | {truth}; {who} | {mode} | {summary(runs)} |")


if __name__ == "__main__":
    main()
