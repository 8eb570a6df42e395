"""URL -> what is being asked: a resource request (type, namespace, name,
subresource, verb) or a non-resource path (discovery, /version, health)."""

from __future__ import annotations

from dataclasses import dataclass

from ersctl.testing.apiserver import errors
from ersctl.testing.apiserver.resources import Registry, ResourceType

_VERBS_BY_METHOD = {
    ("GET", True): "get",
    ("GET", False): "list",
    ("POST", False): "create",
    ("PUT", True): "update",
    ("PATCH", True): "patch",
    ("DELETE", True): "delete",
    ("DELETE", False): "deletecollection",
}


@dataclass(frozen=True, kw_only=True)
class ResourceRequest:
    rt: ResourceType
    verb: str
    namespace: str | None
    name: str | None
    subresource: str | None


@dataclass(frozen=True, kw_only=True)
class GroupVersionPath:
    """``/api/v1`` or ``/apis/{group}/{version}`` (and ``/apis/{group}`` when
    ``version`` is None)."""

    group: str
    version: str | None


def _segments(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


def not_found(registry: Registry, group: str | None) -> errors.StatusError:
    """The 404 for a path nothing serves: a Status under a built-in API group (its REST
    routes answer), else the mux's plain text (an unknown group, a group only custom
    resources serve, whose handler passes what it does not know on)."""
    if group is not None and registry.has_builtin_group(group):
        return errors.resource_not_found()
    return errors.page_not_found()


def parse_resource(
    method: str, path: str, watch: bool, registry: Registry
) -> ResourceRequest | GroupVersionPath | None:
    """Parse a path under /api or /apis. None: not such a path. Raises 404 (unknown
    resource) or 405 (method not allowed) as :class:`StatusError`."""
    parts = _segments(path)
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 2 and parts[0] == "apis":
        if len(parts) == 2:
            return GroupVersionPath(group=parts[1], version=None)
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return GroupVersionPath(group=group, version=version)
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        scoped = registry.lookup(group, version, rest[2])
        if scoped is not None and scoped.namespaced:
            namespace, rest = rest[1], rest[2:]
    rt = registry.lookup(group, version, rest[0])
    if len(rest) > 3 or rt is None or (rt.namespaced and namespace is None and len(rest) > 1):
        raise not_found(registry, group)
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if subresource is not None and subresource not in rt.subresources:
        # The CRD handler names the object; a built-in API has no such route.
        raise errors.not_found(rt, str(name)) if rt.custom else errors.resource_not_found()
    verb = _VERBS_BY_METHOD.get((method, name is not None))
    if verb is None:
        raise errors.method_not_allowed()
    allowed = ("update",) if subresource == "finalize" else ("get", "update", "patch")
    if subresource is not None and verb not in allowed:
        raise errors.method_not_allowed()
    if verb in ("list", "get") and watch and subresource is None:
        verb = "watch"  # a GET on one object with ?watch=true watches just that object
    return ResourceRequest(
        rt=rt, verb=verb, namespace=namespace, name=name, subresource=subresource
    )
