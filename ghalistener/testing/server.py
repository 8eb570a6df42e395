"""The simulator over real HTTP: a threaded server answering like a GHES host.

One thread per connection (HTTP/1.1 keep-alive), so a held long poll does not block
other clients. Config URL for clients: ``<server.url>/<org>``. Given a server-side
``ssl.SSLContext`` it speaks HTTPS (to test custom root CAs). Requests in absolute form
(``GET http://host/path``) are served too, so it can stand in for an HTTP proxy. Given
``url_host``, its URLs (and those it hands out: the actions service, message queues)
name that host instead of the bound address: a name only a proxy in front of it
resolves, so that clients reach it only through the proxy.
"""

from __future__ import annotations

import logging
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ghalistener.testing.control import dispatch
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.service import SimRequest

log = logging.getLogger(__name__)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes; without TCP_NODELAY, Nagle and the
        # peer's delayed ACK add ~40 ms to every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        request = SimRequest(
            method=self.command,
            path=parts.path,
            query=dict(parse_qsl(parts.query)),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self.rfile.read(length) if length else b"",
            base_url=self.server.base_url,
        )
        response = dispatch(self.server.simulator, request)
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

    def log_message(self, format: str, *args: object) -> None:
        log.debug("simulator: " + format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    simulator: GitHubSimulator
    base_url: str

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that goes away mid-connection (a stopped or killed program) is normal.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class SimulatorServer:
    """A started/stoppable HTTP front end of one ``GitHubSimulator`` (context manager)."""

    def __init__(
        self,
        simulator: GitHubSimulator,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: ssl.SSLContext | None = None,
        url_host: str | None = None,
    ) -> None:
        self.simulator = simulator
        self._server = _Server((host, port), _Handler)
        self._server.simulator = simulator
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        bound_host, bound_port = self._server.server_address[:2]
        scheme = "https" if tls is not None else "http"
        self.port = int(bound_port)
        self.url = f"{scheme}://{url_host or bound_host!s}:{bound_port}"
        self._server.base_url = self.url
        self._thread = threading.Thread(target=self._serve, name="github-sim", daemon=True)

    def _serve(self) -> None:
        # A short poll interval makes stop() quick (tests start and stop many servers).
        self._server.serve_forever(poll_interval=0.05)

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def config_url(self, org: str = "my-org") -> str:
        """The GHES-style configuration URL of an organization on this server."""
        return f"{self.url}/{org}"

    def stop(self) -> None:
        """Release held long polls, stop serving and close the socket."""
        self.simulator.close()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> SimulatorServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def serve(
    simulator: GitHubSimulator,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    tls: ssl.SSLContext | None = None,
    url_host: str | None = None,
) -> SimulatorServer:
    """Start the threaded HTTP(S) server on ``simulator``; returns it (``.url``, ``.stop()``,
    a context manager). ``url_host``: see the module docstring."""
    server = SimulatorServer(simulator, host=host, port=port, tls=tls, url_host=url_host)
    server.start()
    return server
