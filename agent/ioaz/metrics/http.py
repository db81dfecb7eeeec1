"""The /metrics endpoint: a private registry holding only the ioaz collector, on HOST:PORT.

Default 127.0.0.1:19647 (deploy/ioaz.yaml). Prometheus's list of default exporter ports
(github.com/prometheus/prometheus/wiki/Default-port-allocations) has used up 9100-9999, and it
asks exporters of internal applications to stay outside its range, so ioaz listens above it.
"""
from __future__ import annotations

import errno
import logging
import socket
import threading
import time
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, ProcessCollector, make_wsgi_app

from .collector import IoazCollector

log = logging.getLogger("ioaz.metrics")

DEFAULT_LISTEN = "127.0.0.1:19647"


def parse_listen(text: str) -> tuple[str, int]:
    """"HOST:PORT" or "[v6]:PORT" -> (host, port); ValueError with the reason."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"metrics listen address {text!r}: expected HOST:PORT")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def make_registry(daemon: Any) -> CollectorRegistry:
    """ioaz's families, and the process's own (CPU seconds, memory, descriptors: process_*,
    as every Prometheus exporter has them), nothing of the interpreter's."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(IoazCollector(daemon))
    ProcessCollector(registry=registry)
    return registry


# A scrape is one short request: a handful of Prometheus servers at a time, each done in well
# under a second. Anything beyond is refused at once, and a connection that has not finished its
# request by the deadline is cut, so idle or trickling clients cannot pin descriptors and
# threads the window loop needs (any local user can connect to the port).
MAX_CONNECTIONS = 16
REQUEST_DEADLINE_S = 5.0
EMFILE_BACKOFF_S = 0.2


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True      # a stuck scraper never holds up the daemon's exit

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.refused = 0

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            return super().get_request()
        except OSError as e:
            # out of descriptors: the listening socket stays readable, so without a pause
            # serve_forever would spin on accept at full CPU
            if e.errno in (errno.EMFILE, errno.ENFILE):
                time.sleep(EMFILE_BACKOFF_S)
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.refused += 1
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        cut = threading.Timer(REQUEST_DEADLINE_S, _cut, (request,))
        cut.daemon = True
        cut.start()
        try:
            super().process_request_thread(request, client_address)
        finally:
            cut.cancel()
            self.slots.release()


def _cut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass                   # one line per scrape would drown the journal


class MetricsServer:
    def __init__(self, httpd: Any, thread: threading.Thread, address: tuple[str, int]):
        self.httpd, self.thread, self.address = httpd, thread, address

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def start_metrics_server(daemon: Any, listen: str) -> MetricsServer:
    """Serve the daemon's metrics in a background thread; .close() stops it."""
    host, port = parse_listen(listen)
    # Our own server rather than start_http_server: its return value differs between the
    # prometheus-client of PyPI and Debian's 0.16 (which `make install` runs on).
    httpd = make_server(host, port, make_wsgi_app(make_registry(daemon)),
                        _Server6 if ":" in host else _Server, handler_class=_Quiet)
    thread = threading.Thread(target=httpd.serve_forever, name="ioaz-metrics", daemon=True)
    thread.start()
    bound = httpd.server_address[:2]
    log.info('{"event": "metrics", "listen": "%s:%d"}', bound[0], bound[1])
    return MetricsServer(httpd, thread, (str(bound[0]), int(bound[1])))
