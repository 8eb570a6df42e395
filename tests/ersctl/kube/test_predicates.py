"""Event filters (ARC's): which watch events enqueue a reconcile, and for which key."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from ersctl.ephemeralrunnerset.predicates import ERS_PREDICATE, RUNNER_PREDICATE
from ersctl.kube.controller import Controller, EnqueueOwner, EnqueueSelf
from ersctl.kube.metrics import ControllerMetrics
from ersctl.kube.reconcile import Request, Result

Json = dict[str, Any]


def ers() -> Json:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": "set",
            "namespace": "ns",
            "uid": "ers-uid",
            "resourceVersion": "10",
            "generation": 1,
            "labels": {"app": "x"},
            "annotations": {"a": "1"},
            "finalizers": ["ephemeralrunnerset.actions.github.com/finalizer"],
        },
        "spec": {"replicas": 2, "patchID": 3, "ephemeralRunnerSpec": {"githubConfigUrl": "u"}},
        "status": {
            "phase": "Running",
            "appliedActionableRevision": 1,
            "finishedRunnerCleanupPatchID": 2,
            "currentReplicas": 2,
        },
    }


def runner(owner: str | None = "set") -> Json:
    refs = (
        []
        if owner is None
        else [
            {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "EphemeralRunnerSet",
                "name": owner,
                "uid": f"{owner}-uid",
                "controller": True,
            }
        ]
    )
    return {
        "metadata": {
            "name": "set-runner-abcde",
            "namespace": "ns",
            "resourceVersion": "20",
            "ownerReferences": refs,
            "finalizers": ["ephemeralrunner.actions.github.com/finalizer"],
            "annotations": {"actions.github.com/patch-id": "3"},
        },
        "spec": {"githubConfigUrl": "u"},
        "status": {"phase": "Running", "runnerId": 7, "ready": True},
    }


Change = Callable[[Json], None]


def changed(base: Json, change: Change) -> Json:
    new = copy.deepcopy(base)
    new["metadata"]["resourceVersion"] = "999"  # every write bumps it
    change(new)
    return new


def _set(path: str, value: Any) -> Change:
    def apply(doc: Json) -> None:
        *parents, leaf = path.split(".")
        node = doc
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value

    return apply


@pytest.mark.parametrize(
    ("change", "enqueues"),
    [
        pytest.param(_set("status.finishedRunnerCleanupPatchID", 3), False, id="marker-only"),
        pytest.param(_set("status.currentReplicas", 5), False, id="display-counts-only"),
        pytest.param(lambda d: None, False, id="resource-version-only"),
        pytest.param(
            _set("metadata.managedFields", [{"manager": "x"}]), False, id="managed-fields"
        ),
        pytest.param(_set("spec.replicas", 3), True, id="replicas"),
        pytest.param(_set("spec.patchID", 4), True, id="patch-id"),
        pytest.param(_set("spec.actionableRevision", 2), True, id="actionable-revision"),
        pytest.param(_set("metadata.labels", {"app": "y"}), True, id="labels"),
        pytest.param(_set("metadata.annotations", {"a": "2"}), True, id="annotations"),
        pytest.param(_set("metadata.finalizers", []), True, id="finalizers"),
        pytest.param(
            _set("metadata.deletionTimestamp", "2026-01-01T00:00:00Z"), True, id="deletion"
        ),
        pytest.param(_set("status.phase", "Outdated"), True, id="phase"),
        pytest.param(_set("status.appliedActionableRevision", 2), True, id="applied-revision"),
    ],
)
def test_ers_update_enqueues_only_when_an_input_of_the_reconciler_changed(
    change: Change, enqueues: bool
) -> None:
    old = ers()
    assert ERS_PREDICATE.update(old, changed(old, change)) is enqueues


def test_a_marker_write_together_with_a_spec_change_still_enqueues() -> None:
    old = ers()
    new = changed(old, _set("status.finishedRunnerCleanupPatchID", 9))
    new["spec"]["patchID"] = 9
    assert ERS_PREDICATE.update(old, new) is True


@pytest.mark.parametrize(
    ("change", "enqueues"),
    [
        pytest.param(_set("status.jobId", "j-1"), False, id="job-id"),
        pytest.param(_set("status.jobRepositoryName", "o/r"), False, id="job-repository"),
        pytest.param(_set("status.jobRequestId", 5), False, id="job-request-id"),
        pytest.param(_set("status.workflowRunId", 5), False, id="workflow-run-id"),
        pytest.param(_set("status.ready", False), False, id="ready"),
        pytest.param(_set("status.message", "pulling"), False, id="message"),
        pytest.param(_set("status.phase", "Succeeded"), True, id="phase"),
        pytest.param(_set("status.runnerId", 8), True, id="runner-id"),
        pytest.param(_set("spec.githubConfigUrl", "v"), True, id="spec"),
        pytest.param(_set("metadata.finalizers", []), True, id="finalizers"),
        pytest.param(
            _set("metadata.deletionTimestamp", "2026-01-01T00:00:00Z"), True, id="deletion"
        ),
        pytest.param(_set("metadata.labels", {"x": "y"}), True, id="labels"),
        pytest.param(_set("metadata.annotations", {}), True, id="annotations"),
        pytest.param(_set("metadata.ownerReferences", []), True, id="owner-references"),
    ],
)
def test_runner_update_enqueues_only_when_metadata_spec_phase_or_runner_id_changed(
    change: Change, enqueues: bool
) -> None:
    old = runner()
    assert RUNNER_PREDICATE.update(old, changed(old, change)) is enqueues


@pytest.mark.parametrize(
    "predicate", [pytest.param(ERS_PREDICATE, id="ers"), pytest.param(RUNNER_PREDICATE, id="er")]
)
def test_creates_and_deletes_always_pass(predicate: Any) -> None:
    assert predicate.create({}) is True
    assert predicate.delete({}) is True


class Recording:
    """A Reconciler that only records (no worker runs in these tests)."""

    def reconcile(self, request: Request) -> Result:
        return Result()


def controller() -> Controller:
    return Controller("test", Recording(), workers=1, metrics=ControllerMetrics())


def queued(ctrl: Controller) -> list[Request]:
    keys = []
    while (key := ctrl.queue.get(block=False)) is not None:
        keys.append(key)
        ctrl.queue.done(key)
    return keys


def test_runner_events_enqueue_the_set_named_by_its_controller_owner() -> None:
    ctrl = controller()
    handler = EnqueueOwner(ctrl, "EphemeralRunnerSet", RUNNER_PREDICATE)
    handler.on_add(runner())
    handler.on_delete(runner("other"))

    assert queued(ctrl) == [Request("ns", "set"), Request("ns", "other")]


def test_a_runner_without_a_controller_owner_is_ignored() -> None:
    ctrl = controller()
    handler = EnqueueOwner(ctrl, "EphemeralRunnerSet", RUNNER_PREDICATE)
    orphan = runner(None)
    not_controller = runner()
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    other_kind = runner()
    other_kind["metadata"]["ownerReferences"][0]["kind"] = "AutoscalingRunnerSet"

    for obj in (orphan, not_controller, other_kind):
        handler.on_add(obj)
        handler.on_update(obj, changed(obj, _set("status.phase", "Failed")))
        handler.on_delete(obj)

    assert queued(ctrl) == []


def test_a_runner_moved_between_sets_enqueues_both() -> None:
    ctrl = controller()
    handler = EnqueueOwner(ctrl, "EphemeralRunnerSet", RUNNER_PREDICATE)
    handler.on_update(runner("a"), runner("b"))

    assert sorted(queued(ctrl), key=str) == [Request("ns", "a"), Request("ns", "b")]


def test_filtered_updates_enqueue_nothing_through_the_handlers() -> None:
    ctrl = controller()
    EnqueueSelf(ctrl, ERS_PREDICATE).on_update(
        ers(), changed(ers(), _set("status.finishedRunnerCleanupPatchID", 3))
    )
    EnqueueOwner(ctrl, "EphemeralRunnerSet", RUNNER_PREDICATE).on_update(
        runner(), changed(runner(), _set("status.jobId", "j"))
    )
    assert queued(ctrl) == []
    EnqueueSelf(ctrl, ERS_PREDICATE).on_update(ers(), changed(ers(), _set("spec.replicas", 9)))
    assert queued(ctrl) == [Request("ns", "set")]
