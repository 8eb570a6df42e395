"""What kube-apiserver fills in when a client leaves it out, for the built-in kinds it
serves here. Pure: each function fills in the object it is given (a fresh copy).

:func:`fill_in` is the API types' defaulting (their ``SetDefaults_*`` functions), run on
every write, as a real server runs it whenever it decodes a body:

- a PodSpec (a Pod's, or a Deployment's, StatefulSet's or ReplicaSet's template):
  ``dnsPolicy: ClusterFirst``, ``restartPolicy: Always``, ``schedulerName:
  default-scheduler``, ``securityContext: {}``, ``terminationGracePeriodSeconds: 30``;
  each container (init and ephemeral too) ``imagePullPolicy`` (``Always`` for a
  ``:latest`` or untagged image, else ``IfNotPresent``), ``terminationMessagePath:
  /dev/termination-log``, ``terminationMessagePolicy: File``, ``resources: {}``, a
  port's ``protocol: TCP``, a ``fieldRef``'s ``apiVersion: v1``, a probe's timings
  (1 s timeout, 10 s period, thresholds 1 and 3) and an ``httpGet``'s ``path: /`` and
  ``scheme: HTTP``; a volume without a source is an ``emptyDir``, Secret, ConfigMap,
  downward API and projected volumes get ``defaultMode: 420`` (0644), a projected
  token ``expirationSeconds: 3600``, a ``hostPath`` ``type: ""``, an ephemeral
  volume's claim ``volumeMode: Filesystem``;
- a Pod also ``enableServiceLinks: true`` and its containers' missing requests taken
  from their limits;
- Deployments: 1 replica, ``RollingUpdate`` by 25% / 25%, 10 old revisions kept, a
  600 s progress deadline; StatefulSets: 1 replica, ``OrderedReady``, ``RollingUpdate``
  (partition 0), claims retained, 10 revisions; ReplicaSets: 1 replica;
- a RoleBinding's or ClusterRoleBinding's User and Group subjects get
  ``apiGroup: rbac.authorization.k8s.io``;
- a Namespace the label ``kubernetes.io/metadata.name`` with its name.

:func:`admit` is what kube-apiserver's default admission plugins add to a Pod when it
is created: ``serviceAccountName: default`` (and the deprecated ``serviceAccount`` in
step), ``priority: 0`` with ``preemptionPolicy: PreemptLowerPriority`` when no
priority class is named, and tolerations of the ``not-ready`` and ``unreachable`` node
taints for 300 s. Not emulated: the ServiceAccount plugin's token volume and its refusal
of a Pod whose ServiceAccount does not exist (a bare server has none to find).

:func:`qos_class` is the ``status.qosClass`` a Pod is created with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

JsonObject = dict[str, Any]

DEFAULT_MODE = 0o644  # 420, as the real server writes it
NAME_LABEL = "kubernetes.io/metadata.name"
TOLERATION_SECONDS = 300
_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_RBAC_GROUP = "rbac.authorization.k8s.io"
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_PROBE_DEFAULTS = {
    "timeoutSeconds": 1,
    "periodSeconds": 10,
    "successThreshold": 1,
    "failureThreshold": 3,
}
_MODE_SOURCES = ("secret", "configMap", "downwardAPI", "projected")


def _dict(parent: Any, key: str) -> JsonObject | None:
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else None


def _dicts(parent: Any, key: str) -> Iterator[JsonObject]:
    value = parent.get(key) if isinstance(parent, dict) else None
    for item in value if isinstance(value, list) else ():
        if isinstance(item, dict):
            yield item


# -- containers ----------------------------------------------------------------------


def pull_policy(image: str) -> str:
    """``Always`` for an image tagged ``latest`` or not tagged at all (and no digest),
    else ``IfNotPresent``, as SetDefaults_Container decides."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2] if ":" in last else "latest"
    return "Always" if tag == "latest" and image else "IfNotPresent"


def _handler(handler: JsonObject | None) -> None:
    http_get = _dict(handler, "httpGet")
    if http_get is not None:
        http_get.setdefault("path", "/")
        http_get.setdefault("scheme", "HTTP")


def _field_refs(container: JsonObject) -> Iterator[JsonObject]:
    for env in _dicts(container, "env"):
        ref = _dict(_dict(env, "valueFrom"), "fieldRef")
        if ref is not None:
            yield ref


def _container(container: JsonObject) -> None:
    container.setdefault("imagePullPolicy", pull_policy(str(container.get("image") or "")))
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in _dicts(container, "ports"):
        port.setdefault("protocol", "TCP")
    for ref in _field_refs(container):
        ref.setdefault("apiVersion", "v1")
    for name in _PROBES:
        probe = _dict(container, name)
        if probe is not None:
            for key, value in _PROBE_DEFAULTS.items():
                probe.setdefault(key, value)
            _handler(probe)
    lifecycle = _dict(container, "lifecycle")
    for name in ("postStart", "preStop"):
        _handler(_dict(lifecycle, name))


# -- volumes -------------------------------------------------------------------------


def _volume(volume: JsonObject) -> None:
    if not any(key != "name" for key in volume):
        volume["emptyDir"] = {}
    for source in _MODE_SOURCES:
        found = _dict(volume, source)
        if found is not None:
            found.setdefault("defaultMode", DEFAULT_MODE)
    for item in _dicts(_dict(volume, "downwardAPI"), "items"):
        ref = _dict(item, "fieldRef")
        if ref is not None:
            ref.setdefault("apiVersion", "v1")
    claim = _dict(_dict(_dict(volume, "ephemeral"), "volumeClaimTemplate"), "spec")
    if claim is not None:
        claim.setdefault("volumeMode", "Filesystem")
    host_path = _dict(volume, "hostPath")
    if host_path is not None:
        host_path.setdefault("type", "")
    for projection in _dicts(_dict(volume, "projected"), "sources"):
        token = _dict(projection, "serviceAccountToken")
        if token is not None:
            token.setdefault("expirationSeconds", 3600)


def pod_spec(spec: JsonObject) -> None:
    """SetDefaults_PodSpec and what it calls for the containers and volumes."""
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _dicts(spec, key):
            _container(container)
    for volume in _dicts(spec, "volumes"):
        _volume(volume)


def _requests_from_limits(spec: JsonObject) -> None:
    for key in ("initContainers", "containers"):
        for container in _dicts(spec, key):
            resources = _dict(container, "resources")
            limits = _dict(resources, "limits")
            if resources is None or not limits:
                continue
            requests = resources.setdefault("requests", {})
            if isinstance(requests, dict):
                for name, quantity in limits.items():
                    requests.setdefault(name, quantity)


# -- kinds ---------------------------------------------------------------------------


def _pod(pod: JsonObject) -> None:
    spec = _dict(pod, "spec")
    if spec is None:
        return
    pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)
    _requests_from_limits(spec)


def _template(obj: JsonObject) -> JsonObject | None:
    """The workload's spec, its template's PodSpec defaulted."""
    spec = _dict(obj, "spec")
    template_spec = _dict(_dict(spec, "template"), "spec")
    if template_spec is not None:
        pod_spec(template_spec)
    return spec


def _deployment(obj: JsonObject) -> None:
    spec = _template(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", "25%")
                rolling.setdefault("maxSurge", "25%")


def _stateful_set(obj: JsonObject) -> None:
    spec = _template(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault(
        "persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"}
    )
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("partition", 0)


def _replica_set(obj: JsonObject) -> None:
    spec = _template(obj)
    if spec is not None:
        spec.setdefault("replicas", 1)


def _namespace(obj: JsonObject) -> None:
    name = _get_name(obj)
    if name:
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        if isinstance(labels, dict):
            labels[NAME_LABEL] = name


def _get_name(obj: JsonObject) -> str:
    meta = _dict(obj, "metadata")
    return str((meta or {}).get("name") or "")


def _binding(obj: JsonObject) -> None:
    for subject in _dicts(obj, "subjects"):
        if subject.get("kind") in ("User", "Group"):
            subject.setdefault("apiGroup", _RBAC_GROUP)


_BY_TYPE: dict[tuple[str, str], Callable[[JsonObject], None]] = {
    ("", "pods"): _pod,
    ("", "namespaces"): _namespace,
    ("apps", "deployments"): _deployment,
    ("apps", "statefulsets"): _stateful_set,
    ("apps", "replicasets"): _replica_set,
    (_RBAC_GROUP, "rolebindings"): _binding,
    (_RBAC_GROUP, "clusterrolebindings"): _binding,
}


def fill_in(group: str, plural: str, obj: JsonObject) -> None:
    """Default ``obj``, an object of the built-in type ``group``/``plural``, in place."""
    found = _BY_TYPE.get((group, plural))
    if found is not None:
        found(obj)


# -- admission -----------------------------------------------------------------------


def _tolerates(tolerations: list[Any], taint: str) -> bool:
    return any(
        isinstance(t, dict)
        and t.get("key") in (taint, None, "")
        and t.get("effect") in ("NoExecute", None, "")
        for t in tolerations
    )


def admit(group: str, plural: str, obj: JsonObject) -> None:
    """What the default admission plugins add to ``obj`` on create (Pods only)."""
    spec = _dict(obj, "spec")
    if (group, plural) != ("", "pods") or spec is None:
        return
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = account
    if not spec.get("priorityClassName"):
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.get("tolerations")
    tolerations = list(tolerations) if isinstance(tolerations, list) else []
    for taint in _TAINTS:
        if not _tolerates(tolerations, taint):
            tolerations.append(
                {
                    "key": taint,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": TOLERATION_SECONDS,
                }
            )
    spec["tolerations"] = tolerations


def qos_class(pod: JsonObject) -> str:
    """``BestEffort`` (no container asks for or limits CPU or memory), ``Guaranteed``
    (every container limits both, and asks for what it limits), else ``Burstable``."""
    containers = [
        c for key in ("initContainers", "containers") for c in _dicts(_dict(pod, "spec"), key)
    ]
    resources = [_dict(c, "resources") or {} for c in containers]
    compute = ("cpu", "memory")
    asked = [
        {k: v for k, v in (_dict(r, "requests") or {}).items() if k in compute} for r in resources
    ]
    limited = [
        {k: v for k, v in (_dict(r, "limits") or {}).items() if k in compute} for r in resources
    ]
    if not any(asked) and not any(limited):
        return "BestEffort"
    guaranteed = all(
        set(limit) == set(compute) and all(ask.get(k, limit[k]) == limit[k] for k in compute)
        for ask, limit in zip(asked, limited, strict=True)
    )
    return "Guaranteed" if guaranteed else "Burstable"
