"""In the guest: which processes submit bios to the disk while one fio writer runs."""
import subprocess, sys, time, collections
from ioaz.probe.bpf_source import BpfSource
dev = sys.argv[1]
src = BpfSource().open()
fio = subprocess.Popen(["fio", "--name=w", f"--filename=/dev/{dev}", "--rw=write", "--bs=128k",
                        "--direct=1", "--ioengine=psync", "--thinktime=3000", "--time_based",
                        "--runtime=8", "--output=/dev/null"])
for _ in range(50):
    time.sleep(0.2)
    prev = src.read().get(dev)
    if prev is not None:
        break
print("disks seen:", list(src.read()), flush=True)
def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return "?"
for i in range(10):
    time.sleep(1)
    cur = src.read().get(dev)
    if cur is None: print(i, 'none'); continue
    diff = {k: v - (prev.procs or {}).get(k, 0) for k, v in (cur.procs or {}).items()}
    print(i, {f"{k}:{comm(k[0] if isinstance(k, tuple) else k)}": v for k, v in diff.items() if v}, "threads",
          {str(k): v for k, v in (cur.threads or {}).items()} if i == 9 else "", flush=True)
    prev = cur
fio.wait()
