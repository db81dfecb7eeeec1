"""The /metrics endpoint: a private registry holding only the ioaz collector, on HOST:PORT.

Default 127.0.0.1:19647 (deploy/ioaz.yaml). Prometheus's list of default exporter ports
(github.com/prometheus/prometheus/wiki/Default-port-allocations) has used up 9100-9999, and it
asks exporters of internal applications to stay outside its range, so ioaz listens above it.
"""
from __future__ import annotations

import logging
import socket
import threading
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

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
    registry = CollectorRegistry(auto_describe=False)
    registry.register(IoazCollector(daemon))
    return registry


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True      # a stuck scraper never holds up the daemon's exit


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
