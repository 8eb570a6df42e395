"""The start-up reading of the served CRDs: which of the fields this project writes
their schemas would keep.

``ersctl reconcile`` reads the CustomResourceDefinition objects of its resources (a
``get`` by name on each) and asks, for each field path it writes, whether the API
server would prune it (``ersctl.kube.pruning``). What follows from the answer is the
caller's (``ersctl.startup``): a dropped guard field refuses the start (with ARC 0.14's
CRDs the guard would be off without a word), a dropped display field is a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ersctl.kube.client import ApiClient, Requests
from ersctl.kube.errors import NotFoundError
from ersctl.kube.pruning import dropped_fields
from ersctl.kube.resources import CUSTOM_RESOURCE_DEFINITIONS

CHECK_TIMEOUT = 10.0


@dataclass(frozen=True)
class ServedCrds:
    """What the served CRDs keep of the fields asked about."""

    dropped: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """CRD name -> the asked paths its schema drops (every one when not installed);
    only CRDs that drop something are listed."""
    missing: frozenset[str] = frozenset()
    """The asked CRDs that are not installed."""

    def dropped_by(self, crds: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """What each of ``crds`` drops (only those that drop something)."""
        return {c: p for c, p in self.dropped.items() if c in crds}


def read_served_crds(
    api: ApiClient, fields: Mapping[str, Sequence[str]], *, version: str
) -> ServedCrds:
    """Read each CRD of ``fields`` (CRD name -> paths) and say what the schema of its
    ``version`` drops.
    ``KubeError`` when a CRD cannot be read for another reason than its absence
    (``ForbiddenError`` where RBAC does not grant the read: ARC's chart grants none)."""
    requests = Requests(api)
    dropped: dict[str, tuple[str, ...]] = {}
    missing = set()
    for name, paths in fields.items():
        action = f"get customresourcedefinitions/{name}"
        path = CUSTOM_RESOURCE_DEFINITIONS.object_path(None, name)
        try:
            doc = requests.send("GET", path, action=action, timeout=CHECK_TIMEOUT)
        except NotFoundError:
            missing.add(name)
            dropped[name] = tuple(paths)
            continue
        lost = dropped_fields(doc, version, paths)
        if lost:
            dropped[name] = tuple(lost)
    return ServedCrds(dropped=dropped, missing=frozenset(missing))
