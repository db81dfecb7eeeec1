"""The /metrics endpoint: a private registry holding only the ioaz collector, on HOST:PORT.

Default 127.0.0.1:19647 (deploy/ioaz.yaml). Prometheus's list of default exporter ports
(github.com/prometheus/prometheus/wiki/Default-port-allocations) has used up 9100-9999, and it
asks exporters of internal applications to stay outside its range, so ioaz listens above it.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server

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
    httpd, thread = start_http_server(port, addr=host, registry=make_registry(daemon))
    bound = httpd.server_address[:2]
    log.info('{"event": "metrics", "listen": "%s:%d"}', bound[0], bound[1])
    return MetricsServer(httpd, thread, (str(bound[0]), int(bound[1])))
