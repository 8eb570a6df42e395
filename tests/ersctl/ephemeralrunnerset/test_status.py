"""Step 9: the status patch carries what changed, and never a marker it did not change."""

from __future__ import annotations

import pytest

from ersctl.api import EphemeralRunner, EphemeralRunnerSet
from ersctl.ephemeralrunnerset.classification import classify
from ersctl.ephemeralrunnerset.status import (
    RESET_VALUES,
    desired,
    malformed,
    observed,
    status_patch,
)
from tests.ersctl.ephemeralrunnerset.objects import ers_doc, runner


def ers(**status: object) -> EphemeralRunnerSet:
    return EphemeralRunnerSet(ers_doc(replicas=2, patch_id=9, status=dict(status)))


def patch_for(item: EphemeralRunnerSet, runners: list[EphemeralRunner]) -> dict[str, object]:
    states = classify(runners, applied_revision=item.applied_actionable_revision)
    return status_patch(observed(item), desired(item, states))


def test_an_unchanged_status_yields_no_patch() -> None:
    item = ers(
        phase="Running",
        currentReplicas=0,
        finishedRunnerCleanupPatchID=4,
        appliedActionableRevision=2,
    )

    assert patch_for(item, [runner("Running")]) == {}


def test_a_runner_count_change_alone_yields_no_patch() -> None:
    # One runner turned Running, another came, one failed: no field the status keeps
    # changed (the counts are metrics), so nothing is written.
    item = ers(phase="Running", finishedRunnerCleanupPatchID=4)

    assert patch_for(item, [runner("Running"), runner("Pending"), runner("Failed")]) == {}


def test_a_first_phase_is_written_without_counts() -> None:
    patch = patch_for(ers(), [runner("Running"), runner("Pending"), runner("Failed")])

    assert patch == {"status": {"phase": "Running"}}


def test_counts_a_set_still_carries_are_cleared_once() -> None:
    # ARC wrote them before the switch (or a malformed one is left): removed, and the
    # count ARC 0.14's schema requires held at 0, so no printer column shows them frozen.
    item = ers(
        phase="Running",
        currentReplicas="two",
        pendingEphemeralRunners=1,
        runningEphemeralRunners=2,
        failedEphemeralRunners=0,
    )

    patch = patch_for(item, [runner("Running")])

    assert patch == {
        "status": {
            "currentReplicas": 0,
            "pendingEphemeralRunners": None,
            "runningEphemeralRunners": None,
            "failedEphemeralRunners": None,
        }
    }
    cleared = ers(phase="Running", currentReplicas=0)
    assert patch_for(cleared, [runner("Running"), runner("Pending")]) == {}


def test_the_marker_is_copied_not_computed_from_the_spec_patch_id() -> None:
    # spec.patchID (9) and the marker (4) differ on purpose: with equal values a
    # status update that computed the marker from the spec would look the same.
    item = ers(finishedRunnerCleanupPatchID=4, appliedActionableRevision=1)

    patch = patch_for(item, [])

    assert patch == {"status": {"phase": "Running"}}


def test_a_marker_changed_in_memory_is_carried() -> None:
    item = ers(phase="Running")
    before = observed(item)
    item.finished_runner_cleanup_patch_id = 9

    patch = status_patch(before, desired(item, classify([], applied_revision=0)))

    assert patch == {"status": {"finishedRunnerCleanupPatchID": 9}}


@pytest.mark.parametrize(
    ("current", "runners", "expected"),
    [
        pytest.param("", [], "Running", id="no phase yet becomes Running"),
        pytest.param(
            "Running", [runner("Outdated", revision=0)], "Outdated", id="a current Outdated runner"
        ),
        pytest.param("Outdated", [], "Outdated", id="Outdated stays until a revision is applied"),
    ],
)
def test_the_phase(current: str, runners: list[EphemeralRunner], expected: str) -> None:
    item = ers(phase=current) if current else ers()

    assert desired(item, classify(runners, applied_revision=0)).phase == expected


def test_only_malformed_controller_owned_fields_are_reported_and_reset() -> None:
    item = ers(phase=7, finishedRunnerCleanupPatchID="3", currentReplicas="two")
    item.spec["replicas"] = "many"  # a spec field: bad input, not ours to overwrite

    found = malformed(item)

    # The counts are not read, so none is malformed: step 9 clears them.
    assert set(found) == {"phase", "finishedRunnerCleanupPatchID"}
    assert str(found["finishedRunnerCleanupPatchID"]) == (
        "status.finishedRunnerCleanupPatchID: must be an integer, got '3'"
    )
    assert {name: RESET_VALUES[name] for name in found} == {
        "phase": None,
        "finishedRunnerCleanupPatchID": 0,
    }
