"""Builders of EphemeralRunnerSet / EphemeralRunner documents for the controller tests."""

from __future__ import annotations

import itertools
from typing import Any

from ersctl import api

_counter = itertools.count(1)

RUNNER_SPEC: dict[str, Any] = {
    "githubConfigUrl": "https://github.com/octo-org",
    "githubConfigSecret": "github-config",
    "runnerScaleSetId": 7,
    "spec": {"containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner"}]},
}


def ers_doc(
    name: str = "runners",
    *,
    namespace: str = "arc",
    replicas: Any = 0,
    patch_id: Any = 0,
    actionable_revision: int | None = None,
    runner_spec: dict[str, Any] | None = RUNNER_SPEC,
    finalizers: list[str] | None = None,
    labels: dict[str, str] | None = None,
    runner_metadata: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An EphemeralRunnerSet document as a test would create it."""
    spec: dict[str, Any] = {"replicas": replicas, "patchID": patch_id}
    if actionable_revision is not None:
        spec["actionableRevision"] = actionable_revision
    if runner_spec is not None:
        spec["ephemeralRunnerSpec"] = runner_spec
    if runner_metadata is not None:
        spec["ephemeralRunnerMetadata"] = runner_metadata
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if finalizers is not None:
        metadata["finalizers"] = finalizers
    if labels is not None:
        metadata["labels"] = labels
    doc: dict[str, Any] = {
        "apiVersion": api.API_VERSION,
        "kind": api.ERS_KIND,
        "metadata": metadata,
        "spec": spec,
    }
    if status is not None:
        doc["status"] = status
    return doc


def runner(
    phase: str | None = None,
    *,
    name: str | None = None,
    created: str | None = None,
    patch_id: int | str | None = None,
    revision: int | None = None,
    runner_id: int = 0,
    job_id: str = "",
    job_request_id: int = 0,
    deleting: bool = False,
) -> api.EphemeralRunner:
    """An in-memory EphemeralRunner view (for the pure classification and decision tests)."""
    seq = next(_counter)
    annotations: dict[str, str] = {}
    if patch_id is not None:
        annotations[api.PATCH_ID_ANNOTATION] = str(patch_id)
    if revision is not None:
        annotations[api.ACTIONABLE_REVISION_ANNOTATION] = str(revision)
    metadata: dict[str, Any] = {
        "name": name or f"runners-runner-{seq:05d}",
        "namespace": "arc",
        "creationTimestamp": created or f"2026-11-29T10:{seq // 60 % 60:02d}:{seq % 60:02d}Z",
        "annotations": annotations,
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-29T12:00:00Z"
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if runner_id:
        status["runnerId"] = runner_id
    if job_id:
        status["jobId"] = job_id
    if job_request_id:
        status["jobRequestId"] = job_request_id
    return api.EphemeralRunner({"metadata": metadata, "status": status})
