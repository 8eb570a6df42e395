"""What the runtime watches and writes, named: resources (API paths) and kinds.

Pure: the generic client (``ersctl.kube.client``), the informers and the manager take
these; each controller declares the kinds it watches in its own package, so the
runtime itself names none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote


@dataclass(frozen=True, kw_only=True)
class Resource:
    """A resource: ``group`` "" is the core API (``/api/v1``). Its paths take a
    namespace, or None for all namespaces or for a cluster-scoped resource."""

    group: str
    version: str
    plural: str

    def collection_path(self, namespace: str | None) -> str:
        """The list path, of one namespace or (None) cluster-wide."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace is None:
            return f"{base}/{self.plural}"
        return f"{base}/namespaces/{quote(namespace, safe='')}/{self.plural}"

    def object_path(self, namespace: str | None, name: str, subresource: str = "") -> str:
        """The path of one object (or its ``subresource``), names percent-encoded."""
        path = f"{self.collection_path(namespace)}/{quote(name, safe='')}"
        return f"{path}/{subresource}" if subresource else path


def core(plural: str) -> Resource:
    """A core (``v1``) resource: ``pods``, ``secrets``, ``configmaps``..."""
    return Resource(group="", version="v1", plural=plural)


def rbac(plural: str) -> Resource:
    """An RBAC (``rbac.authorization.k8s.io/v1``) resource: ``roles``, ``rolebindings``."""
    return Resource(group="rbac.authorization.k8s.io", version="v1", plural=plural)


BUILTIN: Final[Mapping[str, Resource]] = {
    plural: core(plural)
    for plural in ("pods", "secrets", "configmaps", "serviceaccounts", "events")
} | {plural: rbac(plural) for plural in ("roles", "rolebindings")}
"""The built-in kinds the controllers handle, by resource plural."""

CUSTOM_RESOURCE_DEFINITIONS: Final = Resource(
    group="apiextensions.k8s.io", version="v1", plural="customresourcedefinitions"
)
"""Cluster-scoped (namespace None): what the start-up reads to check the served schemas."""


@dataclass(frozen=True, kw_only=True)
class Kind:
    """A kind a controller watches through the manager: its ``name`` (as owner
    references carry it) and ``resource``. ``share_specs``: its objects share their
    spec with their siblings (an owner's template), so the informer keeps one copy."""

    name: str
    resource: Resource
    share_specs: bool = False

    @property
    def plural(self) -> str:
        """The resource plural, the manager's name for the kind's informer and cache."""
        return self.resource.plural
