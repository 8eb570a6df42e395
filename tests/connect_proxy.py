"""A small HTTP CONNECT proxy on loopback for tests: it records every tunnel asked of it.

Only CONNECT is served (HTTPS through a proxy is all the GitHub clients send); each
tunnel is recorded with its target and the credentials of its ``Proxy-Authorization``
before it is answered. ``hosts`` maps names the test made up (``ghes.test``) to the
address that answers for them, so a client can reach a local server only through
the proxy: the name resolves nowhere else. With ``credentials`` set, a CONNECT without
exactly those basic credentials is answered 407 (recorded all the same); the test may
change them at any time (a rotated proxy password). No third-party package: the proxy
is ~100 lines of socket code a test can read, and it sees every header as sent.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import socketserver
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Tunnel:
    """One CONNECT: ``target`` as asked (``host:port``), and the basic credentials of its
    ``Proxy-Authorization`` (None when it had none)."""

    target: str
    credentials: tuple[str, str] | None

    @property
    def host(self) -> str:
        return self.target.rpartition(":")[0]


class ConnectProxy:
    """Start with ``with ConnectProxy(...) as proxy``; ``proxy.url`` is ``http://127.0.0.1:<port>``."""

    def __init__(
        self,
        *,
        hosts: dict[str, str] | None = None,
        credentials: tuple[str, str] | None = None,
    ) -> None:
        self.hosts = dict(hosts or {})
        self.credentials = credentials
        self._lock = threading.Lock()
        self._tunnels: list[Tunnel] = []
        self._sockets: list[socket.socket] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._serve, name="connect-proxy", daemon=True)

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.05)

    def tunnels(self) -> list[Tunnel]:
        """Every CONNECT so far, in order."""
        with self._lock:
            return list(self._tunnels)

    def __enter__(self) -> ConnectProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:  # ends the pumps of tunnels a client still holds open
            sock.close()

    # -- used by the handler -------------------------------------------------------------

    def _record(self, tunnel: Tunnel) -> None:
        with self._lock:
            self._tunnels.append(tunnel)

    def _track(self, *sockets: socket.socket) -> None:
        with self._lock:
            self._sockets.extend(sockets)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy: ConnectProxy


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        proxy, client = self.server.proxy, self.request
        head = _read_head(client)
        if head is None:
            return
        method, target, headers = head
        tunnel = Tunnel(target=target, credentials=_basic(headers.get("proxy-authorization")))
        proxy._record(tunnel)
        proxy._track(client)
        if method != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        if proxy.credentials is not None and tunnel.credentials != proxy.credentials:
            client.sendall(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n'
            )
            return
        host, _, port = target.rpartition(":")
        try:
            upstream = socket.create_connection((proxy.hosts.get(host, host), int(port)), 5)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        proxy._track(upstream)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        pump = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        pump.start()
        _pump(client, upstream)
        pump.join(timeout=5)


def _read_head(sock: socket.socket) -> tuple[str, str, dict[str, str]] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    lines = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return method, target, headers


def _basic(header: str | None) -> tuple[str, str] | None:
    if not header or not header.lower().startswith("basic "):
        return None
    user, _, password = base64.b64decode(header[6:]).decode("utf-8").partition(":")
    return user, password


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes until either side closes, then close both."""
    with contextlib.suppress(OSError):
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    for sock in (source, sink):
        with contextlib.suppress(OSError):  # the other pump may have shut it already
            sock.shutdown(socket.SHUT_RDWR)
