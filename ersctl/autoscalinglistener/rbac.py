"""The listener's ServiceAccount (AL namespace), and the Role and RoleBinding (the scale
set's namespace) that let it send what it sends, as ARC's resource builder makes them.
Pure.

Names: :class:`~ersctl.autoscalinglistener.objects.ListenerNames`. Labels: the AL's,
ARC's scale-set labels, on the Role and RoleBinding also the listener's namespace and
name (an ownerReference cannot point across namespaces, so the labels say whose they
are), then those of the AL's ``serviceAccountMetadata``, ``roleMetadata`` and
``roleBindingMetadata``; annotations: those of the same fields, then ARC's
``integrity-hash`` (ours). The Role also keeps ARC 0.14's ``role-policy-rules-hash``
label (ours too).
"""

from __future__ import annotations

from typing import Final

from ersctl.api import INTEGRITY_HASH_ANNOTATION, AutoscalingListener, JsonObject
from ersctl.autoscalinglistener.objects import (
    ListenerNames,
    metadata_of,
    resource_meta,
    scale_set_labels,
)
from ersctl.ephemeralrunner.pods import template_hash

RULES_HASH_LABEL: Final = "role-policy-rules-hash"
LISTENER_NAME_LABEL: Final = "auto-scaling-listener-name"
LISTENER_NAMESPACE_LABEL: Final = "auto-scaling-listener-namespace"
RBAC_API_VERSION: Final = "rbac.authorization.k8s.io/v1"


def listener_rules(al: AutoscalingListener) -> list[JsonObject]:
    """What the listener sends, and no more: a merge patch of ``spec.replicas`` and
    ``spec.patchID`` on its own EphemeralRunnerSet (by name), and a merge patch of the
    job fields on runners' ``/status`` (their names are generated, so the namespace
    narrows it). ARC also grants ``patch`` on the runners themselves, which neither
    listener sends (tests/ersctl/autoscalinglistener: the Role against the listener's requests)."""
    return [
        {
            "apiGroups": ["actions.github.com"],
            "resources": ["ephemeralrunnersets"],
            "resourceNames": [al.runner_set_name],
            "verbs": ["patch"],
        },
        {
            "apiGroups": ["actions.github.com"],
            "resources": ["ephemeralrunners/status"],
            "verbs": ["patch"],
        },
    ]


def service_account(al: AutoscalingListener, names: ListenerNames) -> JsonObject:
    labels, annotations = resource_meta(al, "serviceAccountMetadata")
    metadata = metadata_of(
        al, names.service_account, labels={**al.labels, **scale_set_labels(al), **labels}
    )
    # ARC hashes what the ServiceAccount grants Pods (secrets, pull secrets, token
    # mounting); this one grants nothing beyond the defaults.
    metadata["annotations"] = {**annotations, INTEGRITY_HASH_ANNOTATION: template_hash({})}
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}


def role(al: AutoscalingListener, names: ListenerNames) -> JsonObject:
    rules = listener_rules(al)
    rules_hash = template_hash(rules)
    metadata = _rbac_metadata(
        al, names.role, "roleMetadata", labels={RULES_HASH_LABEL: rules_hash}, digest=rules_hash
    )
    return {"apiVersion": RBAC_API_VERSION, "kind": "Role", "metadata": metadata, "rules": rules}


def role_binding(al: AutoscalingListener, names: ListenerNames) -> JsonObject:
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.role}
    subjects = [
        {"kind": "ServiceAccount", "name": names.service_account, "namespace": al.namespace}
    ]
    metadata = _rbac_metadata(
        al,
        names.role_binding,
        "roleBindingMetadata",
        labels={},
        digest=template_hash({"roleRef": ref, "subjects": subjects}),
    )
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": metadata,
        "roleRef": ref,
        "subjects": subjects,
    }


def _rbac_metadata(
    al: AutoscalingListener, name: str, meta_field: str, *, labels: dict[str, str], digest: str
) -> JsonObject:
    """In the scale set's namespace, where no ownerReference to the AL can point: ARC's
    labels name the listener instead (and the listener's finalizer deletes them)."""
    extra_labels, annotations = resource_meta(al, meta_field)
    return {
        "name": name,
        "namespace": al.scale_set_namespace,
        "labels": {
            **al.labels,
            **scale_set_labels(al),
            LISTENER_NAMESPACE_LABEL: al.namespace,
            LISTENER_NAME_LABEL: al.name,
            **labels,
            **extra_labels,
        },
        "annotations": {**annotations, INTEGRITY_HASH_ANNOTATION: digest},
    }
