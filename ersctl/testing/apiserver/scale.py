"""The ``/scale`` subresource of the workloads (Deployments, StatefulSets,
ReplicaSets): an ``autoscaling/v1`` Scale of the object's ``spec.replicas``, as
``kubectl scale`` and autoscalers read and write it. Pure."""

from __future__ import annotations

from typing import Any

from ersctl.testing.apiserver import errors
from ersctl.testing.apiserver.printers import label_selector
from ersctl.testing.apiserver.resources import ResourceType

JsonObject = dict[str, Any]

API_VERSION = "autoscaling/v1"
KIND = "Scale"


def scale_of(obj: JsonObject) -> JsonObject:
    """The Scale of a workload: its replicas wanted and counted, and its selector."""
    meta = obj["metadata"]
    selector = (obj.get("spec") or {}).get("selector")
    return {
        "kind": KIND,
        "apiVersion": API_VERSION,
        "metadata": {
            key: meta[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in meta
        },
        "spec": {"replicas": int((obj.get("spec") or {}).get("replicas") or 0)},
        "status": {
            "replicas": int((obj.get("status") or {}).get("replicas") or 0),
            "selector": "" if selector is None else label_selector(selector),
        },
    }


def rescaled(rt: ResourceType, current: JsonObject, scale: Any) -> JsonObject:
    """``current`` with the replicas of ``scale`` (a Scale a client sent, or the current
    one patched); a resourceVersion in it stays as the write's precondition. 400 for
    a body that is no Scale of this object, 422 for negative replicas."""
    if not isinstance(scale, dict) or scale.get("kind") not in (None, "", KIND):
        raise errors.bad_request(f"the body of a {rt.kind}'s scale must be a Scale")
    meta = scale.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = current["metadata"]["name"]
    if meta.get("name", name) != name:
        raise errors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the "
            f"URL ({name})"
        )
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid(
            rt,
            name,
            "spec.replicas",
            "FieldValueInvalid",
            f"Invalid value: {replicas!r}: must be greater than or equal to 0",
        )
    updated = {**current, "spec": {**(current.get("spec") or {}), "replicas": replicas}}
    updated["metadata"] = {**current["metadata"]}
    updated["metadata"].pop("resourceVersion", None)
    if meta.get("resourceVersion"):
        updated["metadata"]["resourceVersion"] = meta["resourceVersion"]
    return updated
