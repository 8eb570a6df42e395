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
(/version, /api, /apis, ...) and server-side Tables for kubectl; JSON bodies, plus the
protobuf that ``kubectl create namespace|secret|configmap|serviceaccount`` sends;
``dryRun=All``. Not emulated: OpenAPI (404), authentication and authorization,
admission beyond namespace lifecycle, server-side apply (415), managedFields, version
conversion; ``limit``/``continue`` are ignored (lists are complete).

Semantics follow kube-apiserver: one global resourceVersion; optimistic concurrency
(stale resourceVersion -> 409, also inside a merge or JSON patch); status subresource
rules; ``metadata.generation`` bumped by changes outside metadata/status; custom
resources pruned and type-checked against their CRD schema; finalizers and
``deletionTimestamp`` (no new finalizers once deleting), delete preconditions,
background/foreground/orphan propagation; no-op writes are not stored; watch events in
commit order with a bounded per-resource history (too old -> an ERROR event with 410
Expired, newer than any commit -> 504, as the watch cache does), BOOKMARKs on request;
selector transitions turn MODIFIED into ADDED/DELETED; background garbage collection
of dependents whose owners are gone. Errors are ``metav1.Status`` JSON.

Test hooks: :attr:`ApiServer.request_log`, :meth:`ApiServer.inject_fault`,
:meth:`ApiServer.set_watch_delay` (a lagging informer cache), direct object access
(``get_object``, ``list_objects``, ``create_object``, ``patch_object``,
``delete_object``) with the same semantics as HTTP.

Modules: :mod:`.server` (the facade), :mod:`.store` (storage and write semantics),
:mod:`.semantics` (pure create/update rules), :mod:`.records`, :mod:`.fanout` (event
history and watchers), :mod:`.watching` (events, watchers, bookmarks), :mod:`.serving`
(HTTP), :mod:`.routing`, :mod:`.verbs`, :mod:`.patching`, :mod:`.protobuf`,
:mod:`.selectors`, :mod:`.schema`, :mod:`.crds`, :mod:`.discovery`, :mod:`.tables`,
:mod:`.gc`, :mod:`.hooks`, :mod:`.errors`.
"""

from __future__ import annotations

from ersctl.testing.apiserver.errors import StatusError
from ersctl.testing.apiserver.hooks import RequestLog, RequestRecord
from ersctl.testing.apiserver.server import ApiServer

__all__ = ["ApiServer", "RequestLog", "RequestRecord", "StatusError"]
