"""What kube-controller-manager's namespace and service-account controllers do for the
API, on the controllers' worker (:mod:`.controllers`):

- a deleted namespace (Terminating, ``kubernetes`` in its ``spec.finalizers``) is
  emptied a moment later: every object in it deleted (each one's finalizers still
  hold it), and once nothing is left, its ``spec.finalizers`` are cleared through
  ``/finalize``, which removes it. Until then it answers reads, Terminating, and its
  objects can still be read, patched and deleted (``kubectl delete -k`` of a
  namespace and what is in it finds them all);
- every namespace that is not Terminating has a ServiceAccount ``default`` (made
  again when deleted).

Without them (``gc=False``) a deleted namespace stays Terminating with its contents,
as on a bare kube-apiserver, until someone empties it and clears its finalizers.
"""

from __future__ import annotations

from typing import Any

from ersctl.testing.apiserver.controllers import Controller, Worker
from ersctl.testing.apiserver.errors import StatusError
from ersctl.testing.apiserver.records import DeleteOptions
from ersctl.testing.apiserver.resources import ResourceType
from ersctl.testing.apiserver.store import Store, is_namespace
from ersctl.testing.apiserver.watching import WatchEvent

JsonObject = dict[str, Any]

NAMESPACE_FINALIZER = "kubernetes"
DEFAULT_ACCOUNT = "default"
EMPTYING_DELAY = 0.5
"""Seconds between a namespace's deletion and the controller emptying it: the real one
first discovers every resource type and lists each, which takes a moment; a client
deleting the namespace and its objects one by one finds them there meanwhile."""


class NamespaceController(Controller):
    """Empties and removes deleted namespaces; keeps a ``default`` ServiceAccount in the
    others."""

    def __init__(self, store: Store, worker: Worker) -> None:
        super().__init__(store, worker)
        self._namespaces = store.registry.resolve("namespaces")
        self._accounts = store.registry.resolve("serviceaccounts")

    def resync(self) -> None:
        for entry in self._store.list_entries(self._namespaces, None)[0]:
            self._namespace_changed(entry.obj)

    # -- store observer: under the store lock, must not block ---------------------------

    def observe(self, rt: ResourceType, event: WatchEvent) -> None:
        meta = event.obj["metadata"]
        if is_namespace(rt):
            if event.type != "DELETED":
                self._namespace_changed(event.obj)
            return
        namespace = str(meta.get("namespace") or "")
        if event.type != "DELETED" or not namespace:
            return
        item = (self._namespaces, "", namespace)
        if self._terminating(namespace) is not None:
            self._worker.enqueue(self._finish, item)  # maybe the last thing in it
        elif rt.storage_key == self._accounts.storage_key and meta["name"] == DEFAULT_ACCOUNT:
            self._worker.enqueue(self._ensure_account, item)

    def _namespace_changed(self, namespace: JsonObject) -> None:
        item = (self._namespaces, "", str(namespace["metadata"]["name"]))
        if namespace["metadata"].get("deletionTimestamp"):
            self._worker.enqueue(self._empty, item, after=EMPTYING_DELAY)
        else:
            self._worker.enqueue(self._ensure_account, item)

    # -- the work -----------------------------------------------------------------------

    def _terminating(self, name: str) -> JsonObject | None:
        try:
            namespace = self._store.get(self._namespaces, "", name).obj
        except StatusError:
            return None
        held = NAMESPACE_FINALIZER in ((namespace.get("spec") or {}).get("finalizers") or ())
        return namespace if namespace["metadata"].get("deletionTimestamp") and held else None

    def _empty(self, rt: ResourceType, _: str, name: str) -> None:
        """Delete everything in the namespace, then finish it if nothing was held."""
        with self._store.lock:
            if self._terminating(name) is None:
                return
            for kind, item in self._store.namespace_contents(name):
                try:
                    self._store.delete(kind, name, item, DeleteOptions())
                except StatusError as exc:
                    if exc.code != 404:
                        raise
            self._finish(rt, "", name)

    def _finish(self, rt: ResourceType, _: str, name: str) -> None:
        """Clear the finalizer of an emptied Terminating namespace: it goes."""
        with self._store.lock:
            namespace = self._terminating(name)
            if namespace is None or self._store.namespace_contents(name):
                return
            finalizers = [f for f in namespace["spec"]["finalizers"] if f != NAMESPACE_FINALIZER]
            body = {**namespace, "spec": {**namespace["spec"], "finalizers": finalizers}}
            self._store.update(rt, "", name, body, "finalize")

    def _ensure_account(self, rt: ResourceType, _: str, name: str) -> None:
        with self._store.lock:
            try:
                namespace = self._store.get(rt, "", name).obj
            except StatusError:
                return  # gone meanwhile
            if namespace["metadata"].get("deletionTimestamp") or self._has_account(name):
                return
            account = {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": DEFAULT_ACCOUNT, "namespace": name},
            }
            self._store.create(self._accounts, name, account)

    def _has_account(self, namespace: str) -> bool:
        try:
            self._store.get(self._accounts, namespace, DEFAULT_ACCOUNT)
        except StatusError:
            return False
        return True
