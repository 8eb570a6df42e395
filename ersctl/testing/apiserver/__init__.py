"""An embedded Kubernetes API server for tests, the end-to-end simulation, and trying
the controller without a cluster: the Python counterpart of controller-runtime's
envtest. The official ``kubernetes`` client and ``kubectl`` talk to it over real HTTP.

Usage::

    with ApiServer() as server:            # 127.0.0.1, a free port, our CRDs loaded
        client = server.api_client()       # kubernetes.client.ApiClient
        server.write_kubeconfig(path)      # for kubectl / other processes

Standalone: ``python -m ersctl.testing.apiserver --port PORT --kubeconfig PATH
[--no-crds]`` prints ``ready <url>`` and serves until SIGINT/SIGTERM.

What it serves: core v1 namespaces (``default`` exists), pods, secrets, configmaps,
events, serviceaccounts; coordination.k8s.io/v1 leases; apiextensions.k8s.io/v1
customresourcedefinitions (creating one starts serving its resource); RBAC roles and
bindings and apps/v1 deployments (stored only); the project's CRDs. Legacy discovery
(/version, /api, /apis, ...) and server-side Tables for kubectl; no OpenAPI (404), no
authentication or authorization, no admission beyond namespace lifecycle, no
server-side apply, no managedFields, no watch bookmarks; ``limit``/``continue`` are
ignored (lists are complete).

Semantics follow kube-apiserver: one global resourceVersion; optimistic concurrency
(stale resourceVersion -> 409, also inside a merge or JSON patch); status subresource
rules; ``metadata.generation`` bumped by changes outside metadata/status; custom
resources pruned and type-checked against their CRD schema; finalizers and
``deletionTimestamp`` (no new finalizers once deleting), delete preconditions,
background/foreground/orphan propagation; no-op writes are not stored; watch events in
commit order with a bounded per-resource history (too old -> an ERROR event with 410
Expired, as the watch cache does); selector transitions turn MODIFIED into
ADDED/DELETED; background garbage collection of dependents whose owners are gone.
Errors are ``metav1.Status`` JSON.

Modules: :mod:`.server` (the facade), :mod:`.store` (storage and write semantics),
:mod:`.semantics` (pure create/update rules), :mod:`.watching` (events, history,
watchers), :mod:`.serving` (HTTP), :mod:`.routing`, :mod:`.verbs`, :mod:`.patching`,
:mod:`.selectors`, :mod:`.schema`, :mod:`.crds`, :mod:`.discovery`, :mod:`.tables`,
:mod:`.gc`, :mod:`.hooks`.
"""

from __future__ import annotations

from ersctl.testing.apiserver.errors import StatusError
from ersctl.testing.apiserver.hooks import RequestLog, RequestRecord
from ersctl.testing.apiserver.server import ApiServer

__all__ = ["ApiServer", "RequestLog", "RequestRecord", "StatusError"]
