"""What an AutoscalingRunnerSet (ARS) asks for, as documents: its EphemeralRunnerSet
(ERS), its scale set's labels and its status (its AutoscalingListener:
``ersctl.autoscalingrunnerset.desiredlistener``). Pure.

Names, labels and annotations are ARC's (``controllers/actions.github.com``'s resource
builder), so dashboards, selectors and ARC's own controller see the same objects. The
hash values are ours (:func:`ersctl.naming.content_hash`): ARC hashes Go's rendering of
its structs, which no Python program reproduces, so a hash decides nothing on its own:
the runner template is compared by meaning (:func:`runner_spec_changed`), which is what
lets an ERS made by ARC be adopted without rebuilding a runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ersctl.api import (
    API_VERSION,
    ARS_KIND,
    COMPONENT_LABEL,
    ENTERPRISE_LABEL,
    ERS_KIND,
    INTEGRITY_HASH_ANNOTATION,
    MAX_PATCH_ID,
    ORGANIZATION_LABEL,
    PART_OF_LABEL,
    PART_OF_VALUE,
    REPOSITORY_LABEL,
    RUNNER_GROUP_NAME_ANNOTATION,
    RUNNER_SCALE_SET_NAME_ANNOTATION,
    RUNNER_SPEC_HASH_ANNOTATION,
    SCALE_SET_NAME_LABEL,
    SCALE_SET_NAMESPACE_LABEL,
    AutoscalingRunnerSet,
    EphemeralRunnerSet,
    FieldError,
    JsonObject,
    controller_reference,
)
from ersctl.autoscalingrunnerset import template_equality
from ersctl.naming import content_hash
from ghalistener.actions.configurl import parse_config_url
from ghalistener.actions.errors import ConfigUrlError

VERSION_LABEL: Final = "app.kubernetes.io/version"
RUNNER_SET_COMPONENT: Final = "runner-set"

SCALE_SET_LABELS_ANNOTATION: Final = "actions.github.com/runner-scale-set-labels"
"""Ours: the labels last written to the scale set (comma-separated), so a change of
``spec.runnerScaleSetLabels`` is seen without asking GitHub on every reconcile."""

NO_MAX_RUNNERS: Final = MAX_PATCH_ID
"""An unset ``spec.maxRunners`` reaches the listener as ARC's MaxInt32."""

# The runner spec keys the ARS decides; any other key an ERS carries (a newer ARC's)
# is left as it is.
_RUNNER_SPEC_KEYS: Final = (
    "githubConfigUrl",
    "githubConfigSecret",
    "runnerScaleSetId",
    "proxy",
    "githubServerTLS",
    "vaultConfig",
    "metadata",
    "spec",
    "ephemeralRunnerConfigSecretMetadata",
)

_LABEL_VALUE_LIMIT: Final = 63
_TRIM_SUFFIX: Final = "-trim"


def validate(ars: AutoscalingRunnerSet) -> None:
    """Raise FieldError naming the first field of ``ars`` nothing can be built from."""
    github_url_labels(ars.github_config_url)
    if not ars.github_config_secret:
        raise FieldError("spec.githubConfigSecret", "must name a Secret")
    ars.template  # noqa: B018  (the property validates)
    ars.runner_scale_set_labels  # noqa: B018
    high = ars.max_runners
    if high is not None and high < ars.min_runners:
        raise FieldError("spec.maxRunners", f"must be >= spec.minRunners ({ars.min_runners})")


def github_url_labels(config_url: str) -> dict[str, str]:
    """ARC's enterprise/organization/repository labels of a config URL (values cut to
    63 characters as ARC cuts them); FieldError naming ``spec.githubConfigUrl``."""
    if not config_url:
        raise FieldError("spec.githubConfigUrl", "must be a GitHub configuration URL")
    try:
        config = parse_config_url(config_url)
    except ConfigUrlError as exc:
        raise FieldError("spec.githubConfigUrl", str(exc)) from None
    found = {
        ENTERPRISE_LABEL: config.enterprise,
        ORGANIZATION_LABEL: config.organization,
        REPOSITORY_LABEL: config.repository,
    }
    return {key: _label_value(value) for key, value in found.items() if value}


def _label_value(value: str) -> str:
    if len(value) <= _LABEL_VALUE_LIMIT:
        return value
    return value[: _LABEL_VALUE_LIMIT - len(_TRIM_SUFFIX)] + _TRIM_SUFFIX


def scale_set_labels(ars: AutoscalingRunnerSet) -> list[str]:
    """ARC's labels of the scale set: its name first, then ``spec.runnerScaleSetLabels``
    without duplicates, in their order."""
    labels = [ars.runner_scale_set_name]
    for label in ars.runner_scale_set_labels:
        if label not in labels:
            labels.append(label)
    return labels


def scale_set_changes(ars: AutoscalingRunnerSet) -> list[str]:
    """What of the scale set to update, by ARC's rules, read from the annotations of
    what was last written: ``"runner group"`` when its annotation is missing or
    ``spec.runnerGroup`` names another group, ``"name"`` likewise with
    ``spec.runnerScaleSetName``, ``"labels"`` when they differ from
    :func:`scale_set_labels`. An empty ``spec.runnerGroup`` or ``spec.runnerScaleSetName``
    leaves the scale set's as it is (ARC's skip rule: moving a scale set back to the
    default group is not what removing the field means). Names compare case-blind."""
    annotations = ars.raw.get("metadata", {}).get("annotations") or {}
    changes = []
    group = annotations.get(RUNNER_GROUP_NAME_ANNOTATION)
    wanted_group = ars.runner_group
    if group is None or (wanted_group and wanted_group.lower() != str(group).lower()):
        changes.append("runner group")
    name = annotations.get(RUNNER_SCALE_SET_NAME_ANNOTATION)
    wanted_name = ars.raw.get("spec", {}).get("runnerScaleSetName") or ""
    if name is None or (wanted_name and wanted_name.lower() != str(name).lower()):
        changes.append("name")
    labels = annotations.get(SCALE_SET_LABELS_ANNOTATION)
    if labels is None or str(labels).split(",") != scale_set_labels(ars):
        changes.append("labels")
    return changes


def owner_reference(ars: AutoscalingRunnerSet) -> JsonObject:
    """The controller ownerReference of what the ARS owns in its own namespace."""
    return controller_reference(ars, ARS_KIND)


def extra_metadata(ars: AutoscalingRunnerSet, key: str, section: str) -> dict[str, str]:
    """The ``labels`` or ``annotations`` (``section``) of the ARS's ResourceMeta field
    ``key`` (``ephemeralRunnerSetMetadata``, ``autoscalingListener``): strings only."""
    meta = ars.optional_section(key) or {}
    values = meta.get(section)
    if not isinstance(values, dict):
        return {}
    return {str(k): str(v) for k, v in values.items() if isinstance(v, str)}


def common_labels(ars: AutoscalingRunnerSet, component: str) -> dict[str, str]:
    labels = dict(ars.raw.get("metadata", {}).get("labels") or {})
    labels.update(
        {
            PART_OF_LABEL: PART_OF_VALUE,
            COMPONENT_LABEL: component,
            VERSION_LABEL: labels.get(VERSION_LABEL, ""),
            SCALE_SET_NAME_LABEL: ars.name,
            SCALE_SET_NAMESPACE_LABEL: ars.namespace,
        }
    )
    labels.update(github_url_labels(ars.github_config_url))
    return labels


def runner_spec(ars: AutoscalingRunnerSet, scale_set_id: int) -> JsonObject:
    """The ERS ``spec.ephemeralRunnerSpec`` the ARS asks for: its GitHub fields, proxy,
    TLS and vault settings, and its runner Pod template (``metadata`` and ``spec``)."""
    template = ars.template
    spec: JsonObject = {
        "githubConfigUrl": ars.github_config_url,
        "githubConfigSecret": ars.github_config_secret,
        "runnerScaleSetId": scale_set_id,
        "spec": template["spec"],
    }
    if template.get("metadata"):
        spec["metadata"] = template["metadata"]
    for key in ("proxy", "githubServerTLS", "vaultConfig"):
        section = ars.optional_section(key)
        if section is not None:
            spec[key] = section
    secret_meta = ars.optional_section("ephemeralRunnerConfigSecretMetadata")
    if secret_meta is not None:
        spec["ephemeralRunnerConfigSecretMetadata"] = secret_meta
    return spec


def runner_spec_hash(spec: Mapping[str, Any]) -> str:
    """Our value of ARC's hash annotations on the ERS, for ``spec`` (by meaning: ARC's
    spelling of the same spec hashes alike)."""
    return content_hash(template_equality.normalized(_only_decided(spec)))


def _set_annotations(ars: AutoscalingRunnerSet) -> dict[str, str]:
    """ARC's runner-group and scale-set name annotations, copied from the ARS."""
    annotations = ars.raw.get("metadata", {}).get("annotations") or {}
    return {
        key: str(annotations.get(key, ""))
        for key in (RUNNER_GROUP_NAME_ANNOTATION, RUNNER_SCALE_SET_NAME_ANNOTATION)
    }


def new_runner_set(ars: AutoscalingRunnerSet, scale_set_id: int) -> JsonObject:
    """The ERS to create for ``ars``, named after it as ARC 0.15 names it (one set per
    scale set, updated in place), owned by it, 0 replicas and patch ID 0 until the
    listener says otherwise."""
    spec = runner_spec(ars, scale_set_id)
    body: JsonObject = {
        "apiVersion": API_VERSION,
        "kind": ERS_KIND,
        "metadata": {
            "name": ars.name,
            "namespace": ars.namespace,
            # The ARS's ephemeralRunnerSetMetadata first: ARC's own keys win.
            "labels": {
                **extra_metadata(ars, "ephemeralRunnerSetMetadata", "labels"),
                **common_labels(ars, RUNNER_SET_COMPONENT),
            },
            "annotations": {
                **extra_metadata(ars, "ephemeralRunnerSetMetadata", "annotations"),
                **_set_annotations(ars),
                INTEGRITY_HASH_ANNOTATION: runner_spec_hash(spec),
            },
            "ownerReferences": [owner_reference(ars)],
        },
        "spec": {"replicas": 0, "patchID": 0, "ephemeralRunnerSpec": spec},
    }
    runner_meta = ars.optional_section("ephemeralRunnerMetadata")
    if runner_meta is not None:
        body["spec"]["ephemeralRunnerMetadata"] = runner_meta
    return body


def runner_spec_changed(ers: EphemeralRunnerSet, desired: Mapping[str, Any]) -> bool:
    """Does the ERS's runner spec mean something else than ``desired`` in a key the
    ARS decides? By meaning (``ersctl.autoscalingrunnerset.template_equality``), not by text or
    hash: ARC's Go client spells a spec its own way, and reading its spelling as a
    change would rebuild every idle runner at a switch."""
    live = ers.raw.get("spec", {}).get("ephemeralRunnerSpec") or {}
    return not template_equality.equal(_only_decided(live), _only_decided(desired))


def runner_set_update(
    ers: EphemeralRunnerSet, ars: AutoscalingRunnerSet, scale_set_id: int
) -> JsonObject | None:
    """The merge patch that brings ``ers`` to what ``ars`` asks for, or None.

    A changed runner spec advances ``spec.actionableRevision`` by one, so the set
    rebuilds its idle runners (busy ones finish their job first) without ``ersctl
    rollout``; the patch carries the resourceVersion the decision was made on, so a
    concurrent write (another advance) is refused, not doubled. Labels and the
    annotations ARC keeps are merged in (keys others added stay); ``replicas`` and
    ``patchID`` are the listener's and never written here.

    ARC's hash annotations (0.15's ``integrity-hash``, 0.14's ``runner-spec-hash``) are
    rewritten only with the spec: a set adopted unchanged keeps the value ARC computed,
    so ARC, switched back, finds its own hash and rebuilds nothing. Ours never equals
    ARC's (it hashes Go's rendering of its structs), so a spec changed here is one ARC
    applies again, once, after a switch back.
    """
    desired = new_runner_set(ars, scale_set_id)
    patch: JsonObject = {}
    spec = desired["spec"]["ephemeralRunnerSpec"]
    live_annotations = ers.annotations
    annotations = {
        key: value
        for key, value in desired["metadata"]["annotations"].items()
        if key != INTEGRITY_HASH_ANNOTATION and live_annotations.get(key) != value
    }
    if runner_spec_changed(ers, spec):
        live = ers.raw.get("spec", {}).get("ephemeralRunnerSpec") or {}
        patch["spec"] = {
            "ephemeralRunnerSpec": merge_diff(live, {**live, **_only_decided(spec)}),
            "actionableRevision": ers.actionable_revision + 1,
        }
        new_hash = runner_spec_hash(spec)
        annotations[INTEGRITY_HASH_ANNOTATION] = new_hash
        if RUNNER_SPEC_HASH_ANNOTATION in live_annotations:
            annotations[RUNNER_SPEC_HASH_ANNOTATION] = new_hash
    runner_meta = desired["spec"].get("ephemeralRunnerMetadata")
    live_meta = ers.raw.get("spec", {}).get("ephemeralRunnerMetadata")
    if not template_equality.equal(runner_meta, live_meta):
        patch.setdefault("spec", {})["ephemeralRunnerMetadata"] = runner_meta
    labels = {
        key: value
        for key, value in desired["metadata"]["labels"].items()
        if ers.labels.get(key) != value
    }
    metadata = {
        section: changed
        for section, changed in (("labels", labels), ("annotations", annotations))
        if changed
    }
    if metadata:
        patch["metadata"] = metadata
    if not patch:
        return None
    patch.setdefault("metadata", {})["resourceVersion"] = ers.resource_version
    return patch


def _only_decided(spec: Mapping[str, Any]) -> JsonObject:
    """``spec`` with every decided key present: an absent one as None (removed)."""
    return {key: spec.get(key) for key in _RUNNER_SPEC_KEYS}


def merge_diff(live: Mapping[str, Any], desired: Mapping[str, Any]) -> JsonObject:
    """The JSON merge patch (RFC 7386) turning ``live`` into ``desired``: changed keys,
    nested objects recursively, removed keys (or None values) as null."""
    patch: JsonObject = {}
    for key in live.keys() | desired.keys():
        old, new = live.get(key), desired.get(key)
        if new is None:
            if key in live:
                patch[key] = None
        elif isinstance(old, dict) and isinstance(new, dict):
            nested = merge_diff(old, new)
            if nested:
                patch[key] = nested
        elif old != new:
            patch[key] = new
    return patch


RETIRED_COUNTS: Final = (
    "currentRunners",
    "pendingEphemeralRunners",
    "runningEphemeralRunners",
    "failedEphemeralRunners",
)
"""ARC's ARS status counts: not kept (a copy of the set's, rewritten whenever one of its
runners changed state; ARC moved them to its ``gha_controller_*`` gauges after 0.15.1,
#4557). One an ARS still carries is removed by its next status write, so no
``kubectl get`` shows it frozen."""


def status_update(
    ars: AutoscalingRunnerSet, *, phase: str, state: str, message: str = ""
) -> JsonObject | None:
    """The ``/status`` merge patch for ``ars``, or None when it already says so: written
    when the phase, state or message changes, never for a runner (:data:`RETIRED_COUNTS`)."""
    retired = dict.fromkeys(RETIRED_COUNTS)
    wanted: JsonObject = {"phase": phase, "state": state, "message": message, **retired}
    live = ars.raw.get("status") or {}
    changed = {key: value for key, value in wanted.items() if live.get(key) != value}
    return {"status": changed} if changed else None
