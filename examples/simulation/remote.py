"""The simulation's Kubernetes API on an existing cluster (``--kubeconfig``), in place of
the embedded server, with the same methods the simulation uses of that one.

What the simulation itself reads and writes (setting up, sampling, its agent and
kubelets) goes straight to the cluster (``ersctl.testing.objects.ApiObjects``), its
errors the embedded server's ``StatusError``, so they are handled alike; the programs
under test get a kubeconfig naming the recording proxy (:mod:`simulation.apiproxy`),
whose request log and faults stand in for the embedded server's. The run works in a
namespace of its own, made fresh (a cluster may well have an ``arc-runners``), and
:meth:`RemoteCluster.remove` takes it away with everything in it when the run ends.
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from kubernetes.client import ApiException

from ersctl.api import GROUP, VERSION
from ersctl.kube import connect
from ersctl.kube.errors import NotFoundError
from ersctl.platform.errors import Failure
from ersctl.testing.apiserver import StatusError
from ersctl.testing.objects import ApiObjects
from simulation.apiproxy import ApiProxy

T = TypeVar("T")
Json = dict[str, Any]
GONE_WAIT = 60.0
"""Seconds the removal waits for the namespace to go (a namespace controller empties it)."""
FINALIZE_AFTER = 10.0
"""Seconds after which a namespace still Terminating, with no condition a namespace
controller writes while it works, is taken to have none (a bare API server): its
finalizer is cleared as that controller would."""


def run_namespace() -> str:
    """A fresh namespace for one run: ``gha-simulate-`` and six random characters."""
    alphabet = string.ascii_lowercase + string.digits
    return "gha-simulate-" + "".join(secrets.choice(alphabet) for _ in range(6))


def _status_error(exc: ApiException) -> StatusError:
    try:
        status = json.loads(exc.body or "")
    except ValueError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    message = str(status.get("message") or exc.reason or exc.body or "")
    return StatusError(int(exc.status or 0), str(status.get("reason") or ""), message)


def _as_status(call: Callable[[], T]) -> T:
    try:
        return call()
    except ApiException as exc:
        raise _status_error(exc) from None


class RemoteCluster:
    """Start with ``with RemoteCluster(kubeconfig) as cluster:``. A kubeconfig that
    cannot be used is a ``ConfigError`` (exit 2), a cluster that cannot be reached or
    does not serve the project's CRDs a ``Failure`` naming it (exit 1): the simulation
    installs nothing cluster-wide."""

    def __init__(self, kubeconfig: Path) -> None:
        self._path = str(kubeconfig)
        self._proxy_client = connect.api_client(self._path)
        self._objects = ApiObjects(lambda: connect.api_client(self._path))
        self._proxy = ApiProxy(self._proxy_client)
        # The embedded server's hooks, at the proxy.
        self.request_log = self._proxy.request_log
        self.write_kubeconfig = self._proxy.write_kubeconfig
        self.inject_fault = self._proxy.inject_fault
        self.drop_watches = self._proxy.drop_watches

    def __enter__(self) -> RemoteCluster:
        try:
            connect.check_api_group(self._proxy_client, group=GROUP, version=VERSION)
        except NotFoundError:
            raise Failure(
                f"the cluster does not serve {GROUP}/{VERSION}: install the CRDs first "
                "(kubectl apply --server-side -f examples/crds/)"
            ) from None
        self._proxy.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._proxy.__exit__(exc_type, exc, tb)
        self._objects.close()
        self._proxy_client.close()  # type: ignore[no-untyped-call]

    # -- the embedded server's direct access, over HTTP ------------------------------------

    def get_object(self, resource: str, namespace: str, name: str) -> Json | None:
        return _as_status(lambda: self._objects.get_object(resource, namespace, name))

    def list_objects(
        self, resource: str, namespace: str | None = None, *, label_selector: str | None = None
    ) -> list[Json]:
        return _as_status(
            lambda: self._objects.list_objects(resource, namespace, label_selector=label_selector)
        )

    def create_object(self, resource: str, obj: Json) -> Json:
        return _as_status(lambda: self._objects.create_object(resource, obj))

    def patch_object(
        self,
        resource: str,
        namespace: str,
        name: str,
        patch: Json,
        *,
        subresource: str | None = None,
    ) -> Json:
        return _as_status(
            lambda: self._objects.patch_object(
                resource, namespace, name, patch, subresource=subresource
            )
        )

    def delete_object(self, resource: str, namespace: str, name: str) -> None:
        _as_status(lambda: self._objects.delete_object(resource, namespace, name))

    # -- the end of a run ---------------------------------------------------------------------

    def remove(self, namespace: str) -> list[str]:
        """Remove the run's namespace and everything in it (finalizers released: the
        programs are stopped); returns what is still there after :data:`GONE_WAIT`
        seconds (nothing, when all went)."""
        self._objects.remove_namespace(namespace, finalize=False)
        if not self._objects.await_gone([namespace], FINALIZE_AFTER):
            return []
        left = self._objects.get_object("namespaces", "", namespace) or {}
        if not (left.get("status") or {}).get("conditions"):  # nobody is emptying it
            self._objects.remove_namespace(namespace, finalize=True)
        return self._objects.await_gone([namespace], GONE_WAIT - FINALIZE_AFTER)
