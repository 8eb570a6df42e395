"""What kube-controller-manager's Deployment and ReplicaSet controllers do, for the local
cluster (``examples/local_cluster.py``): enough for a Deployment's Pods to exist and for
``kubectl rollout status`` to follow them.

Each pass (:meth:`Workloads.step`):

- a Deployment has one ReplicaSet for its current template, ``<deployment>-<hash>``
  labelled ``pod-template-hash`` (as the real controller names it), holding
  ``spec.replicas``; the ones of older templates are scaled to 0 (a template change
  replaces every Pod at once, no surge);
- a ReplicaSet has as many Pods (``<replicaset>-<5 random>``) as it wants, the
  newest deleted first when it wants fewer;
- both report the status kubectl reads: replicas, ready and available (a Pod whose
  ``Ready`` condition is True), updated, the observed generation, and a Deployment's
  ``Available`` and ``Progressing`` conditions.

Objects change only when something differs (no write per pass). Pure decisions are
the functions; :class:`Workloads` reads and writes through an object store (the
embedded server's direct access).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from simulation.cluster import Kubernetes

JsonObject = dict[str, Any]
HASH_LABEL = "pod-template-hash"


def template_hash(template: JsonObject) -> str:
    """A stable name part for a pod template (10 hex characters)."""
    text = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def owner_reference(owner: JsonObject) -> JsonObject:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_by(obj: JsonObject, owner: JsonObject) -> bool:
    uid = owner["metadata"]["uid"]
    return any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or ())


def is_ready(pod: JsonObject) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def replica_set_for(deployment: JsonObject) -> JsonObject:
    """The ReplicaSet of the Deployment's current template."""
    spec = deployment["spec"]
    digest = template_hash(spec["template"])
    template = json.loads(json.dumps(spec["template"]))
    template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = digest
    selector = json.loads(json.dumps(spec["selector"]))
    selector.setdefault("matchLabels", {})[HASH_LABEL] = digest
    meta = deployment["metadata"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{digest}",
            "namespace": meta["namespace"],
            "labels": template["metadata"]["labels"],
            "ownerReferences": [owner_reference(deployment)],
        },
        "spec": {"replicas": spec.get("replicas", 1), "selector": selector, "template": template},
    }


def replica_set_status(replica_set: JsonObject, pods: list[JsonObject]) -> JsonObject:
    ready = sum(1 for pod in pods if is_ready(pod))
    return {
        "replicas": len(pods),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "fullyLabeledReplicas": len(pods),
        "observedGeneration": replica_set["metadata"].get("generation", 1),
    }


def deployment_status(
    deployment: JsonObject, current: list[JsonObject], older: list[JsonObject]
) -> JsonObject:
    """What the Deployment controller reports: ``current`` are the Pods of its current
    template, ``older`` those of earlier ones still there."""
    wanted = deployment["spec"].get("replicas", 1)
    ready = sum(1 for pod in current + older if is_ready(pod))
    available = ready >= wanted
    progressed = len(current) == wanted and not older and sum(map(is_ready, current)) == wanted
    return {
        "observedGeneration": deployment["metadata"].get("generation", 1),
        "replicas": len(current) + len(older),
        "updatedReplicas": len(current),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "unavailableReplicas": max(0, wanted - ready),
        "conditions": [
            {
                "type": "Available",
                "status": "True" if available else "False",
                "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            },
            {
                "type": "Progressing",
                "status": "True",
                "reason": "NewReplicaSetAvailable" if progressed else "ReplicaSetUpdated",
            },
        ],
    }


def pod_for(replica_set: JsonObject) -> JsonObject:
    template = replica_set["spec"]["template"]
    meta = replica_set["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{meta['name']}-",
            "namespace": meta["namespace"],
            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
            "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
            "ownerReferences": [owner_reference(replica_set)],
        },
        "spec": json.loads(json.dumps(template["spec"])),
    }


class Workloads:
    """The Deployment and ReplicaSet controllers over ``store`` (all namespaces)."""

    def __init__(self, store: Kubernetes) -> None:
        self._store = store

    def step(self) -> None:
        replica_sets = self._store.list_objects("replicasets")
        pods = self._store.list_objects("pods")
        for deployment in self._store.list_objects("deployments"):
            if not deployment["metadata"].get("deletionTimestamp"):
                self._deployment(deployment, replica_sets, pods)
        for replica_set in self._store.list_objects("replicasets"):
            self._replica_set(replica_set, [p for p in pods if owned_by(p, replica_set)])

    def _deployment(
        self, deployment: JsonObject, replica_sets: list[JsonObject], pods: list[JsonObject]
    ) -> None:
        wanted = replica_set_for(deployment)
        name, namespace = wanted["metadata"]["name"], deployment["metadata"]["namespace"]
        owned = [rs for rs in replica_sets if owned_by(rs, deployment)]
        current = next((rs for rs in owned if rs["metadata"]["name"] == name), None)
        if current is None:
            current = self._store.create_object("replicasets", wanted)
        elif current["spec"].get("replicas") != wanted["spec"]["replicas"]:
            replicas = {"spec": {"replicas": wanted["spec"]["replicas"]}}
            self._store.patch_object("replicasets", namespace, name, replicas)
        older = [rs for rs in owned if rs["metadata"]["name"] != name]
        for replica_set in older:
            if replica_set["spec"].get("replicas"):
                scale_down = {"spec": {"replicas": 0}}
                self._store.patch_object(
                    "replicasets", namespace, replica_set["metadata"]["name"], scale_down
                )
        status = deployment_status(
            deployment,
            [p for p in pods if owned_by(p, current)],
            [p for rs in older for p in pods if owned_by(p, rs)],
        )
        self._report("deployments", deployment, status)

    def _replica_set(self, replica_set: JsonObject, pods: list[JsonObject]) -> None:
        wanted = replica_set["spec"].get("replicas", 1)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        for _ in range(wanted - len(live)):
            live.append(self._store.create_object("pods", pod_for(replica_set)))
        newest_first = sorted(live, key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)
        for pod in newest_first[: max(0, len(live) - wanted)]:
            self._store.delete_object("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
            live.remove(pod)
        self._report("replicasets", replica_set, replica_set_status(replica_set, live))

    def _report(self, resource: str, obj: JsonObject, status: JsonObject) -> None:
        if obj.get("status") != status:
            meta = obj["metadata"]
            self._store.patch_object(
                resource, meta["namespace"], meta["name"], {"status": status}, subresource="status"
            )
