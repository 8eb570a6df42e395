"""The real reconciler wired to the test's Kubernetes API (tests/kubeapi.py), driven
one pass at a time.

Everything the reconciler touches is real: list+watch informers feeding the cache,
the uncached API reader, the writer and the event recorder, all through the official
``kubernetes`` client over HTTP; GitHub is respx (``FakeGitHub``). The harness reads
and writes through the official client too, so it runs against a cluster as well. A
test calls :meth:`Cluster.reconcile` for one pass, after :meth:`Cluster.sync` has waited
until the cache holds what the server holds (unless the test wants the cache to lag).
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from prometheus_client import CollectorRegistry

from ersctl import api
from ersctl.arcclient.cache import CachedReader, cached_reader
from ersctl.arcclient.reader import ApiReader
from ersctl.arcclient.writer import Writer
from ersctl.ephemeralrunnerset.expectations import Expectations
from ersctl.ephemeralrunnerset.metrics import RunnerSetMetrics
from ersctl.ephemeralrunnerset.reconciler import EphemeralRunnerSetReconciler, Outcome
from ersctl.kube.client import Reader
from ersctl.kube.client import Writer as KubeWriter
from ersctl.kube.events import EventRecorder
from ersctl.kube.informer import Informer
from ersctl.kube.reconcile import Request
from ersctl.kube.resources import Resource
from ersctl.kube.store import OWNER_UID_INDEX, Store, controller_owner_uid
from ersctl.scaleset.clients import SecretRunnerServices
from ersctl.testing.apiserver import ApiServer
from ersctl.wiring import ControllerOptions, build_controller
from tests.ersctl.ephemeralrunnerset.github import PAT, FakeGitHub, no_sleep_client
from tests.ersctl.ephemeralrunnerset.objects import ers_doc
from tests.kubeapi import KubeApi
from tests.kubeclient import Sent, SentRequests, json_object
from tests.polling import eventually

SYNC_TIMEOUT = 5.0


@dataclass
class Cluster:
    """One API (the test's namespace in it), one reconciler, and helpers to arrange and
    inspect state."""

    kube: KubeApi
    github: FakeGitHub
    api_client: client.ApiClient = field(init=False)
    reconciler: EphemeralRunnerSetReconciler = field(init=False)
    cache: CachedReader = field(init=False)

    def __post_init__(self) -> None:
        self.namespace = self.kube.namespace
        self.api_client = self.kube.api_client()
        self.sent = SentRequests(self.api_client)
        self.custom = client.CustomObjectsApi(self.api_client)
        self.core = client.CoreV1Api(self.api_client)
        self._stop = threading.Event()
        self._informers = [self._informer(api.ERS_PLURAL), self._informer(api.ER_PLURAL)]
        self.cache = CachedReader(sets=self._informers[0].store, runners=self._informers[1].store)
        self.api_reader = ApiReader(Reader(self.api_client))
        self.writer = Writer(KubeWriter(self.api_client))
        self.services = SecretRunnerServices(
            get_secret=self.api_reader.get_secret,
            get_configmap=self.api_reader.get_configmap,
            client_factory=no_sleep_client,
        )
        self.metrics_registry = CollectorRegistry()
        self.metrics = RunnerSetMetrics(self.metrics_registry)
        self.reconciler = self.use_reconciler()
        self._threads = [
            threading.Thread(target=inf.run, args=(self._stop,), daemon=True)
            for inf in self._informers
        ]
        for thread in self._threads:
            thread.start()
        for informer in self._informers:
            assert informer.wait_for_sync(SYNC_TIMEOUT)
        self.core.create_namespaced_secret(
            self.namespace,
            client.V1Secret(
                api_version="v1",
                kind="Secret",
                metadata=client.V1ObjectMeta(name="github-config"),
                data={"github_token": base64.b64encode(PAT.encode()).decode()},
            ),
        )

    @property
    def server(self) -> ApiServer:
        """The embedded server, for tests marked ``embedded_only`` (its hooks)."""
        assert self.kube.embedded is not None, "a test of the server's hooks: embedded_only"
        return self.kube.embedded

    def reconciler_with(
        self,
        expectations: Expectations | None = None,
        *,
        services: SecretRunnerServices | None = None,
    ) -> EphemeralRunnerSetReconciler:
        """Another reconciler on the same cache and server, with its own ``expectations``
        (fresh by default) and, if given, its own ``services``."""
        return EphemeralRunnerSetReconciler(
            cache=self.cache,
            api=self.api_reader,
            writer=self.writer,
            events=EventRecorder(self.api_client, heartbeat=0.0),
            services=services or self.services,
            expectations=expectations,
        )

    def use_reconciler(self, **options: Any) -> EphemeralRunnerSetReconciler:
        """Drive :meth:`reconcile` with a new reconciler on the same cache, server and
        metrics, built with ``options`` (e.g. ``failed_runners``, ``clock``)."""
        self.reconciler = EphemeralRunnerSetReconciler(
            cache=self.cache,
            api=self.api_reader,
            writer=self.writer,
            events=EventRecorder(self.api_client, heartbeat=0.0),
            services=self.services,
            metrics=self.metrics,
            **options,
        )
        return self.reconciler

    def _informer(self, plural: str) -> Informer:
        return Informer(
            self.api_client,
            Resource(group=api.GROUP, version=api.VERSION, plural=plural),
            namespace=self.kube.namespace,
            store=Store(indexers={OWNER_UID_INDEX: controller_owner_uid}),
            watch_timeout=30,
        )

    def close(self) -> None:
        self._stop.set()
        for informer in self._informers:
            informer.interrupt()
        for thread in self._threads:
            thread.join(timeout=5)
        self.services.close()
        self.api_client.close()  # type: ignore[no-untyped-call]

    # -- arranging -------------------------------------------------------------------

    def create_ers(self, name: str = "runners", **fields: Any) -> dict[str, Any]:
        """Create an ERS through the official client; ``status`` (if given) is applied
        through ``/status`` as a controller would have written it. Finalizer included
        unless ``finalizers`` says otherwise."""
        status = fields.pop("status", None)
        fields.setdefault("finalizers", [api.ERS_FINALIZER])
        created = json_object(
            self.custom.create_namespaced_custom_object(
                api.GROUP,
                api.VERSION,
                self.namespace,
                api.ERS_PLURAL,
                ers_doc(name, namespace=self.namespace, **fields),
            )
        )
        if status:
            created = self.patch_ers_status(name, status)
        return created

    def patch_ers(
        self, name: str, spec: dict[str, Any], *, annotations: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """What the listener does: a merge patch on the spec (with ``annotations``, if given)."""
        patch: dict[str, Any] = {"spec": spec}
        if annotations is not None:
            patch["metadata"] = {"annotations": annotations}
        return self._merge(self.custom.patch_namespaced_custom_object, name, patch, api.ERS_PLURAL)

    def patch_ers_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        """A status merge patch as a controller sends it: with the fields ARC's schema
        requires that the stored set lacks (``ersctl.api.complete_status_patch``)."""
        stored = self.kube.get_object(api.ERS_PLURAL, self.namespace, name) or {}
        patch = api.complete_status_patch(api.EphemeralRunnerSet(stored), {"status": status})
        return self._merge(
            self.custom.patch_namespaced_custom_object_status, name, patch, api.ERS_PLURAL
        )

    def add_runner(
        self,
        ers: str = "runners",
        *,
        phase: str | None = None,
        patch_id: int = 0,
        revision: int = 0,
        runner_id: int = 0,
        job_id: str = "",
        finalizers: list[str] | None = None,
    ) -> str:
        """A runner owned by ``ers``, as the controller and the runner pod left it."""
        owner = self.kube.get_object(api.ERS_PLURAL, self.namespace, ers)
        assert owner is not None
        set_view = api.EphemeralRunnerSet(owner)
        body = {
            "apiVersion": api.API_VERSION,
            "kind": api.ER_KIND,
            "metadata": {
                "generateName": f"{ers}-runner-",
                "annotations": {
                    api.PATCH_ID_ANNOTATION: str(patch_id),
                    api.ACTIONABLE_REVISION_ANNOTATION: str(revision),
                },
                "finalizers": finalizers if finalizers is not None else [api.ER_FINALIZER],
                "ownerReferences": [
                    {
                        "apiVersion": api.API_VERSION,
                        "kind": api.ERS_KIND,
                        "name": ers,
                        "uid": set_view.uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": set_view.spec.get("ephemeralRunnerSpec") or {},
        }
        created = json_object(
            self.custom.create_namespaced_custom_object(
                api.GROUP, api.VERSION, self.namespace, api.ER_PLURAL, body
            )
        )
        name = str(created["metadata"]["name"])
        status: dict[str, Any] = {}
        if phase:
            status["phase"] = phase
        if runner_id:
            status["runnerId"] = runner_id
        if job_id:
            status["jobId"] = job_id
        if status:
            self.set_runner_status(name, **status)
        return name

    def set_runner_status(self, name: str, **status: Any) -> None:
        self._merge(
            self.custom.patch_namespaced_custom_object_status,
            name,
            {"status": status},
            api.ER_PLURAL,
        )

    def release_runner(self, name: str) -> None:
        """What the EphemeralRunner controller does last: drop the runner's finalizers."""
        self._merge(
            self.custom.patch_namespaced_custom_object,
            name,
            {"metadata": {"finalizers": None}},
            api.ER_PLURAL,
        )

    def delete_runner(self, name: str) -> None:
        self.custom.delete_namespaced_custom_object(
            api.GROUP, api.VERSION, self.namespace, api.ER_PLURAL, name
        )

    def _merge(self, call: Any, name: str, body: dict[str, Any], plural: str) -> dict[str, Any]:
        result: dict[str, Any] = call(
            api.GROUP,
            api.VERSION,
            self.namespace,
            plural,
            name,
            body,
            _content_type="application/merge-patch+json",
        )
        return result

    # -- driving ---------------------------------------------------------------------

    def reconcile(self, name: str = "runners", *, sync: bool = True) -> Outcome:
        """One reconcile pass, after the cache caught up with the server (by default)."""
        if sync:
            self.sync()
        return self.reconciler.reconcile_with_outcome(Request(self.namespace, name))

    def sync(self, *, sets: bool = True, runners: bool = True) -> None:
        """Wait until the cache holds exactly the server's objects, by resourceVersion."""
        stores = [(api.ERS_PLURAL, self._informers[0].store, sets)]
        stores.append((api.ER_PLURAL, self._informers[1].store, runners))
        eventually(
            lambda: all(not want or self._in_sync(plural, store) for plural, store, want in stores),
            timeout=SYNC_TIMEOUT,
            interval=0.005,
            what="the informer cache catching up with the server",
        )

    def _in_sync(self, plural: str, store: Store) -> bool:
        server = {
            (o["metadata"]["namespace"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
            for o in self.kube.list_objects(plural, self.namespace)
        }
        cached = {
            key: (store.get(*key) or {}).get("metadata", {}).get("resourceVersion")
            for key in store.list_keys()
        }
        return server == cached

    # -- inspecting ------------------------------------------------------------------

    def ers(self, name: str = "runners") -> api.EphemeralRunnerSet:
        doc = self.kube.get_object(api.ERS_PLURAL, self.namespace, name)
        assert doc is not None, f"ERS {name} is gone"
        return api.EphemeralRunnerSet(doc)

    def runners(self, ers: str = "runners") -> list[api.EphemeralRunner]:
        """The server's runners controlled by ``ers``, deleting ones included."""
        owner = self.kube.get_object(api.ERS_PLURAL, self.namespace, ers)
        uid = (owner or {}).get("metadata", {}).get("uid")
        return [
            api.EphemeralRunner(doc)
            for doc in self.kube.list_objects(api.ER_PLURAL, self.namespace)
            if any(ref.get("uid") == uid for ref in doc["metadata"].get("ownerReferences", []))
            or (owner is None and doc["metadata"]["name"].startswith(f"{ers}-runner-"))
        ]

    def counter(self, name: str, ers: str = "runners") -> float:
        """A reconciler counter of ``ersctl.ephemeralrunnerset.metrics`` for one set (0 when never set)."""
        labels = {"namespace": self.namespace, "name": ers}
        value = self.metrics_registry.get_sample_value(f"ersctl_{name}_total", labels)
        return value or 0.0

    def live_runner_names(self, ers: str = "runners") -> set[str]:
        return {r.name for r in self.runners(ers) if not r.is_deleting}

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        items = self.kube.list_objects("events", self.namespace)
        return [e for e in items if reason is None or e.get("reason") == reason]

    def requests(self, *, verb: str, resource: str, subresource: str | None = None) -> list[Sent]:
        """Such requests the harness's client (the reconciler's, its informers') and the
        running controllers' clients sent, in order."""
        return [
            r
            for r in self.sent.records()
            if r.verb == verb and r.resource == resource and r.subresource == subresource
        ]

    def running_controller(self, *, workers: int = 2) -> RunningController:
        """The real runtime against this API, its requests recorded with the harness's."""
        return RunningController(self.kube, workers=workers, sent=self.sent)


def body(record: Sent) -> dict[str, Any]:
    """The JSON body of a sent request."""
    assert isinstance(record.body, dict), record
    return record.body


class RunningController:
    """The real ``ersctl`` runtime (manager, informers, work queue, workers) driving the
    reconciler against the same server as a :class:`Cluster`, without leader election.

    Unlike :meth:`Cluster.reconcile`, nobody chooses when a reconcile runs: the watch
    events do, so races between the informers show up as they do in production.
    """

    def __init__(
        self, kube: KubeApi, *, workers: int = 2, sent: SentRequests | None = None
    ) -> None:
        self._api_client = kube.api_client()
        if sent is not None:
            sent.attach(self._api_client)
        self._controller = build_controller(
            self._api_client,
            ControllerOptions(namespace=kube.namespace, workers=workers),
            client_factory=no_sleep_client,
        )
        self.manager = self._controller.manager
        self.reconciler = self._controller.reconciler
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.manager.run, args=(self._stop,), daemon=True)

    def __enter__(self) -> RunningController:
        self._thread.start()
        eventually(
            self.manager.has_synced,
            timeout=SYNC_TIMEOUT,
            interval=0.005,
            what="the controller's caches syncing",
        )
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._controller.close()
        self._api_client.close()  # type: ignore[no-untyped-call]

    def cached_runner_names(self, ers: api.EphemeralRunnerSet) -> set[str]:
        return {r.name for r in cached_reader(self.manager).list_owned_runners(ers)}
