"""Resource types the emulator serves: the built-in core/coordination/apiextensions
types and those defined by CustomResourceDefinitions.

A :class:`ResourceType` carries everything the storage layer and discovery need to
know about one (group, version, plural): scope, kind, short names, whether a status
subresource exists, and whether it follows custom-resource rules (generation
tracking, no unconditional update, no strategic merge patch).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ersctl.testing.apiserver import structure

JsonObject = dict[str, Any]

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, kw_only=True)
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry (``json_path`` like ``.spec.replicas``)."""

    name: str
    type: str
    json_path: str
    priority: int = 0


@dataclass(frozen=True, kw_only=True)
class ResourceType:
    """One served (group, version, plural)."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False
    custom: bool = False
    tracks_generation: bool = False
    printer_columns: tuple[PrinterColumn, ...] = ()
    schema: JsonObject | None = field(default=None, compare=False, hash=False)

    has_scale: bool = False
    """Serves ``/scale`` (``autoscaling/v1`` Scale of ``spec.replicas``)."""

    @property
    def subresources(self) -> tuple[str, ...]:
        """``status``, ``scale``, and a namespace's ``finalize`` (PUT only: what the
        namespace controller clears ``spec.finalizers`` with)."""
        found = [
            name for name, has in (("status", self.has_status), ("scale", self.has_scale)) if has
        ]
        if self.plural == "namespaces" and not self.group:
            found.append("finalize")
        return tuple(found)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def qualified(self) -> str:
        """``plural.group`` (just ``plural`` for the core group), as in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def storage_key(self) -> str:
        """Objects are stored once per (group, plural), whatever version is asked for."""
        return self.qualified

    @property
    def structure(self) -> JsonObject:
        """The schema node of a whole object (:mod:`.structure`)."""
        return structure.root(self.group, self.version, self.kind, self.schema)

    @property
    def unconditional_update(self) -> bool:
        """Whether PUT may omit ``metadata.resourceVersion`` (never for custom resources)."""
        return not self.custom


def _core(plural: str, kind: str, *, namespaced: bool = True, **kw: Any) -> ResourceType:
    return ResourceType(
        group="",
        version="v1",
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=namespaced,
        **kw,
    )


CRD_TYPE = ResourceType(
    group="apiextensions.k8s.io",
    version="v1",
    plural="customresourcedefinitions",
    singular="customresourcedefinition",
    kind="CustomResourceDefinition",
    namespaced=False,
    short_names=("crd", "crds"),
    has_status=True,
    tracks_generation=True,
)

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _core("namespaces", "Namespace", namespaced=False, short_names=("ns",), has_status=True),
    _core("pods", "Pod", short_names=("po",), has_status=True, categories=("all",)),
    _core("secrets", "Secret"),
    _core("configmaps", "ConfigMap", short_names=("cm",)),
    _core("events", "Event", short_names=("ev",)),
    ResourceType(
        group="coordination.k8s.io",
        version="v1",
        plural="leases",
        singular="lease",
        kind="Lease",
        namespaced=True,
    ),
    CRD_TYPE,
    # Stored, not acted on (no RBAC enforcement, no pods from workloads): served so
    # that `kubectl apply` of the deployment base (examples/deploy) works end to end,
    # and `kubectl scale` on the workloads' /scale.
    _core("serviceaccounts", "ServiceAccount", short_names=("sa",)),
    *(
        ResourceType(
            group="rbac.authorization.k8s.io",
            version="v1",
            plural=f"{kind.lower()}s",
            singular=kind.lower(),
            kind=kind,
            namespaced=not kind.startswith("Cluster"),
        )
        for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
    ),
    *(
        ResourceType(
            group="apps",
            version="v1",
            plural=plural,
            singular=kind.lower(),
            kind=kind,
            namespaced=True,
            short_names=(short,),
            categories=("all",),
            has_status=True,
            has_scale=True,
            tracks_generation=True,
        )
        for plural, kind, short in (
            ("deployments", "Deployment", "deploy"),
            ("statefulsets", "StatefulSet", "sts"),
            ("replicasets", "ReplicaSet", "rs"),
        )
    ),
)


def _version_type(version: JsonObject, common: JsonObject) -> ResourceType:
    columns = tuple(
        PrinterColumn(
            name=str(col["name"]),
            type=str(col.get("type", "string")),
            json_path=str(col["jsonPath"]),
            priority=int(col.get("priority", 0)),
        )
        for col in version.get("additionalPrinterColumns") or ()
    )
    return ResourceType(
        version=str(version["name"]),
        has_status="status" in (version.get("subresources") or {}),
        custom=True,
        tracks_generation=True,
        printer_columns=columns,
        schema=(version.get("schema") or {}).get("openAPIV3Schema"),
        **common,
    )


def types_from_crd(crd: JsonObject) -> list[ResourceType]:
    """The resource types a CRD serves (one per served version).

    Raises ``KeyError``/``TypeError``/``ValueError`` on a malformed CRD; the caller
    turns that into a 422.
    """
    spec = crd["spec"]
    names = spec["names"]
    group = str(spec["group"])
    plural = str(names["plural"])
    kind = str(names["kind"])
    scope = spec.get("scope", "Namespaced")
    if scope not in ("Namespaced", "Cluster"):
        raise ValueError(f"spec.scope: unsupported value {scope!r}")
    common: JsonObject = {
        "group": group,
        "plural": plural,
        "singular": str(names.get("singular") or kind.lower()),
        "kind": kind,
        "namespaced": scope == "Namespaced",
        "short_names": tuple(names.get("shortNames") or ()),
        "categories": tuple(names.get("categories") or ()),
    }
    return [
        _version_type(version, common)
        for version in spec["versions"]
        if version.get("served", True)
    ]


class Registry:
    """The set of served resource types; thread-safe, changes when CRDs come and go."""

    def __init__(self, types: tuple[ResourceType, ...] = BUILTIN_TYPES) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_types: dict[str, list[ResourceType]] = {}
        self.generation = 0
        """Counts the changes of what is served (documents built from it are stale)."""
        for rt in types:
            self._types[(rt.group, rt.version, rt.plural)] = rt

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            return self._types.get((group, version, plural))

    def resolve(self, resource: str) -> ResourceType:
        """A type by ``plural`` or ``plural.group`` (the Python API's way of naming one).

        Raises ``KeyError`` when nothing matches.
        """
        plural, _, group = resource.partition(".")
        with self._lock:
            for rt in self._types.values():
                if rt.plural == plural and (not group or rt.group == group):
                    return rt
        raise KeyError(f"unknown resource {resource!r}")

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        with self._lock:
            for rt in self._types.values():
                if rt.api_version == api_version and rt.kind == kind:
                    return rt
        return None

    def has_builtin_group(self, group: str) -> bool:
        """Whether a built-in API (not a CRD) serves ``group``."""
        with self._lock:
            return any(rt.group == group and not rt.custom for rt in self._types.values())

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types.values())

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self.all())

    def serve_crd(self, crd_name: str, types: list[ResourceType]) -> None:
        """Start (or update) serving the types of CRD ``crd_name``."""
        with self._lock:
            for old in self._crd_types.pop(crd_name, []):
                self._types.pop((old.group, old.version, old.plural), None)
            self._crd_types[crd_name] = types
            for rt in types:
                self._types[(rt.group, rt.version, rt.plural)] = rt
            self.generation += 1

    def unserve_crd(self, crd_name: str) -> list[ResourceType]:
        with self._lock:
            gone = self._crd_types.pop(crd_name, [])
            for old in gone:
                self._types.pop((old.group, old.version, old.plural), None)
            self.generation += 1
            return gone
