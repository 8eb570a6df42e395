"""The HTTP layer: a ThreadingHTTPServer whose handler parses requests, applies test
faults, dispatches to discovery or :class:`~.verbs.Verbs`, writes the response (or a
chunked watch stream), and records every request in the request log.

Any failure becomes a ``metav1.Status`` body; unexpected exceptions are logged here
and answered with a generic 500, never a stack trace.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ersctl.testing.apiserver import discovery, errors, openapi_proto, routing
from ersctl.testing.apiserver.hooks import Access, Authorization, Faults, RequestLog, RequestRecord
from ersctl.testing.apiserver.messages import Call, Response, WatchResponse
from ersctl.testing.apiserver.openapi import Documents
from ersctl.testing.apiserver.routing import GroupVersionPath, ResourceRequest, parse_resource
from ersctl.testing.apiserver.store import Store
from ersctl.testing.apiserver.verbs import Verbs
from ersctl.testing.apiserver.watching import encode, event_line

log = logging.getLogger(__name__)

_POLL_SECONDS = 0.5


@dataclass(frozen=True, kw_only=True)
class ServerTLS:
    """HTTPS: the server's context (its certificate and key, and the CA of the client
    certificates it verifies, if any) and the PEM of the CA that signed its own
    certificate, for the kubeconfigs it writes."""

    context: ssl.SSLContext
    ca_pem: str


@dataclass(frozen=True, kw_only=True)
class Authentication:
    """What every request must carry (a test option, as a cluster asks for credentials:
    a request without them is 401): the bearer ``token``, or over TLS a client
    certificate the server's context verified (``client_certificates``)."""

    token: str | None = None
    client_certificates: bool = False

    def admits(self, authorization: str, peer_certificate: object) -> bool:
        if self.token is not None and authorization == f"Bearer {self.token}":
            return True
        return self.client_certificates and bool(peer_certificate)


class Backend:
    """What the handler needs from the server: store, verbs, hooks, authentication and
    authorization."""

    def __init__(
        self,
        store: Store,
        request_log: RequestLog,
        faults: Faults,
        authorization: Authorization | None = None,
        authentication: Authentication | None = None,
    ) -> None:
        self.store = store
        self.verbs = Verbs(store)
        self.openapi = Documents(store.registry)
        self.request_log = request_log
        self.faults = faults
        self.authorization = authorization or Authorization()
        self.authentication = authentication


class KubeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that goes away mid-connection (a stopped or killed program), or one
        # whose TLS handshake fails, is normal.
        if not isinstance(sys.exc_info()[1], ConnectionError | ssl.SSLError):
            super().handle_error(request, client_address)

    def __init__(
        self, address: tuple[str, int], backend: Backend, tls: ssl.SSLContext | None = None
    ) -> None:
        super().__init__(address, KubeRequestHandler)
        self.backend = backend
        self.tls = tls
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        if self.tls is not None:
            # The handshake happens on the request's own thread (KubeRequestHandler.setup).
            conn = self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, address

    def track(self, conn: socket.socket, alive: bool) -> None:
        with self._connections_lock:
            if alive:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def close_connections(self) -> None:
        """Shut down kept-alive client connections so their threads end."""
        with self._connections_lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


def _status_response(exc: errors.StatusError) -> Response:
    if exc.plain:
        return Response(exc.code, exc.message.encode(), "text/plain; charset=utf-8")
    return Response(exc.code, encode(exc.status))


class KubeRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, delayed ACKs add ~40 ms.
    disable_nagle_algorithm = True
    server: KubeHTTPServer

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        self.server.track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _read_body(self) -> bytes:
        """The request body (Content-Length or chunked); 400 when it cannot be read,
        and the connection is closed since its framing is lost."""
        try:
            return self._read_framed_body()
        except ValueError:
            self.close_connection = True
            raise errors.bad_request("the request body is not framed correctly") from None

    def _read_framed_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self) -> None:
        backend = self.server.backend
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        content_type = self.headers.get("Content-Type", "")
        body = b""
        record: dict[str, Any] = {}
        try:
            body = self._read_body()
            self._authenticate()
            result = self._dispatch(url.path, query, content_type, body, record)
        except errors.StatusError as exc:
            result = _status_response(exc)
        except Exception:  # a bug must not take the server down or leak a trace
            log.exception("%s %s failed", self.command, self.path)
            result = _status_response(errors.internal())
        status = 200 if isinstance(result, WatchResponse) else result.status
        backend.request_log.append(
            RequestRecord(
                method=self.command,
                path=url.path,
                query=query,
                content_type=content_type,
                body=body,
                status=status,
                **record,
            )
        )
        if isinstance(result, WatchResponse):
            self._stream(result)
        else:
            self._send(result)

    def _authenticate(self) -> None:
        authentication = self.server.backend.authentication
        if authentication is None:
            return
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        if not authentication.admits(self.headers.get("Authorization", ""), peer):
            raise errors.unauthorized()

    def _dispatch(
        self,
        path: str,
        query: dict[str, list[str]],
        content_type: str,
        body: bytes,
        record: dict[str, Any],
    ) -> Response | WatchResponse:
        backend = self.server.backend
        watch = (query.get("watch") or [""])[0] in ("true", "1")
        parsed = parse_resource(self.command, path, watch, backend.store.registry)
        if not isinstance(parsed, ResourceRequest):
            if self.command not in ("GET", "HEAD"):
                raise errors.method_not_allowed()
            return self._non_resource(path, parsed)
        record.update(
            verb=parsed.verb,
            resource=parsed.rt.plural,
            namespace=parsed.namespace,
            name=parsed.name,
            subresource=parsed.subresource,
        )
        denied = backend.authorization.denied(
            Access(
                verb=parsed.verb,
                group=parsed.rt.group,
                resource=parsed.rt.plural,
                subresource=parsed.subresource,
                namespace=parsed.namespace,
                name=parsed.name,
            )
        )
        if denied is not None:
            raise errors.forbidden(denied)
        fault = backend.faults.take(parsed.verb, parsed.rt.plural, parsed.name, parsed.subresource)
        if fault is not None:
            if fault.hold is not None:
                fault.hold.wait()
            elif fault.latency > 0:
                time.sleep(fault.latency)
            elif parsed.verb == "watch" and fault.code == 410:
                # Expiry reaches a watcher in the stream, as from the real watch cache.
                status = errors.expired("too old resource version (injected fault)").status
                return WatchResponse(None, time.monotonic(), event_line("ERROR", encode(status)))
            else:
                raise errors.injected(fault.code)
        call = Call(
            req=parsed,
            query=query,
            content_type=content_type,
            body=body,
            accept=self.headers.get("Accept", ""),
            user_agent=self.headers.get("User-Agent", ""),
        )
        return backend.verbs.handle(call)

    def _non_resource(self, path: str, parsed: GroupVersionPath | None) -> Response:
        registry = self.server.backend.store.registry
        doc: Any = None
        stripped = path.rstrip("/") or "/"
        if isinstance(parsed, GroupVersionPath):
            if parsed.version is None:
                doc = discovery.group(registry, parsed.group)
            else:
                doc = discovery.resource_list(registry, parsed.group, parsed.version)
        elif stripped == "/version":
            doc = discovery.VERSION_INFO
        elif stripped == "/api":
            host, port = self.server.server_address[:2]
            doc = discovery.core_versions(f"{host!s}:{port}")
        elif stripped == "/apis":
            doc = discovery.group_list(registry)
        elif stripped in ("/healthz", "/livez", "/readyz"):
            return Response(200, b"ok", "text/plain; charset=utf-8")
        elif stripped.startswith("/openapi/"):
            return self._openapi(stripped)
        if doc is None:
            group = parsed.group if isinstance(parsed, GroupVersionPath) else None
            raise routing.not_found(registry, group)
        return Response(200, encode(doc))

    def _openapi(self, path: str) -> Response:
        documents = self.server.backend.openapi
        if path == "/openapi/v2":
            media = openapi_proto.negotiate(self.headers.get("Accept", ""))
            if media is None:  # as kube-openapi: a bare 406
                raise errors.StatusError(406, "NotAcceptable", "", plain=True)
            if media == "application/json":
                return Response(200, documents.v2())
            return Response(200, documents.v2_protobuf(), media)
        if path == "/openapi/v3":
            return Response(200, documents.v3_root())
        parts = path.removeprefix("/openapi/v3/").split("/")
        found = None
        if len(parts) == 2 and parts[0] == "api":
            found = documents.v3("", parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            found = documents.v3(parts[1], parts[2])
        if found is None:
            raise errors.resource_not_found()
        return Response(200, found)

    def _send(self, response: Response) -> None:
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
            self.send_header("Cache-Control", "no-cache, private")
            for warning in response.warnings:
                quoted = warning.replace("\\", "\\\\").replace('"', '\\"')
                self.send_header("Warning", f'299 - "{quoted}"')
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except OSError:
            self.close_connection = True

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _maybe_bookmark(self, response: WatchResponse) -> None:
        bookmarks, watcher = response.bookmarks, response.watcher
        now = time.monotonic()
        if bookmarks is None or watcher is None or not bookmarks.due(now):
            return
        version = self.server.backend.store.bookmark_version(watcher)
        bookmarks.skip(now)  # due or not, the next chance is a minute (or the end) away
        if version is not None:
            self._chunk(bookmarks.line(version))
            watcher.seen = version

    def _stream(self, response: WatchResponse) -> None:
        store = self.server.backend.store
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            self.wfile.flush()
            if response.first:
                self._chunk(response.first)
            watcher = response.watcher
            while watcher is not None:
                line = watcher.next_line(response.deadline, _POLL_SECONDS)
                if line is not None:
                    self._chunk(line)
                elif watcher.closed or time.monotonic() >= response.deadline or self._client_gone():
                    break
                else:
                    self._maybe_bookmark(response)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True
        finally:
            if response.watcher is not None:
                store.unwatch(response.watcher)
