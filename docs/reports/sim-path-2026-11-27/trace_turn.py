#!/usr/bin/env python3
"""Per request on one disk: when its bio was queued (and by whom) and when it completed, to
measure the guest's turn-around: from a synchronous reader's completion to its next bio."""
import sys, time, ctypes, signal
from bcc import BPF
dev = int(sys.argv[1], 0); secs = float(sys.argv[2]); out = open(sys.argv[3], "w")
prog = r"""
struct ev { u64 ts; u64 sector; u32 pid; u32 kind; };
BPF_PERF_OUTPUT(evs);
TRACEPOINT_PROBE(block, block_bio_queue) {
    if (args->dev != DEV) return 0;
    struct ev e = {bpf_ktime_get_ns(), args->sector, bpf_get_current_pid_tgid() >> 32, 0};
    evs.perf_submit(args, &e, sizeof(e)); return 0; }
TRACEPOINT_PROBE(block, block_rq_issue) {
    if (args->dev != DEV) return 0;
    struct ev e = {bpf_ktime_get_ns(), args->sector, 0, 1};
    evs.perf_submit(args, &e, sizeof(e)); return 0; }
TRACEPOINT_PROBE(block, block_rq_complete) {
    if (args->dev != DEV) return 0;
    struct ev e = {bpf_ktime_get_ns(), args->sector, 0, 2};
    evs.perf_submit(args, &e, sizeof(e)); return 0; }
""".replace("DEV", str(dev))
b = BPF(text=prog)
class Ev(ctypes.Structure):
    _fields_ = [("ts", ctypes.c_uint64), ("sector", ctypes.c_uint64), ("pid", ctypes.c_uint32), ("kind", ctypes.c_uint32)]
def cb(cpu, data, size):
    e = ctypes.cast(data, ctypes.POINTER(Ev)).contents
    out.write(f"{e.ts} {e.kind} {e.sector} {e.pid}\n")
b["evs"].open_perf_buffer(cb, page_cnt=256)
print("tracing", flush=True)
open(sys.argv[3] + ".ready", "w").close()
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
end = time.time() + secs
while time.time() < end and not stop:
    b.perf_buffer_poll(timeout=200)
out.close()
