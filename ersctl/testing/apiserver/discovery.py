"""Legacy (unaggregated) discovery documents, which kubectl falls back to when the
server answers its aggregated-discovery Accept header with plain application/json."""

from __future__ import annotations

from typing import Any

from ersctl.testing.apiserver.resources import VERBS, Registry, ResourceType

JsonObject = dict[str, Any]

VERSION_INFO: JsonObject = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-ersctl-testing",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def core_versions(server_address: str) -> JsonObject:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _resource_entries(rt: ResourceType) -> list[JsonObject]:
    main: JsonObject = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(VERBS),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    entries = [main]
    if rt.has_status:
        entries.append(
            {
                "name": f"{rt.plural}/status",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    if rt.has_scale:
        entries.append(
            {
                "name": f"{rt.plural}/scale",
                "singularName": "",
                "namespaced": rt.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }
        )
    return entries


def resource_list(registry: Registry, group: str, version: str) -> JsonObject | None:
    """The APIResourceList of one group/version, or None if nothing is served there."""
    types = [rt for rt in registry.all() if rt.group == group and rt.version == version]
    if not types:
        return None
    resources = [e for rt in sorted(types, key=lambda t: t.plural) for e in _resource_entries(rt)]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": types[0].api_version,
        "resources": resources,
    }


def _group(registry: Registry, group: str) -> JsonObject | None:
    versions = sorted({rt.version for rt in registry.all() if rt.group == group})
    if not versions:
        return None
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "name": group,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def group_list(registry: Registry) -> JsonObject:
    groups = sorted({rt.group for rt in registry.all() if rt.group})
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [doc for g in groups if (doc := _group(registry, g)) is not None],
    }


def group(registry: Registry, name: str) -> JsonObject | None:
    doc = _group(registry, name)
    if doc is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **doc}
