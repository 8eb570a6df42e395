"""The Kubernetes API a test talks to: the embedded API server, or an existing cluster.

By default every test that needs the Kubernetes API gets its own embedded server
(:class:`~ersctl.testing.apiserver.ApiServer`). With ``GHA_SCALESET_TEST_KUBECONFIG=path``
set, those tests use the cluster that kubeconfig names instead, as controller-runtime's
envtest does with ``USE_EXISTING_CLUSTER``: the project's CRDs are applied once per
session, every test gets a fresh namespace, and when it ends what it created there is
deleted (every finalizer stripped first: no controller is left to remove the ones the
project puts anywhere, the runners', the sets', the AutoscalingRunnerSet's, ARC's
``actions.github.com/cleanup-protection``), then the namespace. On a bare kube-apiserver
(no namespace controller) the cleanup clears the namespace's finalizer itself, as the
controller would, so it goes too. At the end of the run the suite checks that every
namespace it made is gone, and fails naming what is left (:class:`NamespaceLedger`).
Nothing else relies on the cluster's garbage collector or namespace controller except
the tests marked ``@pytest.mark.needs_gc("why")``, which run there only with
``GHA_SCALESET_TEST_CLUSTER_CONTROLLERS=1`` (a cluster with kube-controller-manager, such
as kind).

Tests that need the embedded server's own hooks (its request log, fault injection,
watch delay, direct object access, its own lifecycle) are marked
``@pytest.mark.embedded_only("why")`` and skipped against a cluster; only they may take
the ``apiserver`` fixture (tests/conftest.py).
"""

from __future__ import annotations

import os
import secrets
import string
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml
from kubernetes import client

from ersctl.crds import load_crds
from ersctl.kube import connect
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.objects import ApiObjects, http_client, request
from tests.polling import eventually

ENV = "GHA_SCALESET_TEST_KUBECONFIG"
CONTROLLERS_ENV = "GHA_SCALESET_TEST_CLUSTER_CONTROLLERS"
FIELD_MANAGER = "gha-scaleset-tests"

LEFT_BEHIND_WAIT = 60.0
"""Seconds the end-of-run check waits for the namespaces still being deleted (a namespace
controller empties them one by one)."""


def cluster_runs_controllers() -> bool:
    """Whether the existing cluster runs kube-controller-manager (garbage collection,
    namespace deletion), as kind does and a bare kube-apiserver does not."""
    return os.environ.get(CONTROLLERS_ENV, "") == "1"


def existing_cluster() -> Path | None:
    """The kubeconfig of the cluster to test against, or None for the embedded server."""
    value = os.environ.get(ENV, "")
    return Path(value) if value else None


def fresh_name(prefix: str = "test") -> str:
    """``prefix`` and 6 random characters: a name no earlier run left behind."""
    alphabet = string.ascii_lowercase + string.digits
    return f"{prefix}-{''.join(secrets.choice(alphabet) for _ in range(6))}"


class NamespaceLedger:
    """Every namespace this test process made on an existing cluster, to check at the
    end of the run that the cleanup left none behind."""

    def __init__(self) -> None:
        self._made: dict[str, ApiObjects] = {}

    def record(self, name: str, objects: ApiObjects) -> None:
        self._made[name] = objects

    def left_behind(self, timeout: float = LEFT_BEHIND_WAIT) -> list[str]:
        """The namespaces still there after up to ``timeout`` seconds, each with its
        phase and what is left in it (with finalizers); empty when all are gone."""
        by_api: dict[int, tuple[ApiObjects, list[str]]] = {}
        for name, objects in self._made.items():
            by_api.setdefault(id(objects), (objects, []))[1].append(name)
        left: list[str] = []
        deadline = time.monotonic() + timeout
        for objects, names in by_api.values():
            left += objects.await_gone(sorted(names), max(0.0, deadline - time.monotonic()))
            objects.close()
        return sorted(left)


class KubeApi(ApiObjects):
    """One test's Kubernetes API: object access (:class:`ApiObjects`: the embedded
    server's direct-access methods over HTTP, so a test reads and writes the same way
    against either API), a client factory, a kubeconfig writer, and a fresh namespace
    (:attr:`namespace`) created before the test starts, where objects that name none
    are created.

    :attr:`embedded` is the embedded server, or None against an existing cluster.
    """

    def __init__(
        self,
        *,
        url: str,
        new_client: Callable[[], client.ApiClient],
        kubeconfig: dict[str, Any],
        embedded: ApiServer | None,
        ledger: NamespaceLedger | None = None,
        finishes_namespaces: bool = True,
    ) -> None:
        """``ledger``: where the namespaces made are recorded; ``finishes_namespaces``:
        the API runs a namespace controller (else the cleanup clears a deleted
        namespace's finalizer itself)."""
        super().__init__(new_client)
        self.url = url
        self.embedded = embedded
        self._kubeconfig = kubeconfig
        self._ledger = ledger
        self._finishes_namespaces = finishes_namespaces
        self._namespaces: list[str] = []
        self.namespace = self.create_namespace()

    @classmethod
    def for_embedded(cls, server: ApiServer) -> KubeApi:
        config_doc = server.kubeconfig()
        return cls(
            url=server.url, new_client=server.api_client, kubeconfig=config_doc, embedded=server
        )

    @classmethod
    def for_cluster(
        cls,
        kubeconfig: Path,
        *,
        ledger: NamespaceLedger | None = None,
        controllers: bool | None = None,
    ) -> KubeApi:
        """The cluster ``kubeconfig`` names; ``controllers``: whether it runs
        kube-controller-manager (default: as ``GHA_SCALESET_TEST_CLUSTER_CONTROLLERS``
        says)."""
        doc = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
        with connect.api_client(str(kubeconfig)) as probe:
            url = str(probe.configuration.host)
        return cls(
            url=url,
            new_client=lambda: connect.api_client(str(kubeconfig)),
            kubeconfig=doc,
            embedded=None,
            ledger=ledger,
            finishes_namespaces=cluster_runs_controllers() if controllers is None else controllers,
        )

    def api_client(self) -> client.ApiClient:
        """A new ``kubernetes.client.ApiClient`` for this API (the caller closes it)."""
        return self.new_client()

    def http(self) -> httpx.Client:
        """A raw HTTP client (the caller closes it) with the official client's address,
        TLS settings and credentials, for requests that client cannot send
        (``ersctl.testing.objects.http_client``)."""
        with self.api_client() as api_client:
            return http_client(api_client)

    def write_kubeconfig(self, path: Path, *, namespace: str | None = None) -> Path:
        """A kubeconfig for this API whose current context defaults to ``namespace``
        (the test's own by default), for kubectl and the programs under test."""
        doc = yaml.safe_load(yaml.safe_dump(self._kubeconfig))
        current = doc.get("current-context")
        for entry in doc.get("contexts") or ():
            if entry.get("name") == current:
                entry.setdefault("context", {})["namespace"] = namespace or self.namespace
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return path

    def create_namespace(self, prefix: str = "test") -> str:
        """Create another fresh namespace, cleaned up with the test's own."""
        name = fresh_name(prefix)
        self.clean_up_namespace(name)
        self.create_object(
            "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        return name

    def clean_up_namespace(self, name: str) -> None:
        """Clean up namespace ``name`` (created by the test itself) with the others."""
        self._namespaces.append(name)
        if self._ledger is not None:
            self._ledger.record(name, self)

    def close(self, *, clean_up: bool = False) -> None:
        """Close the client of the object calls; with ``clean_up`` (against an existing
        cluster: an embedded server is thrown away) first delete what the test left in
        its namespaces, every finalizer released, then the namespaces."""
        if clean_up:
            for namespace in self._namespaces:
                self.remove_namespace(namespace, finalize=not self._finishes_namespaces)
        super().close()


def install_crds(api_client: client.ApiClient) -> None:
    """Apply the project's CRDs (server-side, forced: the cluster's copy may be older)
    and wait until they are Established, as envtest installs CRDs into an existing
    cluster."""
    extensions = client.ApiextensionsV1Api(api_client)
    for crd in load_crds():
        request(
            api_client,
            "PATCH",
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}",
            crd,
            content_type="application/apply-patch+yaml",
            query=[("fieldManager", FIELD_MANAGER), ("force", "true")],
        )

        def established(name: str = crd["metadata"]["name"]) -> bool:
            status = extensions.read_custom_resource_definition(name).status
            conditions = (status.conditions if status is not None else None) or ()
            return any(c.type == "Established" and c.status == "True" for c in conditions)

        eventually(established, timeout=30, what=f"CRD {crd['metadata']['name']} established")
