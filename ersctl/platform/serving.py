"""The metrics and probe server both programs run: ``/metrics`` (Prometheus), ``/healthz``
(liveness) and ``/readyz`` (readiness) on one address.

Its address option is read by ``ersctl.platform.addresses``. An address this host
cannot listen on is a ``ConfigError`` naming the option and the address (exit 2); a port
already in use is :class:`AddressInUseError` (exit 1: a condition of the host that a
restart may clear). Probes answer 200 ``ok`` or 503 with the reason, as ``text/plain``;
other paths 404.
"""

from __future__ import annotations

import errno
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from ersctl.platform.errors import ConfigError, Failure
from ersctl.platform.probes import Probe, always_ok

log = logging.getLogger(__name__)


class AddressInUseError(Failure):
    """The metrics address is valid but its port is taken (exit 1)."""


class ProbeServer:
    """Serves one registry at ``endpoint`` and the two probes, on a daemon thread.

    ``option`` names the setting the address came from, for error messages; ``live``
    and ``ready`` are asked at each probe, from the server's threads. Without a
    ``registry`` it serves the probes only (a health address of its own, as
    controller-runtime's ``--health-probe-bind-address``).
    """

    def __init__(
        self,
        registry: CollectorRegistry | None,
        *,
        option: str,
        address: tuple[str, int],
        endpoint: str = "/metrics",
        live: Probe = always_ok,
        ready: Probe = always_ok,
    ) -> None:
        self._registry = registry
        self._option = option
        self._address = address
        self._endpoint = endpoint
        self._probes = {"/healthz": live, "/readyz": ready}
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`; port 0 picks one)."""
        assert self._server is not None, "start() first"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The metrics URL (after :meth:`start`)."""
        assert self._server is not None, "start() first"
        host = self._server.server_address[0]
        return f"http://{host!s}:{self.port}{self._endpoint}"

    def start(self) -> None:
        """Bind and serve. ConfigError (option, address) when the address cannot be
        bound (unknown host, not a local address, no permission); AddressInUseError
        when the port is taken."""
        handler = _handler_for(self._registry, self._endpoint, self._probes)
        try:
            self._server = ThreadingHTTPServer(self._address, handler)
        except OSError as exc:
            raise self._bind_error(exc) from None
        self._server.daemon_threads = True
        # shutdown() waits for the serving loop's next look: keep it short, it is on the
        # SIGTERM path (2 s budget).
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="probe-server",
            daemon=True,
        ).start()
        if self._registry is not None:
            log.info("serving metrics and probes", extra={"fields": {"url": self.url}})
        else:
            url = self.url.removesuffix(self._endpoint)
            log.info("serving probes", extra={"fields": {"url": f"{url}/healthz"}})

    def stop(self) -> None:
        """Stop serving and release the port; a no-op when not started."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _bind_error(self, exc: OSError) -> Failure:
        host, port = self._address
        shown = f"{host}:{port}"
        reason = exc.strerror or type(exc).__name__
        if exc.errno == errno.EADDRINUSE:
            return AddressInUseError(f"{self._option}: cannot listen on {shown!r}: {reason}")
        return ConfigError(self._option, f"cannot listen on {shown!r}: {reason}")


def _handler_for(
    registry: CollectorRegistry | None, endpoint: str, probes: dict[str, Probe]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == endpoint and registry is not None:
                self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry))
            elif path in probes:
                verdict = probes[path]()
                body = f"{verdict.reason}\n".encode()
                self._send(200 if verdict.ok else 503, "text/plain; charset=utf-8", body)
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found\n")

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # scrapes and probes are not worth a log line each

    return Handler
