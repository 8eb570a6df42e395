"""Prometheus metrics of the controller, and the HTTP server for them and for probes.

Each :class:`ControllerMetrics` owns its own ``CollectorRegistry`` (several managers
can live in one test process). The reconciler reports through the
``ersctl.ports.ReconcileMetrics`` methods; the runtime through the ``observe_*``
methods and the queue-depth callbacks it registers.

:class:`MetricsServer` serves ``/metrics``, ``/healthz`` (the process is alive and its
informers run) and ``/readyz`` (the caches have synced) on one address.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from ersctl.api import EphemeralRunnerSet

log = logging.getLogger(__name__)

_PREFIX: Final = "ersctl"


class ControllerMetrics:
    """The controller's metrics. Implements ``ersctl.ports.ReconcileMetrics``. Thread-safe."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.reconciles = Counter(
            f"{_PREFIX}_reconcile",
            "Reconciles by controller and result (success, error, requeue_after).",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            f"{_PREFIX}_reconcile_errors", "Reconciles that raised.", ["controller"], registry=r
        )
        self.reconcile_seconds = Histogram(
            f"{_PREFIX}_reconcile_duration_seconds",
            "Wall time of one reconcile.",
            ["controller"],
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.queue_depth = Gauge(
            f"{_PREFIX}_workqueue_depth", "Keys ready to reconcile.", ["controller"], registry=r
        )
        self.relists = Counter(
            f"{_PREFIX}_informer_relists",
            "Informer relists after a broken watch.",
            ["resource"],
            registry=r,
        )
        self.leader = Gauge(
            f"{_PREFIX}_leader", "1 while this process holds the leader lease.", registry=r
        )
        self.created = Counter(
            f"{_PREFIX}_runners_created",
            "EphemeralRunners created.",
            ["namespace", "name"],
            registry=r,
        )
        self.deleted = Counter(
            f"{_PREFIX}_runners_deleted",
            "EphemeralRunners deleted.",
            ["namespace", "name"],
            registry=r,
        )
        self.suppressed = Counter(
            f"{_PREFIX}_scale_up_suppressed",
            "Scale-ups suppressed because the patch ID "
            "was already serviced by a finished-runner cleanup.",
            ["namespace", "name"],
            registry=r,
        )

    # ersctl.ports.ReconcileMetrics
    def runners_created(self, ers: EphemeralRunnerSet, count: int) -> None:
        self.created.labels(ers.namespace, ers.name).inc(count)

    def runners_deleted(self, ers: EphemeralRunnerSet, count: int) -> None:
        self.deleted.labels(ers.namespace, ers.name).inc(count)

    def scale_up_suppressed(self, ers: EphemeralRunnerSet) -> None:
        self.suppressed.labels(ers.namespace, ers.name).inc()

    # runtime
    def observe_reconcile(self, controller: str, *, result: str, seconds: float) -> None:
        """Count one reconcile (``result``: success, error or requeue_after)."""
        self.reconciles.labels(controller, result).inc()
        self.reconcile_seconds.labels(controller).observe(seconds)
        if result == "error":
            self.reconcile_errors.labels(controller).inc()

    def track_queue_depth(self, controller: str, depth: Callable[[], int]) -> None:
        """Read ``depth()`` at every scrape."""
        self.queue_depth.labels(controller).set_function(lambda: float(depth()))

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """A sample's current value (0.0 when absent); for tests and the status CLI."""
        return self.registry.get_sample_value(name, labels or {}) or 0.0


class MetricsServer:
    """Serves ``/metrics``, ``/healthz`` and ``/readyz`` in a daemon thread.

    ``healthy`` and ``ready`` are asked at each probe; 200 when True, 503 otherwise.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        host: str = "0.0.0.0",
        port: int = 8080,
        healthy: Callable[[], bool] = lambda: True,
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        handler = _handler_class(registry, healthy=healthy, ready=ready)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics-server", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def parse_addr(addr: str) -> tuple[str, int] | None:
    """``host:port`` or ``:port`` -> (host, port); ``"0"`` or ``""`` -> None (disabled)."""
    if addr in ("", "0"):
        return None
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"metrics address {addr!r}: expected HOST:PORT, :PORT or 0")
    return (host or "0.0.0.0", int(port))


def _handler_class(
    registry: CollectorRegistry, *, healthy: Callable[[], bool], ready: Callable[[], bool]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path in ("/healthz", "/readyz"):
                ok = (healthy if path == "/healthz" else ready)()
                self._send(200 if ok else 503, b"ok\n" if ok else b"not ok\n", "text/plain")
            else:
                self._send(404, b"not found\n", "text/plain")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("metrics server: " + format, *args)

    return Handler
