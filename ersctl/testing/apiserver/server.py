"""The :class:`ApiServer` facade: lifecycle, kubeconfig, client, test hooks, direct
object access."""

from __future__ import annotations

import base64
import functools
import json
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import yaml

from ersctl.testing.apiserver import errors, patching
from ersctl.testing.apiserver.controllers import Controller, Worker
from ersctl.testing.apiserver.gc import GarbageCollector
from ersctl.testing.apiserver.hooks import Authorization, Authorizer, Fault, Faults, RequestLog
from ersctl.testing.apiserver.namespaces import NamespaceController
from ersctl.testing.apiserver.records import DeleteOptions
from ersctl.testing.apiserver.resources import CRD_TYPE, Registry, ResourceType
from ersctl.testing.apiserver.selectors import parse_label_selector
from ersctl.testing.apiserver.serving import Authentication, Backend, KubeHTTPServer, ServerTLS
from ersctl.testing.apiserver.store import Store, Template

JsonObject = dict[str, Any]

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


PROJECT_CRDS: Final = Path(__file__).with_name("project_crds.json")
"""The project's CRD manifests as JSON, written with them by ``python -m
ersctl.crds.generate`` (whose ``--check``, run by the suite, fails when the copy is not
what the manifests parse to): loading it costs a few milliseconds, parsing their YAML
~170 ms, and every test worker, standalone server and simulation starts a server."""


@functools.cache
def _project_crds() -> tuple[Template, ...]:
    """The project's CRDs as a server stores them, prepared once per process: most tests
    start a server, and decoding, copying and encoding them was most of its start."""
    documents: list[JsonObject] = json.loads(PROJECT_CRDS.read_text(encoding="utf-8"))
    return tuple(Template(CRD_TYPE, crd) for crd in documents)


class ApiServer:
    """An in-process Kubernetes API server on real HTTP (see the package docstring).

    Use as a context manager or call :meth:`start` / :meth:`stop`. The direct-access
    methods have the same semantics as the HTTP API (resourceVersion, generation,
    finalizers, watch events) and raise :class:`StatusError` where the HTTP API would
    answer with an error status.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        crds: bool = True,
        gc: bool = True,
        history_limit: int = 10_000,
        tls: ServerTLS | None = None,
        authentication: Authentication | None = None,
    ) -> None:
        """``gc``: also do what kube-controller-manager does for the API: collect the
        garbage (dependents of deleted owners), empty and remove deleted namespaces
        (Terminating meanwhile), keep a ServiceAccount ``default`` in every namespace.
        Without it the server behaves as a bare kube-apiserver (as envtest runs one):
        dependents stay, a deleted namespace stays Terminating with its contents.
        ``history_limit``: watch events retained per resource; a watch from an older
        resourceVersion gets 410 Expired, as from a real server's bounded watch cache.
        ``tls``: serve HTTPS; ``authentication``: what every request must carry (for
        tests of clients' credentials; without it any request is served)."""
        self._address = (host, port)
        self._tls = tls
        self._authentication = authentication
        self.request_log = RequestLog()
        self._faults = Faults()
        self._authorization = Authorization()
        self._registry = Registry()
        self._store = Store(self._registry, history_limit=history_limit)
        self._worker = Worker() if gc else None
        self._controllers: list[Controller] = []
        if self._worker is not None:
            self._controllers = [
                GarbageCollector(self._store, self._worker),
                NamespaceController(self._store, self._worker),
            ]
        self._http: KubeHTTPServer | None = None
        self._thread: threading.Thread | None = None
        for name in INITIAL_NAMESPACES:
            self._store.create(self._resolve("namespaces"), "", {"metadata": {"name": name}})
        if crds:
            for crd in _project_crds():
                self._store.create_from(CRD_TYPE, crd)

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> ApiServer:
        """Bind and serve on a background thread. Returns self."""
        if self._http is not None:
            return self
        backend = Backend(
            self._store,
            self.request_log,
            self._faults,
            self._authorization,
            self._authentication,
        )
        self._http = KubeHTTPServer(
            self._address, backend, None if self._tls is None else self._tls.context
        )
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="apiserver-http",
            daemon=True,
        )
        self._thread.start()
        for controller in self._controllers:
            controller.start()
        if self._worker is not None:
            self._worker.start()
        return self

    def stop(self) -> None:
        """Stop serving: end watches, close connections, stop the collector."""
        if self._http is None:
            return
        self._store.close_watchers()
        self._http.shutdown()
        self._http.close_connections()
        self._http.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for controller in self._controllers:
            controller.stop()
        if self._worker is not None:
            self._worker.stop()
        self._http = None

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https`` with ``tls``); valid after :meth:`start`."""
        if self._http is None:
            raise RuntimeError("the API server is not started")
        host, port = self._http.server_address[:2]
        return f"{'http' if self._tls is None else 'https'}://{host!s}:{port}"

    # -- clients -------------------------------------------------------------

    def kubeconfig(self) -> JsonObject:
        """A kubeconfig (context ``ersctl-testing``, namespace ``default``) for this
        server, as a document."""
        name = "ersctl-testing"
        cluster: JsonObject = {"server": self.url}
        if self._tls is not None and self._tls.ca_pem:
            ca = base64.b64encode(self._tls.ca_pem.encode()).decode()
            cluster["certificate-authority-data"] = ca
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": cluster}],
            "users": [{"name": name, "user": {}}],
            "contexts": [
                {"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}
            ],
            "current-context": name,
            "preferences": {},
        }

    def write_kubeconfig(self, path: Path, *, token: str | None = None) -> Path:
        """Write :meth:`kubeconfig` (its user presenting ``token``) to ``path``; returns
        the path."""
        doc = self.kubeconfig()
        if token:
            doc["users"][0]["user"] = {"token": token}
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return path

    def api_client(self) -> Any:
        """A new ``kubernetes.client.ApiClient`` for this server (caller closes it); a
        server with ``tls`` or ``authentication`` is reached through a kubeconfig that
        carries what it asks for instead."""
        if self._tls is not None or self._authentication is not None:
            raise RuntimeError("write a kubeconfig with the credentials this server asks for")
        # Imported here: the server itself never needs the client, and loading it is half
        # the start of a standalone server or a simulation (about 0.25 s of CPU).
        import kubernetes.client

        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        return kubernetes.client.ApiClient(configuration=configuration)

    # -- test hooks ------------------------------------------------------------

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
        hold: threading.Event | None = None,
    ) -> Fault:
        """Fail the next ``times`` requests (-1: every one until :meth:`clear_faults`;
        it then shadows faults armed after it) matching all given filters with ``code``
        (a Status body, nothing changed), or, when ``latency`` > 0, delay them by
        ``latency`` seconds and then serve them normally, or, with ``hold``, keep each
        one waiting until ``hold`` is set and then serve it normally (its ``taken``
        event says one arrived). A 410 on a watch arrives as the real server sends it:
        a 200 stream whose only event is an ERROR (Expired). Returns the armed fault."""
        fault = Fault(
            verb=verb,
            resource=resource,
            name=name,
            subresource=subresource,
            code=code,
            times=times,
            latency=latency,
            hold=hold,
        )
        self._faults.add(fault)
        return fault

    def clear_faults(self) -> None:
        """Disarm every injected fault (requests in flight keep theirs)."""
        self._faults.clear()

    def authorize(self, authorizer: Authorizer | None) -> None:
        """Check every HTTP resource request with ``authorizer`` from now on (None: allow
        all, the default): a request it denies is answered 403 Forbidden with its reason,
        before anything else (faults included). Direct access is not checked."""
        self._authorization.set(authorizer)

    def set_watch_delay(self, resource: str, seconds: float) -> None:
        """Deliver watch events of ``resource`` (plural) ``seconds`` after their
        commit, to every watcher, keeping their order; other resources are unaffected.
        0 restores immediate delivery."""
        self._store.set_delay(self._resolve(resource), seconds)

    def drop_watches(self, resource: str | None = None) -> None:
        """End every open watch stream (of ``resource``, a plural, when given), as a
        restarting API server or a load balancer does: each client watches again from
        its last resourceVersion (pair with a 410 fault on ``watch`` to make it relist)."""
        self._store.close_watchers(None if resource is None else self._resolve(resource))

    def wait_for_gc(self, timeout: float = 5.0) -> bool:
        """Wait until the controllers (garbage collector, namespace controller) have
        nothing queued or scheduled. False on timeout."""
        return True if self._worker is None else self._worker.wait_idle(timeout)

    # -- direct access -----------------------------------------------------------

    def _resolve(self, resource: str) -> ResourceType:
        try:
            return self._registry.resolve(resource)
        except KeyError:
            served = ", ".join(sorted({rt.plural for rt in self._registry.all()}))
            raise errors.StatusError(
                404, "NotFound", f"unknown resource {resource!r} (served: {served})"
            ) from None

    def get_object(self, resource: str, namespace: str, name: str) -> JsonObject | None:
        """A copy of the object, or None when it does not exist."""
        try:
            entry = self._store.get(self._resolve(resource), namespace, name)
        except errors.StatusError as exc:
            if exc.code == 404:
                return None
            raise
        return dict(json.loads(entry.raw))

    def list_objects(
        self, resource: str, namespace: str | None = None, *, label_selector: str | None = None
    ) -> list[JsonObject]:
        """Copies of the objects (all namespaces when ``namespace`` is None) that
        ``label_selector`` selects (a list's ``labelSelector``; ValueError for a
        malformed one). Only those are copied: a caller polling for a few among many (a
        kubelet for its listener Pods among the runners') pays for the few."""
        selects = parse_label_selector(label_selector)
        entries, _ = self._store.list_entries(self._resolve(resource), namespace)
        return [json.loads(entry.raw) for entry in entries if selects is None or selects(entry.obj)]

    def create_object(self, resource: str, obj: JsonObject) -> JsonObject:
        """Create ``obj`` in its metadata's namespace (``default`` when it names none, as
        kubectl's default context does); returns the stored object."""
        rt = self._resolve(resource)
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        if rt.namespaced and not namespace:
            namespace = "default"
        entry = self._store.create(rt, namespace, obj)
        return dict(json.loads(entry.raw))

    def patch_object(
        self,
        resource: str,
        namespace: str,
        name: str,
        patch: JsonObject,
        *,
        subresource: str | None = None,
    ) -> JsonObject:
        """Apply a JSON merge patch (a ``metadata.resourceVersion`` in it is a
        precondition); returns the stored object."""
        rt = self._resolve(resource)
        entry = self._store.patch(
            rt, namespace, name, lambda current: patching.merge_patch(current, patch), subresource
        )
        return dict(json.loads(entry.raw))

    def delete_object(self, resource: str, namespace: str, name: str) -> None:
        """Delete (an object with finalizers only gets a deletionTimestamp). Raises
        :class:`StatusError` 404 when it does not exist."""
        self._store.delete(self._resolve(resource), namespace, name, DeleteOptions())
