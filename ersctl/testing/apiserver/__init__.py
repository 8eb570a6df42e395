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
bindings and apps/v1 deployments, statefulsets and replicasets (stored, with their
``/scale``; no Pods made from them); the project's CRDs. Legacy discovery (/version,
/api, /apis, ...); OpenAPI: ``/openapi/v3`` (a root and one hashed document per
group/version) and ``/openapi/v2`` (JSON, or the protobuf kubectl asks for), built from
Kubernetes v1.32's definitions (the kubernetes-validate package; without it, built-in
kinds are schemaless) and the CRD schemas, advertising ``fieldValidation`` so that
``kubectl apply`` validates on the server and ``kubectl explain`` works; server-side
Tables for kubectl with the built-in kinds' own columns (rows carry the object as
``includeObject`` asks); JSON and YAML bodies, plus the protobuf that ``kubectl create
namespace|secret|configmap|serviceaccount`` sends; ``dryRun=All``; ``fieldValidation``
(Strict, Warn, Ignore: unknown fields refused, warned about, dropped); server-side
apply (``application/apply-patch+yaml``: create or merge, lists merged by key where
the schema says so, conflicts 409, ``force``) and ``managedFields`` for every write
(a map a manager created is its own, ``"."``, as the real server records it). Not
emulated: authentication and authorization (a test may ask for a token or a client
certificate, and check requests against rules: a hook, below), admission beyond namespace lifecycle and a Pod's defaults, version
conversion, duplicate-field detection, strategic merge of lists by key (lists are
replaced); ``limit``/``continue`` are ignored (lists are complete).

Semantics follow kube-apiserver (v1.36 where they were compared): one global
resourceVersion; optimistic concurrency (stale resourceVersion -> 409, also inside a
merge or JSON patch); the built-in kinds' defaults filled in (:mod:`.defaults`); a
custom object's body must name its kind (400 before any other check); a create with a
resourceVersion is refused by storage (500, after validation); annotations at most 256
KiB together; status subresource rules; ``metadata.generation`` bumped by changes
outside metadata/status; custom resources pruned and type-checked against their CRD
schema, ``set`` and ``map`` lists holding no item (key) twice; finalizers and
``deletionTimestamp`` (no new finalizers once deleting), delete preconditions,
background/foreground/orphan propagation; no-op writes are not stored; watch events in
commit order with a bounded per-resource history (too old -> an ERROR event with 410
Expired; newer than the server -> nothing until it gets there, as the watch cache
does; a LIST from such a version waits 3 s, then 504); BOOKMARKs on request, every
minute and 2 s before the watch ends, carrying the resource's own version and only
once it moved past what the watcher has seen; selector transitions turn MODIFIED into
ADDED/DELETED. A path no API serves is the mux's plain-text ``404 page not found``;
other errors are ``metav1.Status`` JSON. With ``gc`` (the default; ``--no-gc`` turns it
off) it also does what kube-controller-manager does for the API: garbage collection of
dependents whose owners are gone, a deleted namespace Terminating while it is emptied,
then removed, and a ServiceAccount ``default`` in every namespace; without it, it is a
bare kube-apiserver, as envtest runs one (a deleted namespace stays Terminating until
its finalizer is cleared with ``/finalize``).

Test hooks: :attr:`ApiServer.request_log`, :meth:`ApiServer.inject_fault`,
:meth:`ApiServer.authorize` (an RBAC-like check of every HTTP request, 403 when denied),
:meth:`ApiServer.set_watch_delay` (a lagging informer cache), direct object access
(``get_object``, ``list_objects``, ``create_object``, ``patch_object``,
``delete_object``) with the same semantics as HTTP (writes not recorded in
``managedFields``).

Modules: :mod:`.server` (the facade), :mod:`.store` (write rules, namespace and CRD
lifecycles), :mod:`.commits` (versions, storage, watch registration),
:mod:`.semantics` (pure create/update rules), :mod:`.defaults`, :mod:`.managed`
(managedFields, server-side apply) over :mod:`.fieldsets`, :mod:`.structure` (type
schemas), :mod:`.validation` (fieldValidation), :mod:`.openapi` and
:mod:`.openapi_proto`, :mod:`.records`, :mod:`.fanout` (event history and watchers),
:mod:`.watching` (events, watchers, bookmarks), :mod:`.serving` (HTTP), :mod:`.routing`,
:mod:`.messages`, :mod:`.verbs` (reads), :mod:`.writing` (writes), :mod:`.scale`,
:mod:`.patching`, :mod:`.protobuf`, :mod:`.selectors`, :mod:`.schema`, :mod:`.crds`,
:mod:`.discovery`, :mod:`.tables` and :mod:`.printers`, :mod:`.controllers` (the worker
of :mod:`.gc` and :mod:`.namespaces`), :mod:`.hooks`, :mod:`.errors`.
"""

from __future__ import annotations

from ersctl.testing.apiserver.errors import StatusError
from ersctl.testing.apiserver.hooks import Access, RequestLog, RequestRecord
from ersctl.testing.apiserver.server import ApiServer
from ersctl.testing.apiserver.serving import Authentication, ServerTLS

__all__ = [
    "Access",
    "ApiServer",
    "Authentication",
    "RequestLog",
    "RequestRecord",
    "ServerTLS",
    "StatusError",
]
