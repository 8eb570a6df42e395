"""The resource model shared by ghalistener and ersctl.

ARC's ``actions.github.com/v1alpha1`` EphemeralRunnerSet (ERS), EphemeralRunner (ER),
AutoscalingRunnerSet (ARS) and AutoscalingListener (AL), as thin typed views over the
JSON documents the API server returns. A view wraps the document itself rather than copying fields into a dataclass, so every field
this project does not model (pod templates, ARC additions, fields from newer
versions) survives a read-modify-write unchanged.

Reading a field that holds the wrong type raises :class:`FieldError` naming the
field's path, so a malformed object becomes one clear message (and, in the
controller, a Warning Event) instead of a stack trace.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final, NewType, Self

GROUP: Final = "actions.github.com"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

ERS_KIND: Final = "EphemeralRunnerSet"
ERS_PLURAL: Final = "ephemeralrunnersets"
ER_KIND: Final = "EphemeralRunner"
ER_PLURAL: Final = "ephemeralrunners"
AL_KIND: Final = "AutoscalingListener"
AL_PLURAL: Final = "autoscalinglisteners"

ARS_KIND: Final = "AutoscalingRunnerSet"
ARS_PLURAL: Final = "autoscalingrunnersets"

ERS_FINALIZER: Final = "ephemeralrunnerset.actions.github.com/finalizer"
ER_FINALIZER: Final = "ephemeralrunner.actions.github.com/finalizer"
ER_REGISTRATION_FINALIZER: Final = (
    "ephemeralrunner.actions.github.com/runner-registration-finalizer"
)
AL_FINALIZER: Final = "autoscalinglistener.actions.github.com/finalizer"

PATCH_ID_ANNOTATION: Final = "actions.github.com/patch-id"
COMPLETED_RUNNERS_ANNOTATION: Final = "actions.github.com/completed-runner-ids"
"""On a set, written by our listener in the merge patch that carries ``spec.replicas`` and
``spec.patchID``: the GitHub runner IDs (comma-separated, newest last, a bounded number)
whose completed jobs those replicas already leave out (``ersctl.ephemeralrunnerset.scaling``)."""
LAST_MESSAGE_ANNOTATION: Final = "actions.github.com/last-message-id"
"""On a set, written by our listener with every patch: ``<scale set id>/<message id>``, the
newest scale-set message whose statistics it has published (a restarted listener reads it
back and recognises older statistics redelivered to it)."""
ACTIONABLE_REVISION_ANNOTATION: Final = "actions.github.com/actionable-revision"
INTEGRITY_HASH_ANNOTATION: Final = "actions.github.com/integrity-hash"
"""ARC's hash of a generated object's content: never copied from one object to another."""
LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
RUNNER_COMPONENT: Final = "runner"
LISTENER_COMPONENT: Final = "runner-scale-set-listener"
PART_OF_LABEL: Final = "app.kubernetes.io/part-of"
PART_OF_VALUE: Final = "gha-runner-scale-set"
# ARC's labels naming a scale set and its GitHub scope, on its set, runners' Secrets,
# listener and listener Pods (dashboards and ARC's own controllers select by them).
SCALE_SET_NAME_LABEL: Final = "actions.github.com/scale-set-name"
SCALE_SET_NAMESPACE_LABEL: Final = "actions.github.com/scale-set-namespace"
ENTERPRISE_LABEL: Final = "actions.github.com/enterprise"
ORGANIZATION_LABEL: Final = "actions.github.com/organization"
REPOSITORY_LABEL: Final = "actions.github.com/repository"

MAX_PATCH_ID: Final = 2**31 - 1
"""The listener's patch ID sequence wraps here (Go's math.MaxInt32 in ARC)."""

ERS_CRD: Final = f"{ERS_PLURAL}.{GROUP}"
ER_CRD: Final = f"{ER_PLURAL}.{GROUP}"
ARS_CRD: Final = f"{ARS_PLURAL}.{GROUP}"
AL_CRD: Final = f"{AL_PLURAL}.{GROUP}"

GUARD_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    # What the guard and the revision rollout write on a set. ARC 0.14's CRD has none
    # of these: its API server prunes them, the marker write "succeeds" with the marker
    # dropped, the scale-up check never sees it, and the guard is off without a word.
    ERS_CRD: (
        "spec.actionableRevision",
        "status.appliedActionableRevision",
        "status.finishedRunnerCleanupPatchID",
        "status.phase",
    ),
    # What both judge runners by (ARC's CRD has them; a trimmed one might not).
    ER_CRD: ("status.phase", "status.jobId", "status.runnerId"),
}
"""CRD name -> the field paths the served schema must keep for the guard to work."""

ARS_REQUIRED_FIELDS: Final = ("spec.template", "spec.githubConfigUrl")
"""What the AutoscalingRunnerSet controller reads on an ARS (both ARC lines' CRDs have
them): a served ARS CRD must keep them (start-up check, ``ersctl reconcile``)."""
ARS_STATUS_FIELDS: Final = ("status.phase", "status.state", "status.message")
"""What the AutoscalingRunnerSet controller shows in an ARS's status: ARC 0.14's CRD
drops ``phase``, 0.15's ``state``, both ``message``; only what users read is lost."""
AL_REQUIRED_FIELDS: Final = ("spec.ephemeralRunnerSetName", "spec.runnerScaleSetId")
"""What the ARS controller writes on the AutoscalingListeners it makes (ARC's CRD has them)."""
LISTENER_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    # The listener controller's restart backoff: under ARC's AutoscalingListener CRD
    # (an empty status) the count is dropped and every exit waits the first step only;
    # without the CRD at all its informer would never sync.
    AL_CRD: ("status.listenerRestarts", "status.lastListenerExitTime"),
}
"""CRD name -> the field paths of the listener controller's restart backoff."""

INSTALL_CRDS_COMMAND: Final = "kubectl apply --server-side --force-conflicts -k ersctl/crds"
"""How users install this project's CRDs over ARC's (README: "Run on Kubernetes")."""

PatchID = NewType("PatchID", int)
RunnerID = NewType("RunnerID", int)

JsonObject = dict[str, Any]


class ERSPhase(StrEnum):
    RUNNING = "Running"
    OUTDATED = "Outdated"


EXITED_WITHOUT_JOB_REASON: Final = "RunnerExitedWithoutJob"
"""A Succeeded runner's ``status.reason`` when it exited 0 without ever running a job
(the Event reason ``ersctl.reasons.Reason.RUNNER_EXITED_WITHOUT_JOB`` is this string)."""


class ERPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    OUTDATED = "Outdated"


class FieldError(ValueError):
    """A field of a Kubernetes object is missing or holds the wrong type.

    ``path`` is the dotted JSON path (``spec.replicas``); ``str()`` is one line.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def _walk(doc: Mapping[str, Any], path: str) -> Any:
    node: Any = doc
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _int_field(
    doc: Mapping[str, Any], path: str, *, default: int = 0, minimum: int | None = None
) -> int:
    value = _walk(doc, path)
    if value is None:
        return default
    # bool is an int in Python, but not in JSON's integer type.
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(path, f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise FieldError(path, f"must be >= {minimum}, got {value}")
    return value


def _str_field(doc: Mapping[str, Any], path: str) -> str:
    value = _walk(doc, path)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FieldError(path, f"must be a string, got {value!r}")
    return value


def _section(doc: JsonObject, key: str) -> JsonObject:
    """The dict at ``doc[key]``, created when absent (for writes)."""
    node = doc.get(key)
    if not isinstance(node, dict):
        node = {}
        doc[key] = node
    return node


class KubeObject:
    """A view over one Kubernetes object's JSON. Mutations write through to ``raw``."""

    def __init__(self, raw: JsonObject) -> None:
        self.raw = raw

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Self:
        """A view over a deep copy of ``raw``."""
        return cls(copy.deepcopy(dict(raw)))

    def to_dict(self) -> JsonObject:
        """A deep copy of the whole document, unmodelled fields included."""
        return copy.deepcopy(self.raw)

    def copy(self) -> Self:
        return type(self).from_dict(self.raw)

    @property
    def metadata(self) -> JsonObject:
        return _section(self.raw, "metadata")

    @property
    def name(self) -> str:
        return _str_field(self.raw, "metadata.name")

    @property
    def api_version(self) -> str:
        """``apiVersion``; ARC's group version when absent (list items arrive without
        it, and the views of this module are ARC's kinds)."""
        return str(self.raw.get("apiVersion") or API_VERSION)

    @property
    def kind(self) -> str:
        """``kind``; when absent, the view's class name (named after its kind)."""
        return str(self.raw.get("kind") or type(self).__name__)

    @property
    def namespace(self) -> str:
        return _str_field(self.raw, "metadata.namespace")

    @property
    def key(self) -> str:
        """``namespace/name``, the work-queue key."""
        return f"{self.namespace}/{self.name}"

    @property
    def uid(self) -> str:
        return _str_field(self.raw, "metadata.uid")

    @property
    def resource_version(self) -> str:
        return _str_field(self.raw, "metadata.resourceVersion")

    @property
    def generation(self) -> int:
        return _int_field(self.raw, "metadata.generation")

    @property
    def creation_timestamp(self) -> str:
        return _str_field(self.raw, "metadata.creationTimestamp")

    @property
    def deletion_timestamp(self) -> str | None:
        return _str_field(self.raw, "metadata.deletionTimestamp") or None

    @property
    def is_deleting(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def labels(self) -> dict[str, str]:
        return _section(self.metadata, "labels")

    @property
    def annotations(self) -> dict[str, str]:
        return _section(self.metadata, "annotations")

    @property
    def finalizers(self) -> list[str]:
        value = self.metadata.get("finalizers")
        if not isinstance(value, list):
            value = []
            self.metadata["finalizers"] = value
        return value

    def has_finalizer(self, finalizer: str) -> bool:
        # A pure read (no section created): cached runner views answer it from the
        # shared document (ersctl.kube.copies).
        finalizers = _walk(self.raw, "metadata.finalizers")
        return isinstance(finalizers, list) and finalizer in finalizers

    @property
    def owner_references(self) -> list[JsonObject]:
        refs = self.metadata.get("ownerReferences")
        return refs if isinstance(refs, list) else []

    def controller_owner(self) -> JsonObject | None:
        """The ownerReference with ``controller: true``, if any."""
        for ref in self.owner_references:
            if isinstance(ref, dict) and ref.get("controller") is True:
                return ref
        return None

    @property
    def spec(self) -> JsonObject:
        return _section(self.raw, "spec")

    @property
    def status(self) -> JsonObject:
        return _section(self.raw, "status")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r}, resourceVersion={self.resource_version!r})"


class EphemeralRunnerSet(KubeObject):
    """An EphemeralRunnerSet: the listener writes ``spec.replicas`` and ``spec.patchID``."""

    @property
    def replicas(self) -> int:
        return _int_field(self.raw, "spec.replicas", minimum=0)

    @replicas.setter
    def replicas(self, value: int) -> None:
        self.spec["replicas"] = value

    @property
    def patch_id(self) -> PatchID:
        return PatchID(_int_field(self.raw, "spec.patchID", minimum=0))

    @patch_id.setter
    def patch_id(self, value: int) -> None:
        self.spec["patchID"] = value

    @property
    def actionable_revision(self) -> int:
        return _int_field(self.raw, "spec.actionableRevision", minimum=0)

    @actionable_revision.setter
    def actionable_revision(self, value: int) -> None:
        self.spec["actionableRevision"] = value

    @property
    def ephemeral_runner_spec(self) -> JsonObject:
        """The runner template. Raises FieldError when absent: runners need one."""
        value = self.raw.get("spec", {}).get("ephemeralRunnerSpec")
        if not isinstance(value, dict) or not value:
            raise FieldError("spec.ephemeralRunnerSpec", "is missing")
        return value

    @property
    def ephemeral_runner_metadata(self) -> JsonObject:
        value = _walk(self.raw, "spec.ephemeralRunnerMetadata")
        return value if isinstance(value, dict) else {}

    @property
    def phase(self) -> str:
        return _str_field(self.raw, "status.phase")

    @phase.setter
    def phase(self, value: str) -> None:
        self.status["phase"] = value

    @property
    def applied_actionable_revision(self) -> int:
        return _int_field(self.raw, "status.appliedActionableRevision")

    @applied_actionable_revision.setter
    def applied_actionable_revision(self, value: int) -> None:
        self.status["appliedActionableRevision"] = value

    @property
    def finished_runner_cleanup_patch_id(self) -> PatchID:
        """The marker: the patch ID the last finished-runner cleanup serviced."""
        return PatchID(_int_field(self.raw, "status.finishedRunnerCleanupPatchID"))

    @finished_runner_cleanup_patch_id.setter
    def finished_runner_cleanup_patch_id(self, value: int) -> None:
        self.status["finishedRunnerCleanupPatchID"] = value

    @property
    def completed_runner_ids(self) -> frozenset[RunnerID]:
        """The runner IDs of :data:`COMPLETED_RUNNERS_ANNOTATION`; none when it is absent or
        malformed (ARC's rules then hold for every finished runner, which is safe)."""
        value = self.annotations.get(COMPLETED_RUNNERS_ANNOTATION, "")
        return frozenset(parse_runner_ids(value) or ())


# The status fields ARC's EphemeralRunnerSet schema requires, with the value the
# controller holds them at. ARC 0.14's CRD requires status.currentReplicas: a status write
# that leaves it absent is refused whole (422 "status.currentReplicas: Required value"),
# so the first marker or phase write on a new set would fail on every retry, and with it
# the cleanup of finished runners that waits for the marker. It is not a count here: the
# controller keeps no runner counts in the status (ersctl.ephemeralrunnerset.status).
ERS_REQUIRED_STATUS: Final[Mapping[str, object]] = {"currentReplicas": 0}


def complete_status_patch(ers: EphemeralRunnerSet, patch: Mapping[str, Any]) -> JsonObject:
    """``patch`` (an ERS ``/status`` merge patch) plus every field of
    :data:`ERS_REQUIRED_STATUS` that neither the patch nor ``ers`` (the object it was
    decided on) holds, at the value its absence reads as: the write then satisfies
    ARC's schema without changing what anyone reads."""
    status = dict(patch.get("status") or {})
    for field, absent_value in ERS_REQUIRED_STATUS.items():
        if field not in status and field not in ers.status:
            status[field] = absent_value
    completed = dict(patch)
    if status:
        completed["status"] = status
    return completed


class EphemeralRunner(KubeObject):
    """An EphemeralRunner: one runner pod, one job at most."""

    @property
    def phase(self) -> str:
        return _str_field(self.raw, "status.phase")

    @phase.setter
    def phase(self, value: str) -> None:
        self.status["phase"] = value

    @property
    def runner_id(self) -> RunnerID:
        return RunnerID(_int_field(self.raw, "status.runnerId"))

    @runner_id.setter
    def runner_id(self, value: int) -> None:
        self.status["runnerId"] = value

    @property
    def runner_name(self) -> str:
        return _str_field(self.raw, "status.runnerName")

    @runner_name.setter
    def runner_name(self, value: str) -> None:
        self.status["runnerName"] = value

    @property
    def ready(self) -> bool:
        return _walk(self.raw, "status.ready") is True

    @property
    def job_request_id(self) -> int:
        return _int_field(self.raw, "status.jobRequestId")

    @property
    def job_id(self) -> str:
        return _str_field(self.raw, "status.jobId")

    @property
    def job_repository_name(self) -> str:
        return _str_field(self.raw, "status.jobRepositoryName")

    @property
    def job_workflow_ref(self) -> str:
        return _str_field(self.raw, "status.jobWorkflowRef")

    @property
    def workflow_run_id(self) -> int:
        return _int_field(self.raw, "status.workflowRunId")

    @property
    def job_display_name(self) -> str:
        return _str_field(self.raw, "status.jobDisplayName")

    @property
    def has_job(self) -> bool:
        """ARC's rule: a runner has a job when ``status.jobId`` is non-empty."""
        return bool(self.job_id)

    @property
    def is_done(self) -> bool:
        return self.phase in (ERPhase.SUCCEEDED, ERPhase.FAILED, ERPhase.OUTDATED)

    @property
    def exited_unused(self) -> bool:
        """Succeeded without ever running a job (``status.reason``
        ``RunnerExitedWithoutJob``: a broken entrypoint looks like this, so its set counts
        it as a failure) and no job recorded since: a listener that was late with the job
        says otherwise."""
        reason = _str_field(self.raw, "status.reason")
        return (
            self.phase == ERPhase.SUCCEEDED
            and reason == EXITED_WITHOUT_JOB_REASON
            and not self.has_job
        )

    @property
    def patch_id(self) -> PatchID:
        """The ERS ``spec.patchID`` at creation; 0 when absent or unparsable."""
        return PatchID(_annotation_int(self._annotations(), PATCH_ID_ANNOTATION))

    @property
    def actionable_revision(self) -> int:
        """The ERS ``spec.actionableRevision`` at creation; 0 when absent or unparsable."""
        return _annotation_int(self._annotations(), ACTIONABLE_REVISION_ANNOTATION)

    def _annotations(self) -> Mapping[str, str]:
        value = _walk(self.raw, "metadata.annotations")
        return value if isinstance(value, dict) else {}

    @property
    def failures(self) -> JsonObject:
        value = _walk(self.raw, "status.failures")
        return value if isinstance(value, dict) else {}


def format_runner_ids(runner_ids: Iterable[int]) -> str:
    """:data:`COMPLETED_RUNNERS_ANNOTATION`'s value for ``runner_ids``, in their order."""
    return ",".join(str(runner_id) for runner_id in runner_ids)


def parse_runner_ids(text: str) -> tuple[RunnerID, ...] | None:
    """The runner IDs of :func:`format_runner_ids`'s ``text``, in order; None when any item
    is not a positive integer (a value nobody should trust in part)."""
    items = [item.strip() for item in text.split(",")] if text.strip() else []
    if not all(item.isascii() and item.isdigit() and int(item) > 0 for item in items):
        return None
    return tuple(RunnerID(int(item)) for item in items)


def format_last_message(scale_set_id: int, message_id: int) -> str:
    """:data:`LAST_MESSAGE_ANNOTATION`'s value."""
    return f"{scale_set_id}/{message_id}"


def parse_last_message(text: str, *, scale_set_id: int) -> int:
    """The message id of :func:`format_last_message`'s ``text`` when it is ``scale_set_id``'s,
    else 0 (message ids count per scale set: another one's say nothing)."""
    scale_set, sep, message = text.partition("/")
    if not sep or scale_set != str(scale_set_id) or not (message.isascii() and message.isdigit()):
        return 0
    return int(message)


def _annotation_int(annotations: Mapping[str, str], key: str) -> int:
    try:
        return int(annotations.get(key, "0"))
    except ValueError:
        return 0


def job_status_fields(
    *,
    job_request_id: int,
    job_id: str,
    repository: str,
    workflow_ref: str,
    workflow_run_id: int,
    display_name: str,
) -> JsonObject:
    """The ER ``status`` fields the listener writes on JobStarted, by their JSON names."""
    return {
        "jobRequestId": job_request_id,
        "jobId": job_id,
        "jobRepositoryName": repository,
        "jobWorkflowRef": workflow_ref,
        "workflowRunId": workflow_run_id,
        "jobDisplayName": display_name,
    }


def parse_time(value: object) -> datetime | None:
    """A Kubernetes ``metav1.Time`` (RFC 3339, ``Z`` or an offset) as an aware datetime;
    None when ``value`` is not such a string. A time without a zone is taken as UTC."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, as Kubernetes writes ``metav1.Time``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def controller_reference(owner: KubeObject, kind: str) -> JsonObject:
    """The ownerReference that makes ``owner`` (a ``kind`` of this API) the controller of
    a dependent, blocking the owner's deletion until the dependent is gone, as ARC sets it."""
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def metadata_patch(live: Mapping[str, Any], desired: Mapping[str, Any]) -> JsonObject:
    """The ``metadata`` of a merge patch bringing ``live``'s labels and annotations to
    ``desired``'s (both documents): the keys ``desired`` has that ``live`` lacks or
    holds otherwise. Keys others added stay, as ARC merges them; {} when none differ."""
    out: JsonObject = {}
    for section in ("labels", "annotations"):
        have = (live.get("metadata") or {}).get(section) or {}
        want = (desired.get("metadata") or {}).get(section) or {}
        changed = {key: value for key, value in want.items() if have.get(key) != value}
        if changed:
            out[section] = changed
    return out


class _ScaleSetObject(KubeObject):
    """What an AutoscalingRunnerSet and its AutoscalingListener both name: the GitHub
    configuration URL, its credentials Secret and the minimum of runners."""

    @property
    def github_config_url(self) -> str:
        return _str_field(self.raw, "spec.githubConfigUrl")

    @property
    def github_config_secret(self) -> str:
        return _str_field(self.raw, "spec.githubConfigSecret")

    @property
    def min_runners(self) -> int:
        return _int_field(self.raw, "spec.minRunners", minimum=0)


class AutoscalingRunnerSet(_ScaleSetObject):
    """An AutoscalingRunnerSet: one scale set, written by its user (``spec``); the
    controller writes its annotations (ARC's ``runner-scale-set-id`` and names), its
    finalizer and ``status``."""

    def without_label_prefixes(self, prefixes: Sequence[str]) -> AutoscalingRunnerSet:
        """A copy whose ``metadata.labels`` lack those starting with one of ``prefixes``:
        the labels propagated to what the ARS makes (ARC's
        ``--exclude-label-propagation-prefix``)."""
        if not prefixes:
            return self
        kept = self.copy()
        labels = kept.metadata.get("labels")
        if isinstance(labels, dict):
            kept.metadata["labels"] = {
                k: v for k, v in labels.items() if not str(k).startswith(tuple(prefixes))
            }
        return kept

    @property
    def runner_group(self) -> str:
        return _str_field(self.raw, "spec.runnerGroup")

    @property
    def runner_scale_set_name(self) -> str:
        """``spec.runnerScaleSetName``, or the object's name when unset (ARC's rule)."""
        return _str_field(self.raw, "spec.runnerScaleSetName") or self.name

    @property
    def runner_scale_set_labels(self) -> list[str]:
        value = _walk(self.raw, "spec.runnerScaleSetLabels")
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise FieldError("spec.runnerScaleSetLabels", "must be a list of strings")
        return list(value)

    @property
    def max_runners(self) -> int | None:
        """``spec.maxRunners``; None when unset (no limit)."""
        if _walk(self.raw, "spec.maxRunners") is None:
            return None
        return _int_field(self.raw, "spec.maxRunners", minimum=0)

    @property
    def template(self) -> JsonObject:
        """The runner Pod template. Raises FieldError when absent or without containers."""
        value = _walk(self.raw, "spec.template")
        containers = _walk(self.raw, "spec.template.spec.containers")
        if not isinstance(value, dict) or not isinstance(containers, list) or not containers:
            raise FieldError("spec.template.spec.containers", "must list the runner container")
        return value

    def optional_section(self, key: str) -> JsonObject | None:
        """``spec[key]`` when it is an object (proxy, githubServerTLS, ...), else None."""
        value = self.raw.get("spec", {}).get(key)
        return value if isinstance(value, dict) else None

    @property
    def scale_set_id(self) -> int:
        """ARC's ``runner-scale-set-id`` annotation; 0 when absent or not a positive int."""
        value = _annotation_int(self.annotations, RUNNER_SCALE_SET_ID_ANNOTATION)
        return value if value > 0 else 0

    @property
    def state(self) -> str:
        return _str_field(self.raw, "status.state")

    @property
    def phase(self) -> str:
        return _str_field(self.raw, "status.phase")


ARS_FINALIZER: Final = "autoscalingrunnerset.actions.github.com/finalizer"
CLEANUP_PROTECTION_FINALIZER: Final = "actions.github.com/cleanup-protection"
"""ARC's finalizer on what an ARS uses while the ARS lives: its credentials Secret, and
the ServiceAccounts, Roles and RoleBindings ARC's Helm chart renders for it (named by
the :data:`CLEANUP_PROTECTED` annotations)."""
RUNNER_SCALE_SET_ID_ANNOTATION: Final = "runner-scale-set-id"
RUNNER_GROUP_NAME_ANNOTATION: Final = "actions.github.com/runner-group-name"
RUNNER_SCALE_SET_NAME_ANNOTATION: Final = "actions.github.com/runner-scale-set-name"
RUNNER_SPEC_HASH_ANNOTATION: Final = "actions.github.com/runner-spec-hash"
"""ARC 0.14's hash annotation on an EphemeralRunnerSet and an AutoscalingListener
(0.15 writes :data:`INTEGRITY_HASH_ANNOTATION` instead). ARC rebuilds the object when
the value differs from the one it computes."""
VALUES_HASH_ANNOTATION: Final = "actions.github.com/values-hash"
CLEANUP_SECRET_ANNOTATION: Final = "actions.github.com/cleanup-github-secret-name"  # noqa: S105


@dataclass(frozen=True)
class CleanupProtected:
    """An ARS annotation naming an object in the ARS's namespace that carries
    :data:`CLEANUP_PROTECTION_FINALIZER` until the ARS's teardown has finished.

    ``plural``: the object's resource (``ersctl.kube.client.BUILTIN``).
    ``forbidden_is_gone``: a 403 reading it counts as already gone (ARC's rule for the
    credentials Secret), rather than as a failure to retry.
    """

    annotation: str
    plural: str
    forbidden_is_gone: bool = False


CLEANUP_PROTECTED_SECRET: Final = CleanupProtected(
    CLEANUP_SECRET_ANNOTATION, "secrets", forbidden_is_gone=True
)
CLEANUP_PROTECTED: Final = (
    CleanupProtected(
        "actions.github.com/cleanup-kubernetes-mode-role-binding-name", "rolebindings"
    ),
    CleanupProtected("actions.github.com/cleanup-kubernetes-mode-role-name", "roles"),
    CleanupProtected(
        "actions.github.com/cleanup-kubernetes-mode-service-account-name", "serviceaccounts"
    ),
    CleanupProtected(
        "actions.github.com/cleanup-no-permission-service-account-name", "serviceaccounts"
    ),
    CLEANUP_PROTECTED_SECRET,
    CleanupProtected("actions.github.com/cleanup-manager-role-binding", "rolebindings"),
    CleanupProtected("actions.github.com/cleanup-manager-role-name", "roles"),
)
"""ARC's annotations on an ARS naming what its Helm chart (and, for the Secret, its
controller or ours) protected with :data:`CLEANUP_PROTECTION_FINALIZER`, in the order
ARC releases them. Without their release a ``helm uninstall`` or namespace deletion
hangs on those objects forever."""


class AutoscalingListener(_ScaleSetObject):
    """An AutoscalingListener: one scale set's listener, written by the ARS controller
    (ARC's spec) and acted on by the listener controller (its Pod, config Secret and
    RBAC). Its restart backoff lives in ``status`` (ours)."""

    @property
    def runner_scale_set_id(self) -> int:
        return _int_field(self.raw, "spec.runnerScaleSetId", minimum=0)

    @property
    def scale_set_namespace(self) -> str:
        """``spec.autoscalingRunnerSetNamespace``: where the set, its runners and the
        credentials Secret live (the listener itself may live elsewhere, as ARC puts it
        in the controller's namespace)."""
        return _str_field(self.raw, "spec.autoscalingRunnerSetNamespace")

    @property
    def scale_set_name(self) -> str:
        return _str_field(self.raw, "spec.autoscalingRunnerSetName")

    @property
    def runner_set_name(self) -> str:
        return _str_field(self.raw, "spec.ephemeralRunnerSetName")

    @property
    def max_runners(self) -> int:
        return _int_field(self.raw, "spec.maxRunners", minimum=0)

    @property
    def image(self) -> str:
        return _str_field(self.raw, "spec.image")

    def section(self, key: str) -> JsonObject | None:
        """``spec.<key>`` when it is an object, None when absent; FieldError otherwise."""
        value = self.raw.get("spec", {}).get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise FieldError(f"spec.{key}", f"must be an object, got {value!r}")
        return value

    @property
    def listener_restarts(self) -> int:
        """Listener Pods that exited in a row (ours, in ``status``)."""
        return _int_field(self.raw, "status.listenerRestarts", minimum=0)

    @property
    def last_listener_exit_time(self) -> str:
        return _str_field(self.raw, "status.lastListenerExitTime")
