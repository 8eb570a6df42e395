"""The resource model: typed views that keep every field they do not model."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ersctl import api

ARC_ERS: dict[str, Any] = {
    "apiVersion": "actions.github.com/v1alpha1",
    "kind": "EphemeralRunnerSet",
    "metadata": {
        "name": "arc-runners-x7k2p",
        "namespace": "arc-runners",
        "uid": "2b0b3d1c-7f0e-4c55-9a57-0f1f8b9c1a11",
        "resourceVersion": "81234",
        "generation": 12,
        "creationTimestamp": "2026-09-01T10:00:00Z",
        "labels": {"actions.github.com/scale-set-name": "arc-runners"},
        "annotations": {"actions.github.com/runner-spec-hash": "abc123"},
        "finalizers": [api.ERS_FINALIZER],
        "ownerReferences": [
            {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "AutoscalingRunnerSet",
                "name": "arc-runners",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": [{"manager": "manager", "operation": "Update"}],
    },
    "spec": {
        "replicas": 3,
        "patchID": 41,
        "actionableRevision": 7,
        "githubServerTLS": {
            "certificateFrom": {"configMapKeyRef": {"name": "ca", "key": "ca.crt"}}
        },
        "ephemeralRunnerMetadata": {"labels": {"team": "ci"}},
        "ephemeralRunnerSpec": {
            "githubConfigUrl": "https://github.com/my-org",
            "githubConfigSecret": "github-secret",
            "runnerScaleSetId": 12,
            "proxy": {"https": {"url": "http://proxy:3128"}},
            "vaultConfig": {"type": "azure_key_vault"},
            "metadata": {"labels": {"a": "b"}},
            "spec": {
                "containers": [
                    {"name": "runner", "image": "ghcr.io/actions/actions-runner:2.329.0"}
                ],
                "nodeSelector": {"kubernetes.io/os": "linux"},
            },
        },
    },
    "status": {
        "currentReplicas": 3,
        "pendingEphemeralRunners": 1,
        "runningEphemeralRunners": 2,
        "failedEphemeralRunners": 0,
        "phase": "Running",
        "appliedActionableRevision": 7,
        "finishedRunnerCleanupPatchID": 40,
        "someFutureField": {"nested": [1, 2, 3]},
    },
}

ARC_ER: dict[str, Any] = {
    "apiVersion": "actions.github.com/v1alpha1",
    "kind": "EphemeralRunner",
    "metadata": {
        "name": "arc-runners-x7k2p-runner-abcde",
        "namespace": "arc-runners",
        "generateName": "arc-runners-x7k2p-runner-",
        "annotations": {api.PATCH_ID_ANNOTATION: "41", api.ACTIONABLE_REVISION_ANNOTATION: "7"},
        "finalizers": [api.ER_FINALIZER, api.ER_REGISTRATION_FINALIZER],
        "ownerReferences": [
            {
                "apiVersion": api.API_VERSION,
                "kind": api.ERS_KIND,
                "name": "arc-runners-x7k2p",
                "uid": "2b0b3d1c-7f0e-4c55-9a57-0f1f8b9c1a11",
                "controller": True,
            }
        ],
    },
    "spec": {
        "githubConfigUrl": "https://github.com/my-org",
        "githubConfigSecret": "github-secret",
        "runnerScaleSetId": 12,
        "spec": {"containers": [{"name": "runner", "image": "runner:1"}]},
    },
    "status": {
        "phase": "Running",
        "ready": True,
        "runnerId": 1001,
        "runnerName": "arc-runners-x7k2p-runner-abcde",
        "failures": {"uid-1": "2026-09-01T10:05:00Z"},
        "jobRequestId": 5555,
        "jobId": "job-7",
        "jobRepositoryName": "my-org/app",
        "jobWorkflowRef": "my-org/app/.github/workflows/ci.yml@refs/heads/main",
        "workflowRunId": 999,
        "jobDisplayName": "build",
    },
}


def _round_trip(doc: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(doc))
    return result


@pytest.mark.parametrize(
    ("field", "setter", "path", "value"),
    [
        pytest.param(
            "replicas", lambda o: setattr(o, "replicas", 5), ("spec", "replicas"), 5, id="replicas"
        ),
        pytest.param(
            "patchID", lambda o: setattr(o, "patch_id", 42), ("spec", "patchID"), 42, id="patch-id"
        ),
        pytest.param(
            "marker",
            lambda o: setattr(o, "finished_runner_cleanup_patch_id", 0),
            ("status", "finishedRunnerCleanupPatchID"),
            0,
            id="marker",
        ),
        pytest.param(
            "applied",
            lambda o: setattr(o, "applied_actionable_revision", 8),
            ("status", "appliedActionableRevision"),
            8,
            id="applied-revision",
        ),
        pytest.param(
            "phase",
            lambda o: setattr(o, "phase", "Outdated"),
            ("status", "phase"),
            "Outdated",
            id="phase",
        ),
    ],
)
def test_an_ers_keeps_every_other_field_through_modify_and_serialize(
    field: str, setter: Any, path: tuple[str, str], value: Any
) -> None:
    original = _round_trip(ARC_ERS)
    ers = api.EphemeralRunnerSet.from_dict(original)

    setter(ers)
    out = _round_trip(ers.to_dict())

    expected = copy.deepcopy(original)
    expected[path[0]][path[1]] = value
    assert out == expected


def test_an_er_keeps_every_other_field_through_modify_and_serialize() -> None:
    original = _round_trip(ARC_ER)
    er = api.EphemeralRunner.from_dict(original)

    er.phase = api.ERPhase.SUCCEEDED
    out = _round_trip(er.to_dict())

    expected = copy.deepcopy(original)
    expected["status"]["phase"] = "Succeeded"
    assert out == expected


def test_from_dict_copies_so_the_source_document_is_untouched() -> None:
    source = _round_trip(ARC_ERS)
    ers = api.EphemeralRunnerSet.from_dict(source)
    ers.replicas = 99
    assert source["spec"]["replicas"] == 3


def test_ers_accessors_read_every_field_the_programs_use() -> None:
    ers = api.EphemeralRunnerSet.from_dict(ARC_ERS)
    assert (ers.name, ers.namespace, ers.key) == (
        "arc-runners-x7k2p",
        "arc-runners",
        "arc-runners/arc-runners-x7k2p",
    )
    assert (ers.replicas, ers.patch_id, ers.actionable_revision) == (3, 41, 7)
    assert ers.ephemeral_runner_spec["runnerScaleSetId"] == 12
    assert ers.ephemeral_runner_metadata == {"labels": {"team": "ci"}}
    assert (ers.phase, ers.applied_actionable_revision, ers.finished_runner_cleanup_patch_id) == (
        "Running",
        7,
        40,
    )
    assert ers.generation == 12
    assert ers.has_finalizer(api.ERS_FINALIZER)
    assert not ers.is_deleting
    owner = ers.controller_owner()
    assert owner is not None
    assert owner["kind"] == "AutoscalingRunnerSet"


def test_er_accessors_read_every_field_the_programs_use() -> None:
    er = api.EphemeralRunner.from_dict(ARC_ER)
    assert (er.phase, er.runner_id, er.runner_name) == (
        "Running",
        1001,
        "arc-runners-x7k2p-runner-abcde",
    )
    assert (er.job_request_id, er.job_id, er.job_repository_name) == (5555, "job-7", "my-org/app")
    assert er.job_workflow_ref.endswith("@refs/heads/main")
    assert (er.workflow_run_id, er.job_display_name) == (999, "build")
    assert er.has_job and er.ready and not er.is_done
    assert (er.patch_id, er.actionable_revision) == (41, 7)
    assert er.failures == {"uid-1": "2026-09-01T10:05:00Z"}
    owner = er.controller_owner()
    assert owner is not None
    assert owner["kind"] == api.ERS_KIND


def test_an_er_without_job_or_annotations_reads_as_empty() -> None:
    er = api.EphemeralRunner({"metadata": {"name": "r", "namespace": "n"}})
    assert not er.has_job
    assert (er.patch_id, er.actionable_revision, er.runner_id, er.phase) == (0, 0, 0, "")
    assert er.controller_owner() is None
    assert not er.is_deleting


def test_deletion_timestamp_marks_an_object_deleting() -> None:
    er = api.EphemeralRunner({"metadata": {"deletionTimestamp": "2026-09-01T10:00:00Z"}})
    assert er.is_deleting


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        pytest.param({"replicas": -1}, "spec.replicas", id="negative-replicas"),
        pytest.param({"replicas": "3"}, "spec.replicas", id="string-replicas"),
        pytest.param({"replicas": True}, "spec.replicas", id="bool-replicas"),
        pytest.param({"patchID": 1.5}, "spec.patchID", id="float-patch-id"),
        pytest.param({"patchID": -4}, "spec.patchID", id="negative-patch-id"),
    ],
)
def test_a_malformed_ers_field_is_a_field_error_naming_its_path(
    spec: dict[str, Any], path: str
) -> None:
    ers = api.EphemeralRunnerSet({"metadata": {"name": "x"}, "spec": spec})
    with pytest.raises(api.FieldError) as excinfo:
        _ = ers.replicas, ers.patch_id
    assert excinfo.value.path == path
    assert path in str(excinfo.value)
    assert "\n" not in str(excinfo.value)


def test_a_missing_runner_template_is_a_field_error() -> None:
    ers = api.EphemeralRunnerSet({"spec": {"replicas": 1}})
    with pytest.raises(api.FieldError, match=r"spec\.ephemeralRunnerSpec"):
        _ = ers.ephemeral_runner_spec


def test_an_unparsable_patch_id_annotation_reads_as_zero() -> None:
    er = api.EphemeralRunner({"metadata": {"annotations": {api.PATCH_ID_ANNOTATION: "x"}}})
    assert er.patch_id == 0


def test_a_status_patch_gets_arcs_required_count_only_where_the_set_has_none() -> None:
    bare = api.EphemeralRunnerSet({"metadata": {"name": "a"}})
    counted = api.EphemeralRunnerSet({"metadata": {"name": "a"}, "status": {"currentReplicas": 2}})
    patch = {"metadata": {"resourceVersion": "7"}, "status": {"phase": "Running"}}

    assert api.complete_status_patch(bare, patch) == {
        "metadata": {"resourceVersion": "7"},
        "status": {"phase": "Running", "currentReplicas": 0},
    }
    assert api.complete_status_patch(counted, patch) == patch
    with_count = {"status": {"currentReplicas": 3}}
    assert api.complete_status_patch(bare, with_count) == with_count
