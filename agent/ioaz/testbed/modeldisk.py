"""A disk whose service times come from the simulator's model, in real time: the guest's SATA
disk is backed by an NBD export this process serves.

Why NBD: qemu's NBD client lives in user space (no host kernel module; the host has none to load),
every request the guest's disk has outstanding reaches this process as its own message, so the
model's one head and its command queue see exactly what a drive would, and one thread can decide
the order. A FUSE file would need the kernel's FUSE queue and one thread per request in between.

The model is ioaz.sim.devices' own (the same YAML and HDD code as the simulator: seek curve,
rotation, zones, command-queue reordering, read cache), driven by a real clock: the device's
completion events become timers. The VM path (qemu's emulation of the AHCI
command, the socket, and back) costs time the model already counts as the drive's own command
overhead and transfer: it is measured with the zero model, and with a path credit C every reply
leaves C before the model's completion time (never before its request came): the guest, which
gets it a path later, sees the model's time, and the model sees the guest's next request arrive
when the previous one completed, as a host with no path in between would send it.

    python -m ioaz.testbed.modeldisk --model wd500 --socket S --backing F [--ncq 32] [--stats J]
"""
from __future__ import annotations

import argparse
import errno
import heapq
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ioaz.sim.devices import Device, device_from_dict, load_device, model_names
from ioaz.sim.request import SECTOR, Request
from ioaz.sim.results import LatencyHistogram
from ioaz.testbed import nbd
from ioaz.testbed.errors import TestbedError

ZERO = "zero"          # the model that serves at arrival: what the VM path alone costs
SPIN_S = 0.0002        # a timer's last 200 us are spun: a sleep overshoots by 50-100 us here
DEFAULT_NCQ = 32       # a SATA drive's NCQ depth; the guest's device/queue_depth bounds it further
ZEROS = memoryview(bytes(nbd.MAX_LENGTH))   # calloc'd: untouched pages cost no memory
PENDING_SUFFIX = ".new"   # the socket's name until it listens (Server)


def make_device(model: str, ncq: int, size_bytes: int | None) -> Device:
    if model == ZERO:
        cap = (size_bytes or 8 << 30) / 1e9
        return device_from_dict({"kind": "fixed", "service_ms": 0.0, "capacity_gb": cap,
                                 "queue_depth": ncq}, where="zero model")
    if model not in model_names():
        raise TestbedError(f"unknown disk model {model!r}; known: {ZERO}, "
                           + ", ".join(model_names()))
    return load_device(model, queue_depth=ncq)


@dataclass
class Stats:
    requests: int = 0
    reads: int = 0
    writes: int = 0
    bytes: int = 0
    busy_s: float = 0.0                    # the head's modelled busy time
    seek_sectors: int = 0                  # distance from the previous request's end, summed
    # real completion - modelled, seconds: a histogram, so that an hour's run keeps no list
    lateness: LatencyHistogram = field(default_factory=LatencyHistogram)
    late_max: float = 0.0

    def late(self, seconds: float) -> None:
        self.lateness.add(seconds)
        self.late_max = max(self.late_max, seconds)

    def summary(self, capacity_sectors: int, elapsed_s: float) -> dict[str, Any]:
        def q(p: float) -> float | None:
            v = self.lateness.percentile(p)
            return None if v is None else round(v * 1e6, 1)
        n = max(1, self.requests)
        return {"requests": self.requests, "reads": self.reads, "writes": self.writes,
                "bytes": self.bytes, "elapsed_s": round(elapsed_s, 3),
                "modelled_busy_s": round(self.busy_s, 3),
                "utilisation": round(self.busy_s / elapsed_s, 3) if elapsed_s > 0 else None,
                "mean_seek_pct_of_disk": round(100 * self.seek_sectors / n / capacity_sectors, 2),
                "lateness_us": {"p50": q(0.5), "p99": q(0.99),
                                "max": round(self.late_max * 1e6, 1) if self.requests else None}}


class RealTimeDisk:
    """One simulated device on a real clock. Arrivals come from the connection threads; this
    object's thread feeds them to the device in time order and fires the device's completion
    events when their time comes; completions go to `complete(rq, modelled_time)`."""

    def __init__(self, device: Device, complete: Callable[[Request, float], None],
                 credit_s: float = 0.0) -> None:
        self.dev = device
        self.credit = credit_s
        self.horizon = 0.0           # the model's present: it never takes an arrival before it
        self.arrived: dict[int, float] = {}   # real arrival of each request in the model
        self.complete = complete
        self.t0 = time.monotonic()
        self.cond = threading.Condition()
        self.arrivals: list[Request] = []
        self.events: list[tuple[float, int, Callable[[float, Any], None], Any]] = []
        self.seq = 0
        self.stopping = False
        self.stats = Stats()
        self.last_end = 0            # sector after the last completed request
        self.last_done = 0.0         # modelled time of the last completion
        device.bind(self._at, self._done)
        self.thread = threading.Thread(target=self._loop, name="disk", daemon=True)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def submit(self, rq: Request) -> None:
        with self.cond:
            now = self.now()
            self.arrived[id(rq)] = now
            # replies leave early by the credit, so the model may already be past `now`
            rq.submit = max(now, self.horizon)
            self.arrivals.append(rq)
            self.cond.notify()

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify()

    def _at(self, t: float, fn: Callable[[float, Any], None], arg: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, fn, arg))

    def _done(self, rq: Request, t: float) -> None:
        s = self.stats
        s.requests += 1
        s.bytes += rq.nbytes
        if rq.write:
            s.writes += 1
        else:
            s.reads += 1
        s.busy_s += t - max(rq.submit, self.last_done)
        s.seek_sectors += abs(rq.sector - self.last_end)
        self.last_end, self.last_done = rq.end, t
        # how late the reply leaves: after its modelled time less the credit, or after its
        # arrival if that comes later
        s.late(self.now() - max(t - self.credit, self.arrived.pop(id(rq), t)))
        self.complete(rq, t)

    def _loop(self) -> None:
        while True:
            with self.cond:
                while True:
                    if self.stopping:
                        return
                    now = self.now()
                    # the model sees arrivals and its own events in time order
                    if self.arrivals and (not self.events or self.arrivals[0].submit
                                          <= self.events[0][0]):
                        rq = self.arrivals.pop(0)
                        self.horizon = max(self.horizon, rq.submit)
                        self.dev.submit(rq, rq.submit)
                        continue
                    if self.events and self.events[0][0] - self.credit <= now:
                        t, _, fn, arg = heapq.heappop(self.events)
                        self.horizon = max(self.horizon, t)
                        fn(t, arg)
                        continue
                    if not self.events:
                        self.cond.wait()
                        continue
                    deadline = self.events[0][0] - self.credit
                    wait = deadline - now
                    if wait <= SPIN_S:
                        break
                    self.cond.wait(wait - SPIN_S)
            # spin to the deadline without the lock (arrivals may come in meanwhile), yielding
            # the GIL each turn so the connection and sender threads are not held up
            while self.now() < deadline:
                time.sleep(0)


class _Stored:
    """A write's data on its way into the backing file: the connection thread stores them, the
    sender waits for that before it replies (with EIO or ENOSPC if the host refused them)."""

    __slots__ = ("done", "err")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.err = 0

    def store(self, fd: int, data: bytes, offset: int) -> None:
        try:
            os.pwrite(fd, data, offset)
        except OSError as e:
            self.err = nbd.ENOSPC if e.errno == errno.ENOSPC else nbd.EIO
        finally:
            self.done.set()

    def wait(self) -> int:
        self.done.wait()
        return self.err


class Server:
    """The NBD export: connection threads read requests and store what is written in the
    backing file while the model serves it (a read after the reply sees the data), and replies
    leave from one sender thread, in completion order, when the model says the request is done."""

    def __init__(self, model: str, sock_path: Path, backing: Path, size_bytes: int | None,
                 ncq: int = DEFAULT_NCQ, credit_s: float = 0.0) -> None:
        self.device = make_device(model, ncq, size_bytes)
        capacity = self.device.capacity_sectors * SECTOR
        self.size = min(size_bytes, capacity) if size_bytes else capacity
        self.size -= self.size % 4096
        self.model = model
        self.backing = backing
        self.fd = os.open(backing, os.O_RDWR | os.O_CREAT, 0o600)
        if os.fstat(self.fd).st_size < self.size:
            os.ftruncate(self.fd, self.size)     # sparse: only what the guest writes is stored
        # The model does the drive's read-ahead; the host's own (8 MiB on this host's disk)
        # would zero-fill megabytes of page cache at once every few requests of a sequential
        # reader: a 17 ms stall every 93 ms measured, which cost sequential reads 20%.
        os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_RANDOM)
        self.sock_path = sock_path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Bound under another name and renamed once it listens: whoever waits for the path to
        # appear (ModelDiskHandle, qemu) never connects between bind and listen, which is
        # refused (ECONNREFUSED; seen in CI on a loaded host).
        pending = sock_path.with_name(sock_path.name + PENDING_SUFFIX)
        pending.unlink(missing_ok=True)
        self.listener.bind(str(pending))
        self.listener.listen(4)
        os.rename(pending, sock_path)
        self.outbox: queue.Queue[tuple[Request, float] | None] = queue.Queue()
        self.disk = RealTimeDisk(self.device, lambda rq, t: self.outbox.put((rq, t)), credit_s)
        self.started = time.monotonic()

    def serve_forever(self) -> None:
        self.disk.thread.start()
        threading.Thread(target=self._sender, name="sender", daemon=True).start()
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        lock = threading.Lock()
        try:
            nbd.handshake(conn, self.size)
            while True:
                r = nbd.read_request(conn)
                if r.cmd == nbd.CMD_DISC:
                    return
                err = self._check(r)
                if err or r.cmd not in (nbd.CMD_READ, nbd.CMD_WRITE):
                    # flush: every write is on the model's media when it completes (no write
                    # cache); trim changes nothing a read may not return
                    with lock:
                        conn.sendall(nbd.reply_header(r.handle, err))
                    continue
                # The model's clock starts at arrival and the data lands in the backing file
                # while the model serves the request: the host's own cost of storing it (a
                # first write into a hole of the sparse file costs ~0.4 ms a 128 KiB on this
                # host, an overwrite 0.02 ms) is not the drive's, and paid before submitting it
                # made every write workload's first run up to a quarter slower than its next.
                # The reply waits for the data (the sender), so a read after it sees them.
                stored = _Stored() if r.cmd == nbd.CMD_WRITE else None
                sim = Request((conn, lock, r, stored), 0, r.offset // SECTOR,
                              max(1, (r.length + SECTOR - 1) // SECTOR),
                              r.cmd == nbd.CMD_WRITE, True, 0.0)
                self.disk.submit(sim)
                if stored is not None:
                    stored.store(self.fd, r.data, r.offset)
        except (nbd.ProtocolError, OSError):
            return
        finally:
            conn.close()

    def _check(self, r: nbd.Request) -> int:
        if r.offset + r.length > self.size or r.length > nbd.MAX_LENGTH:
            return nbd.EINVAL
        return 0

    def _sender(self) -> None:
        while (item := self.outbox.get()) is not None:
            rq, _ = item
            conn, lock, r, stored = cast(
                tuple[socket.socket, threading.Lock, nbd.Request, "_Stored | None"], rq.id)
            err = stored.wait() if stored is not None else 0
            data = self._read(r.offset, r.length) if r.cmd == nbd.CMD_READ else b""
            try:
                with lock:
                    conn.sendall(nbd.reply_header(r.handle, err))
                    if data:
                        conn.sendall(data)
            except OSError:
                pass

    def _read(self, offset: int, length: int) -> bytes | memoryview:
        """What the guest reads: a range it never wrote is a hole in the backing file, answered
        from a buffer of zeros without putting pages of zeros in the host's page cache."""
        try:
            hole = os.lseek(self.fd, offset, os.SEEK_DATA) >= offset + length
        except OSError as e:
            hole = e.errno == errno.ENXIO        # no data at or after offset
        return ZEROS[:length] if hole else os.pread(self.fd, length, offset)

    def stats(self) -> dict[str, Any]:
        with self.disk.cond:
            s = self.disk.stats.summary(self.device.capacity_sectors,
                                        time.monotonic() - self.started)
        return {"model": self.model, "size_bytes": self.size, "ncq": self.device.queue_depth,
                "path_credit_us": round(self.disk.credit * 1e6, 1), **s}

    def close(self) -> None:
        self.disk.stop()
        self.outbox.put(None)
        self.listener.close()
        os.close(self.fd)


# --------------------------------------------------------------- the process and its handle


class ModelDiskHandle:
    """A model disk served by its own process (its timers do not share a GIL with the caller)."""

    def __init__(self, model: str, workdir: Path, name: str, size_bytes: int | None,
                 ncq: int = DEFAULT_NCQ, credit_us: float = 0.0) -> None:
        self.rundir = Path(tempfile.mkdtemp(prefix="ioaz-md-"))   # short: a socket path's limit
        self.sock = self.rundir / "nbd.sock"
        self.stats_path = Path(workdir) / f"{name}-{model}-stats.json"
        disks_dir = Path(__file__).resolve().parents[3] / "build" / "testbed" / "disks"
        disks_dir.mkdir(parents=True, exist_ok=True)
        self.backing = disks_dir / f"{name}-{os.getpid()}.raw"
        cmd = [sys.executable, "-m", "ioaz.testbed.modeldisk", "--model", model,
               "--socket", str(self.sock), "--backing", str(self.backing),
               "--stats", str(self.stats_path), "--ncq", str(ncq),
               "--path-credit-us", str(credit_us)]
        if size_bytes:
            cmd += ["--size", str(size_bytes)]
        self.log = Path(workdir) / f"{name}-modeldisk.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 20
        while not self.sock.exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                self.stop()
                raise TestbedError(f"the model disk {model} did not start: "
                                   + self.log.read_text()[-500:])
            time.sleep(0.05)

    def qemu_drive(self, node_id: str) -> str:
        return (f"if=none,id={node_id},format=raw,file.driver=nbd,file.server.type=unix,"
                f"file.server.path={self.sock}")

    def stop(self) -> dict[str, Any]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.backing.unlink(missing_ok=True)
        self.sock.unlink(missing_ok=True)
        try:
            self.rundir.rmdir()
        except OSError:
            pass
        try:
            return dict(json.loads(self.stats_path.read_text()))
        except (OSError, ValueError):
            return {}


def start_model_disk(model: str, workdir: Path, name: str, size_bytes: int | None,
                     credit_us: float = 0.0) -> ModelDiskHandle:
    make_device(model, DEFAULT_NCQ, size_bytes)    # an unknown model fails here, with the list
    return ModelDiskHandle(model, workdir, name, size_bytes, credit_us=credit_us)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ioaz.testbed.modeldisk", description=__doc__
                                .splitlines()[0])
    p.add_argument("--model", required=True, help=f"{ZERO} or one of: {', '.join(model_names())}")
    p.add_argument("--socket", required=True, type=Path, help="the unix socket to serve NBD on")
    p.add_argument("--backing", required=True, type=Path, help="the data file (made sparse)")
    p.add_argument("--size", type=int, help="export size in bytes (default: the model's)")
    p.add_argument("--ncq", type=int, default=DEFAULT_NCQ,
                   help="commands the drive holds and reorders (default 32)")
    p.add_argument("--stats", type=Path, help="write the statistics here as JSON on SIGTERM")
    p.add_argument("--path-credit-us", type=float, default=0.0, metavar="US",
                   help="the VM path's cost per request, taken off the model's time (default 0)")
    a = p.parse_args(argv)
    try:
        if len(str(a.socket)) + len(PENDING_SUFFIX) > 107:
            raise TestbedError(f"--socket {a.socket}: a unix socket path has at most 107 bytes, "
                               f"and this one is bound as PATH{PENDING_SUFFIX} first")
        if not 0 <= a.path_credit_us <= 100_000:
            raise TestbedError(f"--path-credit-us {a.path_credit_us}: expected 0..100000")
        server = Server(a.model, a.socket, a.backing, a.size, a.ncq, a.path_credit_us / 1e6)
    except (TestbedError, OSError, ValueError) as e:
        print(f"modeldisk: {e}", file=sys.stderr)
        return 2

    def finish(*_: object) -> None:
        stats = server.stats()
        server.close()
        if a.stats:
            a.stats.write_text(json.dumps(stats, indent=1) + "\n")
        print(json.dumps(stats), flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    # a thread waiting for the GIL waits up to the switch interval (5 ms by default): as long as
    # a short seek; the disk, connection and sender threads hand over far more often
    sys.setswitchinterval(0.0002)
    print(json.dumps({"serving": str(a.socket), "model": a.model, "size": server.size,
                      "ncq": server.device.queue_depth}), flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
