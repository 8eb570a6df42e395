"""The CustomResourceDefinitions, as data: ARC's ``actions.github.com/v1alpha1``
EphemeralRunnerSet, EphemeralRunner, AutoscalingRunnerSet and AutoscalingListener
schemas of both ARC lines, 0.14 and 0.15, typed as ARC types them, plus ours.

Every field of either line is here with ARC's type: 0.15's guard fields on the set
(``spec.actionableRevision``, ``status.appliedActionableRevision``,
``status.finishedRunnerCleanupPatchID``, ``status.phase``: ARC PR #4642 and the revision
rollout before it), 0.14's ``status.state`` and 0.15's ``status.phase`` and
``status.observedGeneration`` on the AutoscalingRunnerSet, 0.15's ``spec.phase`` on the
AutoscalingListener. Ours on top: the set's conditions, the ARS's ``status.message``,
the listener's restart backoff in its status, the short names, printer columns after
ARC's. Nothing is required that either line leaves optional (0.15 dropped 0.14's
``spec.patchID``, ``status.currentReplicas`` and the runner spec's GitHub fields), so
an object either ARC line accepts is accepted here, and a switch back to ARC meets no
refusal; the controller still writes what 0.14 requires.

The runner counts ARC's status carries are kept in the schemas (an object ARC wrote
stays valid) but are not the controller's: it counts runners in metrics and ``ersctl
status``, as ARC does after 0.15.1 (#4557), so no status is written for a runner. The
printer columns are ARC's less its count columns (those would show a stale value, and
the finished and deleting ones are in neither schema, so they were always empty); ARC
dropped them after 0.15.1 too (#4557, #4583).

The pod template is Kubernetes' PodSpec, passed in by the caller
(``ersctl.crds.podspec``); :func:`crds` is pure.
"""

from __future__ import annotations

import copy
from typing import Any, Final

JsonObject = dict[str, Any]

GROUP: Final = "actions.github.com"
VERSION: Final = "v1alpha1"


def _string() -> JsonObject:
    return {"type": "string"}


def _integer(description: str | None = None, *, int64: bool = False) -> JsonObject:
    out: JsonObject = {"type": "integer"}
    if int64:
        out["format"] = "int64"
    if description:
        out["description"] = description
    return out


_UNKEPT_COUNT = (
    "ARC's runner count; not kept by this controller (the "
    "gha_controller_*_ephemeral_runners gauges and `ersctl status` count the runners)."
)


def _string_map() -> JsonObject:
    return {"type": "object", "additionalProperties": {"type": "string"}}


def _conditions() -> JsonObject:
    """A standard condition list (``metav1.Condition``), keyed by ``type``."""
    condition = {
        "type": "object",
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": _string(),
            "observedGeneration": _integer(int64=True),
            "reason": _string(),
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "type": _string(),
        },
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
    }
    return {
        "type": "array",
        "description": "RunnersFailing: most of the set's recent runners failed, so its "
        "replacements back off.",
        "items": condition,
        "x-kubernetes-list-map-keys": ["type"],
        "x-kubernetes-list-type": "map",
    }


def _labels_and_annotations(description: str) -> JsonObject:
    return {
        "type": "object",
        "description": description,
        "properties": {"annotations": _string_map(), "labels": _string_map()},
    }


def _proxy() -> JsonObject:
    server = {
        "type": "object",
        "properties": {
            "credentialSecretRef": _string(),
            "url": {"type": "string", "description": "Required"},
        },
    }
    return {
        "type": "object",
        "properties": {
            "http": copy.deepcopy(server),
            "https": copy.deepcopy(server),
            "noProxy": {"type": "array", "items": _string()},
        },
    }


def _github_server_tls() -> JsonObject:
    config_map_key = {
        "type": "object",
        "description": "Required",
        "properties": {
            "key": {"type": "string", "description": "The key to select."},
            "name": {"type": "string", "default": "", "description": "Name of the ConfigMap."},
            "optional": {
                "type": "boolean",
                "description": "Specify whether the ConfigMap or its key must be defined",
            },
        },
        "required": ["key"],
        "x-kubernetes-map-type": "atomic",
    }
    return {
        "type": "object",
        "description": "The CA bundle that GitHub Enterprise Server's certificate chains to.",
        "properties": {
            "certificateFrom": {
                "type": "object",
                "description": "Required",
                "properties": {"configMapKeyRef": config_map_key},
            }
        },
    }


def _vault_config() -> JsonObject:
    azure = {
        "type": "object",
        "properties": {
            key: _string() for key in ("certificatePath", "clientId", "tenantId", "url")
        },
        "required": ["certificatePath", "clientId", "tenantId", "url"],
    }
    return {
        "type": "object",
        "properties": {
            "azureKeyVault": azure,
            "proxy": _proxy(),
            "type": {"type": "string", "description": "Which vault resolves the secrets."},
        },
    }


def pod_template_metadata(description: str) -> JsonObject:
    """A PodTemplateSpec's ``metadata``, as controller-gen renders its ObjectMeta."""
    return {
        "type": "object",
        "description": description,
        "properties": {
            "annotations": _string_map(),
            "finalizers": {"type": "array", "items": _string()},
            "labels": _string_map(),
            "name": _string(),
            "namespace": _string(),
        },
    }


def runner_spec(pod_spec: JsonObject) -> JsonObject:
    """ARC's EphemeralRunnerSpec: an ERS's ``spec.ephemeralRunnerSpec`` and an ER's ``spec``."""
    pod = copy.deepcopy(pod_spec)
    pod["description"] = "The runner Pod's spec (Kubernetes core/v1 PodSpec)."
    metadata = pod_template_metadata("Labels and annotations of the runner Pod.")
    return {
        "type": "object",
        "description": "What a runner is made of: its GitHub registration and its Pod.",
        "properties": {
            "ephemeralRunnerConfigSecretMetadata": _labels_and_annotations(
                "Labels and annotations of the runner's JIT configuration Secret."
            ),
            "githubConfigSecret": _string(),
            "githubConfigUrl": _string(),
            "githubServerTLS": _github_server_tls(),
            "metadata": metadata,
            "proxy": _proxy(),
            "proxySecretRef": _string(),
            "runnerScaleSetId": _integer(),
            "spec": pod,
            "vaultConfig": _vault_config(),
        },
    }


def _object(description: str, spec: JsonObject, status: JsonObject) -> JsonObject:
    return {
        "type": "object",
        "description": description,
        "properties": {
            "apiVersion": _string(),
            "kind": _string(),
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }


def ers_schema(pod_spec: JsonObject) -> JsonObject:
    """The EphemeralRunnerSet's ``openAPIV3Schema``."""
    spec = {
        "type": "object",
        "description": "The desired runners: how many (the listener's) and from what template.",
        "properties": {
            "actionableRevision": _integer(
                "Bumped when the runner template changes and idle runners must be rebuilt.",
                int64=True,
            ),
            "ephemeralRunnerMetadata": _labels_and_annotations(
                "Labels and annotations given to every new EphemeralRunner."
            ),
            "ephemeralRunnerSpec": runner_spec(pod_spec),
            "patchID": _integer(
                "The listener's patch sequence number for this desired state; 0 when idle "
                "at the minimum. Not monotonic: it resets when the listener restarts."
            ),
            "replicas": _integer("The number of EphemeralRunners wanted, written by the listener."),
        },
    }
    status = {
        "type": "object",
        "description": "What the controller observed and did.",
        "properties": {
            "appliedActionableRevision": _integer(
                "The spec.actionableRevision whose idle-runner rebuild has completed.",
                int64=True,
            ),
            "conditions": _conditions(),
            "currentReplicas": _integer(
                _UNKEPT_COUNT + " Held at 0: ARC 0.14's schema requires it."
            ),
            "failedEphemeralRunners": _integer(_UNKEPT_COUNT),
            "finishedRunnerCleanupPatchID": _integer(
                "The spec.patchID a finished-runner cleanup was performed for; scale up is "
                "suppressed while spec.patchID still equals it."
            ),
            "pendingEphemeralRunners": _integer(_UNKEPT_COUNT),
            "phase": {"type": "string", "description": "Running or Outdated."},
            "runningEphemeralRunners": _integer(_UNKEPT_COUNT),
        },
    }
    return _object("A set of EphemeralRunners scaled by one listener.", spec, status)


def er_schema(pod_spec: JsonObject) -> JsonObject:
    """The EphemeralRunner's ``openAPIV3Schema``."""
    status = {
        "type": "object",
        "description": "The runner's registration, phase and job.",
        "properties": {
            "failures": {
                "type": "object",
                "additionalProperties": {"type": "string", "format": "date-time"},
            },
            "jobDisplayName": _string(),
            "jobId": _string(),
            "jobRepositoryName": _string(),
            "jobRequestId": _integer(int64=True),
            "jobWorkflowRef": _string(),
            "message": _string(),
            "phase": {
                "type": "string",
                "description": "Pending (or empty), Running, Succeeded, Failed or Outdated.",
            },
            "ready": {"type": "boolean", "description": "True once the runner is online."},
            "reason": _string(),
            "runnerId": _integer(),
            "runnerName": _string(),
            "workflowRunId": _integer(int64=True),
        },
    }
    return _object("One GitHub Actions runner and its Pod.", runner_spec(pod_spec), status)


def _column(name: str, path: str, kind: str) -> JsonObject:
    return {"jsonPath": path, "name": name, "type": kind}


ERS_COLUMNS: Final = (
    # ARC's, in ARC's order, less the runner counts (module docstring).
    _column("DesiredReplicas", ".spec.replicas", "integer"),
    _column("Phase", ".status.phase", "string"),  # 0.15's
    # Ours.
    _column("PatchID", ".spec.patchID", "integer"),
    _column("Age", ".metadata.creationTimestamp", "date"),
)

ER_COLUMNS: Final = (
    # ARC's, in ARC's order; the phase column is headed as 0.15 heads it (0.14: Status).
    _column("GitHub Config URL", ".spec.githubConfigUrl", "string"),
    _column("RunnerId", ".status.runnerId", "number"),
    _column("Phase", ".status.phase", "string"),
    _column("JobRepository", ".status.jobRepositoryName", "string"),
    _column("JobWorkflowRef", ".status.jobWorkflowRef", "string"),
    _column("WorkflowRunId", ".status.workflowRunId", "number"),
    _column("JobDisplayName", ".status.jobDisplayName", "string"),
    _column("JobId", ".status.jobId", "string"),
    _column("Message", ".status.message", "string"),
    _column("Age", ".metadata.creationTimestamp", "date"),
)


def _ars_pod_template(pod_spec: JsonObject, description: str) -> JsonObject:
    """A Kubernetes PodTemplateSpec (``metadata`` and ``spec``) around ``pod_spec``."""
    pod = copy.deepcopy(pod_spec)
    pod["description"] = "The Pod's spec (Kubernetes core/v1 PodSpec)."
    return {
        "type": "object",
        "description": description,
        "properties": {
            "metadata": pod_template_metadata("Labels and annotations of the Pod."),
            "spec": pod,
        },
    }


def _runner_count(description: str) -> JsonObject:
    return {"type": "integer", "minimum": 0, "description": description}


def ars_schema(pod_spec: JsonObject) -> JsonObject:
    """The AutoscalingRunnerSet's ``openAPIV3Schema``: ARC's (0.14's ``status.state``,
    0.15's ``status.phase`` and ``status.observedGeneration``), plus ``status.message``
    (ours: why the state is what it is)."""
    resource_meta = _labels_and_annotations
    spec = {
        "type": "object",
        "description": "One runner scale set: its GitHub registration, runners and listener.",
        "properties": {
            "autoscalingListener": resource_meta("Metadata of the AutoscalingListener."),
            "ephemeralRunnerConfigSecretMetadata": resource_meta(
                "Labels and annotations of each runner's JIT configuration Secret."
            ),
            "ephemeralRunnerMetadata": resource_meta("Metadata of each EphemeralRunner."),
            "ephemeralRunnerSetMetadata": resource_meta("Metadata of the EphemeralRunnerSet."),
            "githubConfigSecret": {"type": "string", "description": "Required"},
            "githubConfigUrl": {"type": "string", "description": "Required"},
            "githubServerTLS": _github_server_tls(),
            "listenerConfigSecretMetadata": resource_meta("Metadata of the listener's config."),
            "listenerMetrics": _metrics_config(),
            "listenerRoleBindingMetadata": resource_meta("Metadata of the listener RoleBinding."),
            "listenerRoleMetadata": resource_meta("Metadata of the listener's Role."),
            "listenerServiceAccountMetadata": resource_meta(
                "Metadata of the listener's ServiceAccount."
            ),
            "listenerTemplate": _ars_pod_template(pod_spec, "Merged into the listener Pod."),
            "maxRunners": _runner_count("At most this many runners (unset: no limit)."),
            "minRunners": _runner_count("At least this many runners, idle or busy."),
            "proxy": _proxy(),
            "runnerGroup": {"type": "string", "description": "Runner group name (Default)."},
            "runnerScaleSetLabels": {"type": "array", "items": _string()},
            "runnerScaleSetName": {"type": "string", "description": "Default: the name."},
            "template": _ars_pod_template(pod_spec, "The runner Pod template. Required."),
            "vaultConfig": _vault_config(),
        },
    }
    status = {
        "type": "object",
        "description": "What the controller observed and did.",
        "properties": {
            "currentRunners": _integer(_UNKEPT_COUNT),
            "failedEphemeralRunners": _integer(_UNKEPT_COUNT),
            "message": {"type": "string", "description": "Why the state is what it is."},
            "observedGeneration": _integer(
                "The metadata.generation the controller last acted on (ARC 0.15).", int64=True
            ),
            "pendingEphemeralRunners": _integer(_UNKEPT_COUNT),
            "phase": {"type": "string", "description": "Pending, Running, Failed or Deleting."},
            "runningEphemeralRunners": _integer(_UNKEPT_COUNT),
            "state": {
                "type": "string",
                "description": "What the controller is doing or "
                "waiting for (Running, or the reason it is not).",
            },
        },
    }
    return _object("One runner scale set, as ARC's Helm chart makes it.", spec, status)


ARS_COLUMNS: Final = (
    # ARC's, in ARC's order, less the runner counts (module docstring).
    _column("Minimum Runners", ".spec.minRunners", "integer"),
    _column("Maximum Runners", ".spec.maxRunners", "integer"),
    _column("Phase", ".status.phase", "string"),  # 0.15's; 0.14 shows State here
    _column("State", ".status.state", "string"),  # 0.14's
    # Ours.
    _column("Age", ".metadata.creationTimestamp", "date"),
)


def ars_crds(pod_spec: JsonObject) -> dict[str, JsonObject]:
    """File name -> CRD document of the AutoscalingRunnerSet."""
    return {
        "actions.github.com_autoscalingrunnersets.yaml": _crd(
            "AutoscalingRunnerSet",
            "autoscalingrunnersets",
            "ars",
            ARS_COLUMNS,
            ars_schema(pod_spec),
        ),
    }


def _crd(
    kind: str, plural: str, short_name: str, columns: tuple[JsonObject, ...], schema: JsonObject
) -> JsonObject:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": [short_name],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [dict(c) for c in columns],
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def crds(pod_spec: JsonObject) -> dict[str, JsonObject]:
    """File name -> CRD document, for every resource, around ``pod_spec``."""
    return {
        "actions.github.com_ephemeralrunnersets.yaml": _crd(
            "EphemeralRunnerSet", "ephemeralrunnersets", "ers", ERS_COLUMNS, ers_schema(pod_spec)
        ),
        "actions.github.com_ephemeralrunners.yaml": _crd(
            "EphemeralRunner", "ephemeralrunners", "er", ER_COLUMNS, er_schema(pod_spec)
        ),
        **ars_crds(pod_spec),
        **listener_crds(pod_spec),
    }


# -- AutoscalingListener ---------------------------------------------------------------


def _metrics_config() -> JsonObject:
    """ARC's MetricsConfig: which of the listener's series, with which labels (and
    buckets), by metric name; the listener config's ``metrics`` block."""

    def metric(description: str, *, buckets: bool = False) -> JsonObject:
        properties: JsonObject = {"labels": {"type": "array", "items": _string()}}
        if buckets:
            properties["buckets"] = {"type": "array", "items": {"type": "number"}}
        return {
            "type": "object",
            "description": description,
            "properties": properties,
            "required": ["labels"],
        }

    def by_name(description: str, *, buckets: bool = False) -> JsonObject:
        return {"type": "object", "additionalProperties": metric(description, buckets=buckets)}

    return {
        "type": "object",
        "description": "The listener's metrics to publish, by name, with their labels.",
        "properties": {
            "counters": by_name("One counter and the labels it carries."),
            "gauges": by_name("One gauge and the labels it carries."),
            "histograms": by_name("One histogram, its labels and buckets.", buckets=True),
        },
    }


def _pod_template(pod_spec: JsonObject) -> JsonObject:
    pod = copy.deepcopy(pod_spec)
    pod["description"] = "The listener Pod's spec (Kubernetes core/v1 PodSpec)."
    return {
        "type": "object",
        "description": "Merged into the listener Pod, as ARC merges an ARS's listenerTemplate.",
        "properties": {
            "metadata": pod_template_metadata("Labels and annotations of the listener Pod."),
            "spec": pod,
        },
    }


def al_schema(pod_spec: JsonObject) -> JsonObject:
    """The AutoscalingListener's ``openAPIV3Schema``: ARC's spec, whole (0.15's
    ``spec.phase`` too), and a status holding the listener Pod's restart backoff (ours;
    ARC's status is empty)."""
    local_object_reference = {
        "type": "object",
        "properties": {"name": {"type": "string", "default": ""}},
        "x-kubernetes-map-type": "atomic",
    }
    minimum_zero = {"type": "integer", "minimum": 0}
    spec = {
        "type": "object",
        "description": "One scale set's listener: where it connects and what it scales.",
        "properties": {
            "autoscalingRunnerSetName": _string(),
            "autoscalingRunnerSetNamespace": _string(),
            "configSecretMetadata": _labels_and_annotations(
                "Labels and annotations of the listener's config Secret."
            ),
            "ephemeralRunnerSetName": _string(),
            "githubConfigSecret": _string(),
            "githubConfigUrl": _string(),
            "githubServerTLS": _github_server_tls(),
            "image": _string(),
            "imagePullSecrets": {"type": "array", "items": local_object_reference},
            "maxRunners": dict(minimum_zero),
            "metrics": _metrics_config(),
            "minRunners": dict(minimum_zero),
            "phase": {
                "type": "string",
                "description": "Running, or Stopped: ARC 0.15 parks a scale set's listener.",
            },
            "proxy": _proxy(),
            "roleBindingMetadata": _labels_and_annotations(
                "Labels and annotations of the listener's RoleBinding."
            ),
            "roleMetadata": _labels_and_annotations(
                "Labels and annotations of the listener's Role."
            ),
            "runnerScaleSetId": _integer(),
            "serviceAccountMetadata": _labels_and_annotations(
                "Labels and annotations of the listener's ServiceAccount."
            ),
            "template": _pod_template(pod_spec),
            "vaultConfig": _vault_config(),
        },
    }
    status = {
        "type": "object",
        "description": "The listener Pod's restarts (ours: ARC's status is empty).",
        "properties": {
            "lastListenerExitTime": {
                "type": "string",
                "format": "date-time",
                "description": "When the listener Pod last exited.",
            },
            "listenerRestarts": _integer(
                "Listener Pods that exited in a row; the next waits 5 s doubled per restart, "
                "up to 5 minutes. Reset by a Pod that ran for 5 minutes."
            ),
        },
    }
    return _object("A scale set's listener: its Pod, config Secret and RBAC.", spec, status)


AL_COLUMNS: Final = (
    # ARC's, in ARC's order.
    _column("GitHub Configure URL", ".spec.githubConfigUrl", "string"),
    _column("AutoscalingRunnerSet Namespace", ".spec.autoscalingRunnerSetNamespace", "string"),
    _column("AutoscalingRunnerSet Name", ".spec.autoscalingRunnerSetName", "string"),
    # Ours.
    _column("Restarts", ".status.listenerRestarts", "integer"),
    _column("Age", ".metadata.creationTimestamp", "date"),
)


def listener_crds(pod_spec: JsonObject) -> dict[str, JsonObject]:
    """File name -> the AutoscalingListener CRD (short name ``al``)."""
    return {
        "actions.github.com_autoscalinglisteners.yaml": _crd(
            "AutoscalingListener", "autoscalinglisteners", "al", AL_COLUMNS, al_schema(pod_spec)
        ),
    }
