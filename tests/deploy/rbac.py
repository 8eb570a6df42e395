"""RBAC rules, as the API server evaluates them, for the tests that check a controller's
requests against a permission set: after the fact (each logged request must be allowed
by a rule: :func:`grant_for`), or while it runs (the embedded API server answers 403
to what a ServiceAccount's bindings do not allow: :class:`BoundRules`).

A grant is ``(apiGroup, resource[/subresource], verb, resourceName or "")``; ``*``
in a rule's groups, resources or verbs matches any, as Kubernetes reads it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ersctl.testing.apiserver import Access, RequestRecord

Request = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)
Grant = tuple[str, str, str, str]  # a Request and the resourceName it is limited to, or ""


def group_of(record: RequestRecord) -> str:
    parts = record.path.strip("/").split("/")
    return "" if parts[0] == "api" else parts[1]


def request_of(record: RequestRecord) -> Request:
    resource = record.resource or ""
    if record.subresource:
        resource = f"{resource}/{record.subresource}"
    return (group_of(record), resource, record.verb)


def grants(rules: list[dict[str, Any]]) -> set[Grant]:
    return {
        (g, r, v, name)
        for rule in rules
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
        for name in rule.get("resourceNames") or [""]
    }


def allowing(request: Request, name: str | None, granted: set[Grant]) -> Grant | None:
    """The grant that allows ``request`` on object ``name`` (one limited to that name
    first, an exact one before a wildcard), or None."""
    group, resource, verb = request
    for only in (name, "") if name else ("",):
        for g, r, v in itertools.product((group, "*"), (resource, "*"), (verb, "*")):
            if (g, r, v, only) in granted:
                return (g, r, v, only)
    return None


def grant_for(record: RequestRecord, granted: set[Grant]) -> Grant | None:
    """The grant that allows logged request ``record``, or None."""
    return allowing(request_of(record), record.name, granted)


@dataclass(frozen=True)
class BoundRules:
    """What one ServiceAccount may do: the rules of the ClusterRoles bound to it
    cluster-wide, and of the Roles (or ClusterRoles) bound to it in each namespace,
    read from a set of RBAC documents (a rendered chart)."""

    user: str
    cluster: set[Grant]
    namespaced: dict[str, set[Grant]]

    @classmethod
    def of(cls, documents: Iterable[dict[str, Any]], *, namespace: str, name: str) -> BoundRules:
        docs = list(documents)
        rules = {
            (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d.get(
                "rules", []
            )
            for d in docs
            if d["kind"] in ("Role", "ClusterRole")
        }
        cluster: set[Grant] = set()
        namespaced: dict[str, set[Grant]] = {}
        for doc in docs:
            if doc["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
            if not any(s == subject for s in doc.get("subjects", [])):
                continue
            ref = doc["roleRef"]
            bound_in = doc["metadata"].get("namespace", "")
            role_ns = bound_in if ref["kind"] == "Role" else ""
            granted = grants(rules[(ref["kind"], role_ns, ref["name"])])
            if doc["kind"] == "ClusterRoleBinding":
                cluster |= granted
            else:
                namespaced.setdefault(bound_in, set()).update(granted)
        return cls(f"system:serviceaccount:{namespace}:{name}", cluster, namespaced)

    def denied(self, access: Access) -> str | None:
        """None when allowed; else the API server's message (an authorizer for
        ``ApiServer.authorize``)."""
        resource = access.resource + (f"/{access.subresource}" if access.subresource else "")
        request = (access.group, resource, access.verb)
        if allowing(request, access.name, self.cluster):
            return None
        if access.namespace and allowing(
            request, access.name, self.namespaced.get(access.namespace, set())
        ):
            return None
        what = f'{access.resource} "{access.name}"' if access.name else access.resource
        where = (
            f' in the namespace "{access.namespace}"'
            if access.namespace
            else " at the cluster scope"
        )
        return (
            f'{what} is forbidden: User "{self.user}" cannot {access.verb} resource '
            f'"{resource}" in API group "{access.group}"{where}'
        )
