"""What the host pays to store the guest's writes in a model disk's sparse backing file: 128 KiB
pwrites into holes, then over the same place again (python3 host_pwrite.py, on the file system
the testbed keeps its disks on)."""
import os
import time

p = "/var/tmp/sparse-test.img"
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
os.ftruncate(fd, 500 * 10**9)
buf = os.urandom(128 * 1024)


def run(off0: int, n: int) -> str:
    lat = []
    for i in range(n):
        a = time.perf_counter()
        os.pwrite(fd, buf, off0 + i * len(buf))
        lat.append(time.perf_counter() - a)
    lat.sort()
    return f"mean {sum(lat) / n * 1e6:.0f} us, p50 {lat[n // 2] * 1e6:.0f}"


for rep in range(3):
    b = (50 + 40 * rep) * 10**9
    print(f"120 writes at {b // 10**9} GB: first {run(b, 120)}; again {run(b, 120)}")
b = 400 * 10**9
print(f"8000 writes (1 GiB) at 400 GB: first {run(b, 8000)}; again {run(b, 8000)}")
os.close(fd)
os.unlink(p)
