"""A recording, fault-injecting proxy in front of an existing Kubernetes API server: what
the embedded server's request log and fault injection give the simulation, on any
cluster.

The programs under test get a kubeconfig naming the proxy (plain HTTP on 127.0.0.1, no
credentials: :meth:`ApiProxy.write_kubeconfig`); it forwards each request to the
cluster with the real kubeconfig's address, TLS settings and credentials (those of the
official client, refreshed per request as it refreshes an exec plugin's token), relays
the answer (a watch chunk by chunk, as it comes) and records the request as the
embedded server records one (``RequestRecord``: verb, resource, name, subresource,
body, status), so the report counts the same traffic and a failover is timed from the
same Lease writes. :meth:`ApiProxy.inject_fault` and :meth:`ApiProxy.drop_watches` do
what the embedded server's do, at the proxy: the simulation's ``--faults`` and the
soak's API faults land on the programs' requests whatever the server.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import yaml
from kubernetes import client

from ersctl.testing.apiserver import RequestLog, RequestRecord, errors
from ersctl.testing.apiserver.hooks import Fault, Faults
from ersctl.testing.apiserver.watching import encode, event_line
from ersctl.testing.objects import auth_headers, http_client

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}
# Hop-by-hop headers and what the proxy sets itself.
_NOT_FORWARDED = frozenset(
    ("host", "authorization", "connection", "content-length", "transfer-encoding",
     "accept-encoding", "keep-alive")
)  # fmt: skip


def describe(method: str, path: str, query: dict[str, list[str]]) -> dict[str, Any]:
    """The verb, resource, namespace, name and subresource of a request under /api or
    /apis (none for other paths), as the embedded server's request log names them."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) > 2:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) > 3:
        rest = parts[3:]
    else:
        return {}
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource, name, subresource = [*rest, None, None, None][:3]
    watching = (query.get("watch") or [""])[0] in ("true", "1")
    if method == "GET":
        verb = "watch" if watching else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(method, "")
    return {
        "verb": verb,
        "resource": resource,
        "namespace": namespace,
        "name": name,
        "subresource": subresource,
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, proxy: ApiProxy) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.proxy = proxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A program killed mid-request (the soak's SIGKILLs) resets its connection.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ApiProxy:
    """Start with ``with ApiProxy(api_client):``; :attr:`url` is valid inside."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.request_log = RequestLog()
        self._faults = Faults()
        self._api_client = api_client
        self._upstream = http_client(api_client, timeout=httpx.Timeout(30.0, read=None))
        self._streams: set[httpx.Response] = set()
        self._lock = threading.Lock()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="api-proxy", daemon=True
        )

    def __enter__(self) -> ApiProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop_watches()
        self._server.shutdown()
        self._server.server_close()
        self._upstream.close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig naming the proxy (no credentials: it adds the cluster's)."""
        name = "gha-scaleset-simulation"
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": name, "user": {}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
        }
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return path

    # -- the embedded server's hooks, at the proxy ---------------------------------------

    def inject_fault(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
        code: int = 500,
        times: int = 1,
        latency: float = 0.0,
    ) -> Fault:
        """As ``ApiServer.inject_fault``, for the requests passing through."""
        fault = Fault(
            verb=verb,
            resource=resource,
            name=name,
            subresource=subresource,
            code=code,
            times=times,
            latency=latency,
        )
        self._faults.add(fault)
        return fault

    def drop_watches(self, resource: str | None = None) -> None:
        """End every watch relayed now (whatever ``resource``): each client watches
        again from where it was."""
        with self._lock:
            streams, self._streams = list(self._streams), set()
        for stream in streams:
            with contextlib.suppress(Exception):
                stream.close()

    # -- the handler's work -----------------------------------------------------------------

    def forward(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> httpx.Response:
        """Send the request upstream with the cluster's credentials; the answer streams."""
        headers = {k: v for k, v in headers.items() if k.lower() not in _NOT_FORWARDED}
        headers.update(auth_headers(self._api_client.configuration))
        request = self._upstream.build_request(method, target, headers=headers, content=body)
        response = self._upstream.send(request, stream=True)
        with self._lock:
            self._streams.add(response)
        return response

    def release(self, response: httpx.Response) -> None:
        with self._lock:
            self._streams.discard(response)
        response.close()

    def take_fault(self, described: dict[str, Any]) -> Fault | None:
        if not described:
            return None
        return self._faults.take(
            described["verb"], described["resource"], described["name"], described["subresource"]
        )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log is the record

    def do_GET(self) -> None:
        self._relay()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _relay(self) -> None:
        proxy = self.server.proxy
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        described = describe(self.command, url.path, query)
        body = self._body()

        def record(status: int) -> None:
            proxy.request_log.append(
                RequestRecord(
                    method=self.command,
                    path=url.path,
                    query=query,
                    content_type=self.headers.get("Content-Type", ""),
                    body=body,
                    status=status,
                    **described,
                )
            )

        if self._faulted(proxy.take_fault(described), described, record):
            return
        try:
            response = proxy.forward(self.command, self.path, dict(self.headers.items()), body)
        except httpx.HTTPError as exc:
            status = errors.StatusError(503, "ServiceUnavailable", f"the cluster: {exc}")
            record(503)
            self._send(503, encode(status.status), "application/json")
            return
        try:
            record(response.status_code)
            self._answer(response)
        finally:
            proxy.release(response)

    def _faulted(self, fault: Fault | None, described: dict[str, Any], record: Any) -> bool:
        """Apply an injected fault: True when it answered the request itself."""
        if fault is None:
            return False
        if fault.latency > 0:
            time.sleep(fault.latency)
            return False
        if described.get("verb") == "watch" and fault.code == 410:
            # As from the watch cache: a 200 stream whose only event is Expired.
            expired = errors.expired("too old resource version (injected fault)").status
            record(200)
            self._send(200, event_line("ERROR", encode(expired)), "application/json")
            return True
        record(fault.code)
        self._send(fault.code, encode(errors.injected(fault.code).status), "application/json")
        return True

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _answer(self, response: httpx.Response) -> None:
        streaming = "content-length" not in response.headers
        self.send_response(response.status_code)
        for key, value in response.headers.multi_items():
            if key.lower() not in _NOT_FORWARDED and key.lower() != "content-encoding":
                self.send_header(key, value)
        if not streaming:
            payload = response.read()
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in response.iter_raw():
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
        except (httpx.HTTPError, httpx.StreamError, OSError):
            self.close_connection = True  # the stream was dropped: end it as a server would
        with contextlib.suppress(OSError):
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
