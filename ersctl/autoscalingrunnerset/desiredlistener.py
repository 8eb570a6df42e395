"""The AutoscalingListener (AL) an AutoscalingRunnerSet (ARS) asks for, where it lives,
and which listeners in the cluster are its. Pure.

The AL is ARC's: named ``<ars>-<hash of namespace@runnerGroup@configURL>-listener``
(:func:`ersctl.naming.listener_name`), in the listener namespace (ARC: the
controller's), with the labels and spec fields ARC's resource builder writes. ARC's
controller looks its listener up by exactly that name in its own namespace, and ours
does too, so either finds the one the other made. A listener of the same ARS under any
other key (the name before ARC 0.13.1, one in another namespace) is a stray: the two
would hold two sessions for one scale set, so :func:`strays` names them for deletion
before a listener is made.

Its hash annotations (0.15's ``integrity-hash``, 0.14's ``runner-spec-hash``) hold our
hash of the AL's spec, which never equals ARC's. That is wanted: switched back, ARC
sees a listener that is not its own and builds it again with its own image (an AL
without ``image``, which ours runs from the controller's ``--listener-image``, would
give ARC's listener controller a Pod it cannot start). The runner template is not in
the AL's spec, so a template change leaves the listener and its Pod alone, as in ARC.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from ersctl.api import (
    AL_KIND,
    API_VERSION,
    INTEGRITY_HASH_ANNOTATION,
    LISTENER_COMPONENT,
    RUNNER_SPEC_HASH_ANNOTATION,
    VALUES_HASH_ANNOTATION,
    AutoscalingListener,
    AutoscalingRunnerSet,
    JsonObject,
)
from ersctl.autoscalingrunnerset.desired import (
    NO_MAX_RUNNERS,
    common_labels,
    extra_metadata,
    merge_diff,
    owner_reference,
)
from ersctl.naming import content_hash, listener_name

# ARS spec field -> AL spec field, copied when set (ARC's resource builder).
_COPIED: Final = (
    ("proxy", "proxy"),
    ("githubServerTLS", "githubServerTLS"),
    ("vaultConfig", "vaultConfig"),
    ("listenerTemplate", "template"),
    ("listenerMetrics", "metrics"),
    ("listenerServiceAccountMetadata", "serviceAccountMetadata"),
    ("listenerRoleMetadata", "roleMetadata"),
    ("listenerRoleBindingMetadata", "roleBindingMetadata"),
    ("listenerConfigSecretMetadata", "configSecretMetadata"),
)


def listener_key(ars: AutoscalingRunnerSet, listener_namespace: str | None) -> tuple[str, str]:
    """``(namespace, name)`` of the ARS's listener: ``listener_namespace`` (the ARS's own
    when None) and ARC's name."""
    name = listener_name(ars.namespace, _runner_group(ars), ars.github_config_url, ars.name)
    return listener_namespace or ars.namespace, name


def _runner_group(ars: AutoscalingRunnerSet) -> str:
    # As written in the spec (ARC hashes the field, not the group it resolves to).
    value = ars.raw.get("spec", {}).get("runnerGroup")
    return value if isinstance(value, str) else ""


def serves(listener: Mapping[str, Any], ars: AutoscalingRunnerSet) -> bool:
    """Does ``listener`` (an AL document) name ``ars`` as its scale set?"""
    spec = listener.get("spec") or {}
    return (spec.get("autoscalingRunnerSetNamespace"), spec.get("autoscalingRunnerSetName")) == (
        ars.namespace,
        ars.name,
    )


def strays(
    listeners: Iterable[AutoscalingListener], ars: AutoscalingRunnerSet, key: tuple[str, str]
) -> list[AutoscalingListener]:
    """The listeners of ``ars`` that are not at ``key``, oldest first."""
    found = [al for al in listeners if serves(al.raw, ars) and (al.namespace, al.name) != key]
    return sorted(found, key=lambda al: (al.creation_timestamp, al.namespace, al.name))


def new_listener(
    ars: AutoscalingRunnerSet,
    *,
    scale_set_id: int,
    runner_set_name: str,
    namespace: str,
) -> JsonObject:
    """The AL of ``ars``: ARC's name, labels and spec fields, in ``namespace`` (the
    controller's listener namespace; owned by the ARS only when that is the ARS's own:
    a cross-namespace ownerReference would get it garbage-collected). No ``image``:
    the listener controller uses its own ``--listener-image`` for an AL that names none."""
    high = ars.max_runners
    spec: JsonObject = {
        "githubConfigUrl": ars.github_config_url,
        "githubConfigSecret": ars.github_config_secret,
        "runnerScaleSetId": scale_set_id,
        "autoscalingRunnerSetNamespace": ars.namespace,
        "autoscalingRunnerSetName": ars.name,
        "ephemeralRunnerSetName": runner_set_name,
        "minRunners": ars.min_runners,
        "maxRunners": NO_MAX_RUNNERS if high is None else high,
    }
    for ars_key, al_key in _COPIED:
        section = ars.optional_section(ars_key)
        if section is not None:
            spec[al_key] = section
    spec_hash = content_hash(spec)
    ars_annotations = ars.raw.get("metadata", {}).get("annotations") or {}
    metadata: JsonObject = {
        "name": listener_key(ars, namespace)[1],
        "namespace": namespace,
        "labels": {
            **extra_metadata(ars, "autoscalingListener", "labels"),
            **common_labels(ars, LISTENER_COMPONENT),
        },
        "annotations": {
            **extra_metadata(ars, "autoscalingListener", "annotations"),
            INTEGRITY_HASH_ANNOTATION: spec_hash,
            RUNNER_SPEC_HASH_ANNOTATION: spec_hash,
            VALUES_HASH_ANNOTATION: str(ars_annotations.get(VALUES_HASH_ANNOTATION, "")),
        },
    }
    if namespace == ars.namespace:
        metadata["ownerReferences"] = [owner_reference(ars)]
    return {"apiVersion": API_VERSION, "kind": AL_KIND, "metadata": metadata, "spec": spec}


def listener_update(live: Mapping[str, Any], desired: Mapping[str, Any]) -> JsonObject | None:
    """The merge patch bringing the AL ``live`` to ``desired`` (its spec whole, the
    labels and annotations the ARS decides; keys others added stay), or None when
    nothing differs."""
    patch: JsonObject = {}
    spec = merge_diff(live.get("spec") or {}, desired["spec"])
    if spec:
        patch["spec"] = spec
    metadata: JsonObject = {}
    for section in ("labels", "annotations"):
        live_map = (live.get("metadata") or {}).get(section) or {}
        changed = {k: v for k, v in desired["metadata"][section].items() if live_map.get(k) != v}
        if changed:
            metadata[section] = changed
    if metadata:
        patch["metadata"] = metadata
    return patch or None
