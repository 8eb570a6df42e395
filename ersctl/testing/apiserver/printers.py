"""The columns kube-apiserver's table printers give the built-in kinds served here, the
ones ``kubectl get`` shows (priority 0) and ``-o wide`` adds (priority 1): Pods (Ready,
Status, Restarts, Age; IP, Node, ...), Deployments (Ready, Up-to-date, Available),
StatefulSets, ReplicaSets, Events (Last Seen, Type, Reason, Object, Message; the name
last, hidden), Roles and ClusterRoles (Created At), RoleBindings and
ClusterRoleBindings (Role), Secrets, ConfigMaps, ServiceAccounts, Namespaces, Leases,
CustomResourceDefinitions. A kind not listed gets Name and Age. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

JsonObject = dict[str, Any]
Cell = Callable[[JsonObject, float], Any]


@dataclass(frozen=True)
class Column:
    """One column: its definition and how a row's cell is made (object, now)."""

    name: str
    type: str
    cell: Cell
    priority: int = 0
    format: str = ""


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _epoch(timestamp: Any) -> float | None:
    if not isinstance(timestamp, str) or not timestamp:
        return None
    for layout in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ"):
        try:
            return datetime.strptime(timestamp, layout).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


def since(timestamp: Any, now: float) -> str:
    """A timestamp as the time since it (``5s``, ``3m``, ``2h``, ``4d``), as kubectl's
    Age; ``<unknown>`` when there is none."""
    then = _epoch(timestamp)
    if then is None:
        return "<unknown>"
    seconds = max(0, int(now - then))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 3 * 3600:
        return f"{seconds // 60}m"
    if seconds < 48 * 3600:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def name_column(priority: int = 0) -> Column:
    return Column("Name", "string", lambda o, _: _get(o, "metadata", "name"), priority, "name")


AGE = Column("Age", "string", lambda o, now: since(_get(o, "metadata", "creationTimestamp"), now))
CREATED_AT = Column(
    "Created At", "date", lambda o, _: str(_get(o, "metadata", "creationTimestamp") or "")
)


def _count(*keys: str) -> Cell:
    return lambda o, _: int(_get(o, *keys) or 0)


def _size(*keys: str) -> Cell:
    return lambda o, _: len(_get(o, *keys) or ())


def _text(*keys: str) -> Cell:
    return lambda o, _: _get(o, *keys)


def _or_none(*keys: str) -> Cell:
    return lambda o, _: _get(o, *keys) or "<none>"


# -- pods ------------------------------------------------------------------------------


def _statuses(pod: JsonObject) -> list[JsonObject]:
    return [s for s in _get(pod, "status", "containerStatuses") or () if isinstance(s, dict)]


def _pod_ready(pod: JsonObject, _: float) -> str:
    ready = sum(1 for s in _statuses(pod) if s.get("ready"))
    return f"{ready}/{len(_get(pod, 'spec', 'containers') or ())}"


def _pod_status(pod: JsonObject, _: float) -> str:
    if _get(pod, "metadata", "deletionTimestamp"):
        return "Terminating"
    for status in _statuses(pod):
        for state in ("waiting", "terminated"):
            reason = _get(status, "state", state, "reason")
            if reason:
                return str(reason)
    return str(_get(pod, "status", "reason") or _get(pod, "status", "phase") or "Unknown")


def _pod_restarts(pod: JsonObject, _: float) -> str:
    return str(sum(int(s.get("restartCount") or 0) for s in _statuses(pod)))


POD = (
    name_column(),
    Column("Ready", "string", _pod_ready),
    Column("Status", "string", _pod_status),
    Column("Restarts", "string", _pod_restarts),
    AGE,
    Column("IP", "string", _or_none("status", "podIP"), 1),
    Column("Node", "string", _or_none("spec", "nodeName"), 1),
    Column("Nominated Node", "string", _or_none("status", "nominatedNodeName"), 1),
    Column("Readiness Gates", "string", lambda o, _: "<none>", 1),
)

# -- workloads -----------------------------------------------------------------------


def _template_containers(obj: JsonObject) -> list[JsonObject]:
    containers = _get(obj, "spec", "template", "spec", "containers") or ()
    return [c for c in containers if isinstance(c, dict)]


def label_selector(selector: Any) -> str:
    """A LabelSelector as kubectl writes one (``app=x,tier in (a,b)``)."""
    if not isinstance(selector, dict):
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key"), expression.get("operator")
        values = ",".join(sorted(expression.get("values") or ()))
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": str(key),
                "DoesNotExist": f"!{key}",
            }.get(str(operator), str(key))
        )
    return ",".join(parts) or "<none>"


_CONTAINERS = Column(
    "Containers",
    "string",
    lambda o, _: ",".join(c.get("name", "") for c in _template_containers(o)),
    1,
)
_IMAGES = Column(
    "Images",
    "string",
    lambda o, _: ",".join(c.get("image", "") for c in _template_containers(o)),
    1,
)
_SELECTOR = Column(
    "Selector", "string", lambda o, _: label_selector(_get(o, "spec", "selector")), 1
)


def _ready_of_desired(obj: JsonObject, _: float) -> str:
    desired = _get(obj, "spec", "replicas")
    return f"{int(_get(obj, 'status', 'readyReplicas') or 0)}/{1 if desired is None else desired}"


DEPLOYMENT = (
    name_column(),
    Column("Ready", "string", _ready_of_desired),
    Column("Up-to-date", "integer", _count("status", "updatedReplicas")),
    Column("Available", "integer", _count("status", "availableReplicas")),
    AGE,
    _CONTAINERS,
    _IMAGES,
    _SELECTOR,
)
STATEFUL_SET = (
    name_column(),
    Column("Ready", "string", _ready_of_desired),
    AGE,
    _CONTAINERS,
    _IMAGES,
)
REPLICA_SET = (
    name_column(),
    Column("Desired", "integer", _count("spec", "replicas")),
    Column("Current", "integer", _count("status", "replicas")),
    Column("Ready", "integer", _count("status", "readyReplicas")),
    AGE,
    _CONTAINERS,
    _IMAGES,
    _SELECTOR,
)

# -- events ----------------------------------------------------------------------------


def _first_seen(event: JsonObject, now: float) -> str:
    return since(event.get("firstTimestamp") or event.get("eventTime"), now)


def _last_seen(event: JsonObject, now: float) -> str:
    last = _get(event, "series", "lastObservedTime") or event.get("lastTimestamp")
    return since(last, now) if last else _first_seen(event, now)


def _involved(event: JsonObject, _: float) -> str:
    kind = str(_get(event, "involvedObject", "kind") or "").lower()
    name = _get(event, "involvedObject", "name")
    return f"{kind}/{name}" if name else kind


def _source(event: JsonObject, _: float) -> str:
    component = _get(event, "source", "component") or event.get("reportingComponent") or ""
    host = _get(event, "source", "host") or event.get("reportingInstance") or ""
    return f"{component}, {host}" if component and host else str(component)


EVENT = (
    Column("Last Seen", "string", _last_seen),
    Column("Type", "string", _text("type")),
    Column("Reason", "string", _text("reason")),
    Column("Object", "string", _involved),
    Column("Subobject", "string", _text("involvedObject", "fieldPath"), 1),
    Column("Source", "string", _source, 1),
    Column("Message", "string", lambda o, _: str(o.get("message") or "").strip()),
    Column("First Seen", "string", _first_seen, 1),
    Column(
        "Count", "string", lambda o, _: int(_get(o, "series", "count") or o.get("count") or 1), 1
    ),
    name_column(priority=1),
)

# -- RBAC ------------------------------------------------------------------------------


def _subjects(kind: str) -> Cell:
    def cell(binding: JsonObject, _: float) -> str:
        found = []
        for subject in binding.get("subjects") or ():
            if subject.get("kind") != kind:
                continue
            name = str(subject.get("name", ""))
            namespace = subject.get("namespace")
            found.append(f"{namespace}/{name}" if kind == "ServiceAccount" and namespace else name)
        return ", ".join(found)

    return cell


BINDING = (
    name_column(),
    Column(
        "Role",
        "string",
        lambda o, _: f"{_get(o, 'roleRef', 'kind')}/{_get(o, 'roleRef', 'name')}",
    ),
    AGE,
    Column("Users", "string", _subjects("User"), 1),
    Column("Groups", "string", _subjects("Group"), 1),
    Column("ServiceAccounts", "string", _subjects("ServiceAccount"), 1),
)

BY_TYPE: dict[tuple[str, str], tuple[Column, ...]] = {
    ("", "pods"): POD,
    ("", "namespaces"): (name_column(), Column("Status", "string", _text("status", "phase")), AGE),
    ("", "secrets"): (
        name_column(),
        Column("Type", "string", _text("type")),
        Column("Data", "string", _size("data")),
        AGE,
    ),
    ("", "configmaps"): (
        name_column(),
        Column(
            "Data", "string", lambda o, _: len(o.get("data") or ()) + len(o.get("binaryData") or ())
        ),
        AGE,
    ),
    ("", "serviceaccounts"): (name_column(), Column("Secrets", "string", _size("secrets")), AGE),
    ("", "events"): EVENT,
    ("coordination.k8s.io", "leases"): (
        name_column(),
        Column("Holder", "string", _text("spec", "holderIdentity")),
        AGE,
    ),
    ("apps", "deployments"): DEPLOYMENT,
    ("apps", "statefulsets"): STATEFUL_SET,
    ("apps", "replicasets"): REPLICA_SET,
    ("rbac.authorization.k8s.io", "roles"): (name_column(), CREATED_AT),
    ("rbac.authorization.k8s.io", "clusterroles"): (name_column(), CREATED_AT),
    ("rbac.authorization.k8s.io", "rolebindings"): BINDING,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): BINDING,
    ("apiextensions.k8s.io", "customresourcedefinitions"): (name_column(), CREATED_AT),
}


def columns(group: str, plural: str) -> tuple[Column, ...]:
    """The columns of a built-in type (Name and Age for one not listed)."""
    return BY_TYPE.get((group, plural), (name_column(), AGE))
