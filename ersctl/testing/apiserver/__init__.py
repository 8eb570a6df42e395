"""An embedded Kubernetes API server for tests, the end-to-end simulation, and trying
the controller without a cluster: the Python counterpart of controller-runtime's
envtest. The official ``kubernetes`` client and ``kubectl`` talk to it over real HTTP.

Usage::

    with ApiServer() as server:            # 127.0.0.1, a free port, our CRDs loaded
        client = server.api_client()       # kubernetes.client.ApiClient
        server.write_kubeconfig(path)      # for kubectl / other processes

Standalone: ``python -m ersctl.testing.apiserver --port PORT --kubeconfig PATH
[--no-crds] [--no-gc]`` prints ``ready <url>`` and serves until SIGINT/SIGTERM.

What it serves: core v1 namespaces (``default`` exists), pods, secrets, configmaps,
events, serviceaccounts; coordination.k8s.io/v1 leases; apiextensions.k8s.io/v1
customresourcedefinitions (creating one starts serving its resource); RBAC roles and
bindings and apps/v1 deployments (stored only); the project's CRDs. Legacy discovery
(/version, /api, /apis, ...); OpenAPI: ``/openapi/v3`` (a root and one hashed document
per group/version) and ``/openapi/v2`` (JSON; protobuf is answered 406), built from
Kubernetes v1.32's definitions (the kubernetes-validate package; without it, built-in
kinds are schemaless) and the CRD schemas, advertising ``fieldValidation`` so that
``kubectl apply`` validates on the server and ``kubectl explain`` works; server-side
Tables for kubectl (rows carry the object as ``includeObject`` asks); JSON and YAML
bodies, plus the protobuf that ``kubectl create namespace|secret|configmap|
serviceaccount`` sends; ``dryRun=All``; ``fieldValidation`` (Strict, Warn, Ignore:
unknown fields refused, warned about, dropped); server-side apply
(``application/apply-patch+yaml``: create or merge, lists merged by key where the
schema says so, conflicts 409, ``force``) and ``managedFields`` for every write. Not
emulated: authentication, authorization (but for a test hook, below), admission beyond
namespace lifecycle, version conversion, duplicate-field detection, strategic merge of
lists by key (lists are replaced); ``limit``/``continue`` are ignored (lists are
complete).

Semantics follow kube-apiserver (v1.36 where they were compared): one global
resourceVersion; optimistic concurrency (stale resourceVersion -> 409, also inside a
merge or JSON patch); a custom object's body must name its kind (400 before any other
check); a create with a resourceVersion is refused by storage (500, after validation);
annotations at most 256 KiB together; status subresource rules;
``metadata.generation`` bumped by changes outside metadata/status; custom resources
pruned and type-checked against their CRD schema; finalizers and
``deletionTimestamp`` (no new finalizers once deleting), delete preconditions,
background/foreground/orphan propagation; no-op writes are not stored; watch events in
commit order with a bounded per-resource history (too old -> an ERROR event with 410
Expired; newer than the server -> nothing until it gets there, as the watch cache
does; a LIST from such a version waits 3 s, then 504); BOOKMARKs on request, every
minute and 2 s before the watch ends, carrying the resource's own version and only
once it moved past what the watcher has seen; selector transitions turn MODIFIED into
ADDED/DELETED. With ``gc`` (the default; ``--no-gc`` turns it off) it also does what
kube-controller-manager does for the API: garbage collection of dependents whose
owners are gone, and emptying and removing deleted namespaces; without it, it is a bare
kube-apiserver, as envtest runs one. Errors are ``metav1.Status`` JSON.

Test hooks: :attr:`ApiServer.request_log`, :meth:`ApiServer.inject_fault`,
:meth:`ApiServer.authorize` (an RBAC-like check of every HTTP request, 403 when denied),
:meth:`ApiServer.set_watch_delay` (a lagging informer cache), direct object access
(``get_object``, ``list_objects``, ``create_object``, ``patch_object``,
``delete_object``) with the same semantics as HTTP (writes not recorded in
``managedFields``).

Modules: :mod:`.server` (the facade), :mod:`.store` (write rules, namespace and CRD
lifecycles), :mod:`.commits` (versions, storage, watch registration),
:mod:`.semantics` (pure create/update rules), :mod:`.managed` (managedFields,
server-side apply) over :mod:`.fieldsets`, :mod:`.structure` (type schemas),
:mod:`.validation` (fieldValidation), :mod:`.openapi`, :mod:`.records`, :mod:`.fanout`
(event history and watchers), :mod:`.watching` (events, watchers, bookmarks),
:mod:`.serving` (HTTP), :mod:`.routing`, :mod:`.messages`, :mod:`.verbs` (reads),
:mod:`.writing` (writes), :mod:`.patching`, :mod:`.protobuf`, :mod:`.selectors`,
:mod:`.schema`, :mod:`.crds`, :mod:`.discovery`, :mod:`.tables`, :mod:`.gc`,
:mod:`.hooks`, :mod:`.errors`.
"""

from __future__ import annotations

from ersctl.testing.apiserver.errors import StatusError
from ersctl.testing.apiserver.hooks import Access, RequestLog, RequestRecord
from ersctl.testing.apiserver.server import ApiServer

__all__ = ["Access", "ApiServer", "RequestLog", "RequestRecord", "StatusError"]
