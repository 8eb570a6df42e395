"""The start-up check that the served CRDs keep what the guard writes.

``ersctl reconcile`` reads the CustomResourceDefinition objects of its resources (a
``get`` by name on each, which its ClusterRole grants) and refuses to start when the
API server would prune a field of ``ersctl.api.GUARD_FIELDS``: with ARC 0.14's CRDs
the marker and revision writes would be dropped and the guard would be off without a
word (``ersctl.kube.pruning``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubernetes import client

from ersctl.api import VERSION
from ersctl.kube.calls import json_body, kube_call, server_of
from ersctl.kube.errors import NotFoundError, PrunedFieldsError
from ersctl.kube.pruning import dropped_fields

CHECK_TIMEOUT = 10.0


def check_served_crds(api: client.ApiClient, fields: Mapping[str, Sequence[str]]) -> None:
    """Raise :class:`PrunedFieldsError` naming every field of ``fields`` (CRD name ->
    paths) the served CRDs would drop (all of them for a CRD that is not installed);
    ``KubeError`` when a CRD cannot be read."""
    extensions = client.ApiextensionsV1Api(api)
    lacking: dict[str, list[str]] = {}
    for name, paths in fields.items():
        action = f"get customresourcedefinitions/{name}"
        try:
            with kube_call(action, server=server_of(api)):
                resp = extensions.read_custom_resource_definition(
                    name, _preload_content=False, _request_timeout=CHECK_TIMEOUT
                )
        except NotFoundError:
            lacking[name] = list(paths)
            continue
        doc = json_body(resp, action=action, server=server_of(api))
        dropped = dropped_fields(doc, VERSION, paths)
        if dropped:
            lacking[name] = dropped
    if lacking:
        raise PrunedFieldsError(lacking)
