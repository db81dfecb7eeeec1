"""A/B in one daemon: the window's CPU with the map dump as before 2026-11-27 (fresh 1 MB
buffers, whole-buffer copies) and as now (kept buffers, only what the kernel filled); blocks of
30 windows alternated, one loop device, 4 paced random readers."""
import ctypes, statistics, subprocess, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "agent"))
from ioaz.lab import bench_scale as b
from ioaz.probe import libbpf
from ioaz.probe.bpf_source import BpfSource
from ioaz.sysblock import BlockSysfs

def old_dump(self, fd, key_size, value_size):
    L = libbpf.lib()
    out = []
    chunk = 256
    keys = ctypes.create_string_buffer(key_size * chunk)
    vals = ctypes.create_string_buffer(value_size * chunk)
    in_tok = ctypes.c_uint64(0); out_tok = ctypes.c_uint64(0)
    first = True
    while True:
        count = ctypes.c_uint32(chunk)
        ret = L.bpf_map_lookup_batch(fd, None if first else ctypes.byref(in_tok),
                                     ctypes.byref(out_tok), keys, vals, ctypes.byref(count), None)
        if ret < 0 and -ret not in (2,):
            raise OSError(-ret, "batch")
        raw_k, raw_v = keys.raw, vals.raw
        for i in range(count.value):
            out.append((raw_k[i * key_size:(i + 1) * key_size],
                        raw_v[i * value_size:(i + 1) * value_size]))
        if ret < 0:
            return out
        in_tok.value = out_tok.value
        first = False

new_dump = BpfSource._dump
BLOCK, ROUNDS = 30, int(sys.argv[1]) if len(sys.argv) > 1 else 4
res = {"old": [], "new": []}
with b.Loops(1, 256) as devs:
    BlockSysfs().write(devs[0], "queue/rotational", "1")
    out = {}
    fio = subprocess.Popen(["fio", "--name=r", f"--filename=/dev/{devs[0]}", "--direct=1",
                            "--rw=randread", "--bs=4k", "--numjobs=4", "--rate_iops=500",
                            f"--runtime={BLOCK * ROUNDS * 2 + 15}", "--time_based",
                            "--output=/dev/null"])
    try:
        with b._daemon(devs, 1.0, None, out) as daemon:
            time.sleep(2)
            daemon.window()
            for r in range(ROUNDS):
                for name, fn in (("old", old_dump), ("new", new_dump)) if r % 2 == 0 else \
                        (("new", new_dump), ("old", old_dump)):
                    BpfSource._dump = fn
                    for i in range(BLOCK):
                        t0 = time.monotonic(); p0 = time.process_time()
                        daemon.window()
                        res[name].append(time.process_time() - p0)
                        time.sleep(max(0, 1 - (time.monotonic() - t0)))
    finally:
        fio.kill(); fio.wait()
for name, xs in res.items():
    print(f"{name}: {len(xs)} windows, CPU median {statistics.median(xs)*1e3:.2f} ms, "
          f"mean {statistics.mean(xs)*1e3:.2f} ms")
