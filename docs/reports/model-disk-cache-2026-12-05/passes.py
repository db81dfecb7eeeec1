"""Three passes of 3000 x 128 KiB over the same places of a wd500 model disk served in this
process (no VM): reads of never-written space, writes, reads of what was written."""
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, 'tests/unit')  # run from the repository's root
from ioaz.testbed import nbd
from ioaz.testbed.modeldisk import Server
from test_modeldisk import Client

d = Path(tempfile.mkdtemp())
s = Server("wd500", d / "s.sock", d / "s.raw", None, ncq=1, credit_s=0.0)
threading.Thread(target=s.serve_forever, daemon=True).start()
c = Client(d / "s.sock")
L = 131072
def passes(base, n=3000, write=False):
    t = time.monotonic()
    for i in range(n):
        if write:
            c.send(nbd.CMD_WRITE, 1, base + i * L, L, b"x" * L)
            c.reply()
        else:
            c.read(base + i * L, L)
    return n * L / (time.monotonic() - t) / 1e6
for label, base in (("hole 300G", 300 * 2**30), ("hole 200G", 200 * 2**30)):
    print(label, " ".join(f"{passes(base):.1f}" for _ in range(3)), "MB/s")
print("write 20G", " ".join(f"{passes(20 * 2**30, write=True):.1f}" for _ in range(3)), "MB/s")
print("read 20G", " ".join(f"{passes(20 * 2**30):.1f}" for _ in range(3)), "MB/s")
