"""Runner classification: every runner in exactly one bucket, and the newest patch ID."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ersctl.api import EphemeralRunner, FieldError
from ersctl.ephemeralrunnerset.classification import RunnerStates, classify, is_busy, registered_id
from ersctl.ephemeralrunnerset.scaling import scale_down_candidates
from tests.ersctl.ephemeralrunnerset.objects import runner

BUCKETS = ("pending", "running", "finished", "failed", "deleting", "outdated", "stale_outdated")


def bucket_of(states: RunnerStates, item: EphemeralRunner) -> list[str]:
    return [name for name in BUCKETS if any(r is item for r in getattr(states, name))]


@pytest.mark.parametrize(
    ("item", "applied_revision", "expected"),
    [
        pytest.param(runner(), 0, "pending", id="no phase yet is pending"),
        pytest.param(runner("Pending"), 0, "pending", id="Pending is pending"),
        pytest.param(runner("Unknown"), 0, "pending", id="an unknown phase is pending"),
        pytest.param(runner("Running"), 0, "running", id="Running is running"),
        pytest.param(runner("Succeeded"), 0, "finished", id="Succeeded is finished"),
        pytest.param(runner("Failed"), 0, "failed", id="Failed is failed"),
        pytest.param(
            runner("Outdated", revision=3), 3, "outdated", id="Outdated at the applied revision"
        ),
        pytest.param(
            runner("Outdated", revision=4), 3, "outdated", id="Outdated after the applied revision"
        ),
        pytest.param(
            runner("Outdated", revision=2),
            3,
            "stale_outdated",
            id="Outdated before the applied revision is stale",
        ),
        pytest.param(
            runner("Outdated"),
            0,
            "outdated",
            id="Outdated without a revision annotation counts as revision 0",
        ),
        pytest.param(
            runner("Outdated"),
            1,
            "stale_outdated",
            id="Outdated without a revision annotation is stale once revision 1 is applied",
        ),
        pytest.param(
            runner("Succeeded", deleting=True), 0, "deleting", id="deleting wins over Succeeded"
        ),
        pytest.param(
            runner("Running", deleting=True), 0, "deleting", id="deleting wins over Running"
        ),
        pytest.param(runner(deleting=True), 0, "deleting", id="deleting wins over pending"),
    ],
)
def test_each_runner_lands_in_the_bucket_its_state_names(
    item: EphemeralRunner, applied_revision: int, expected: str
) -> None:
    states = classify([item], applied_revision=applied_revision)

    assert bucket_of(states, item) == [expected]


def test_the_totals_count_pending_running_and_failed_and_scale_up_adds_deleting() -> None:
    states = classify(
        [
            runner("Pending"),
            runner("Running"),
            runner("Running"),
            runner("Failed"),
            runner("Succeeded"),
            runner("Outdated"),
            runner("Running", deleting=True),
            runner(deleting=True),
        ],
        applied_revision=0,
    )

    assert states.total == 4
    assert states.scale_up_total == 6
    assert states.count == 8
    assert len(states.terminated) == 3


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param([], 0, id="no runners means patch 0"),
        pytest.param([None, None], 0, id="runners without the annotation mean patch 0"),
        pytest.param([3, 9, 4], 9, id="the highest wins"),
        pytest.param(["not-a-number", 2], 2, id="an unparsable annotation is ignored"),
    ],
)
def test_latest_patch_id_is_the_highest_patch_id_annotation(
    annotations: list[int | str | None], expected: int
) -> None:
    states = classify([runner("Running", patch_id=p) for p in annotations], applied_revision=0)

    assert states.latest_patch_id == expected


def test_latest_patch_id_includes_runners_being_deleted() -> None:
    states = classify(
        [runner("Running", patch_id=2), runner("Succeeded", patch_id=5, deleting=True)],
        applied_revision=0,
    )

    assert states.latest_patch_id == 5


def malformed_runner(**status: object) -> EphemeralRunner:
    metadata = {"name": "runners-runner-bad", "namespace": "arc"}
    return EphemeralRunner({"metadata": metadata, "status": {"phase": "Running", **status}})


@pytest.mark.parametrize(
    ("status", "read", "path"),
    [
        pytest.param(
            {"phase": 3},
            lambda r: classify([r], applied_revision=0),
            "status.phase",
            id="classification reads the phase",
        ),
        pytest.param(
            {"runnerId": "seven"},
            lambda r: scale_down_candidates(pending=[], running=[r]),
            "status.runnerId",
            id="scale-down reads the runner id",
        ),
        pytest.param(
            {"runnerId": 7, "jobRequestId": "x"},
            lambda r: scale_down_candidates(pending=[], running=[r]),
            "status.jobRequestId",
            id="scale-down reads the job fields",
        ),
        pytest.param({"jobId": 5}, is_busy, "status.jobId", id="cleanup asks whether it is busy"),
        pytest.param(
            {"runnerId": []}, registered_id, "status.runnerId", id="removal reads the runner id"
        ),
    ],
)
def test_a_malformed_runner_field_is_a_field_error_that_names_the_runner(
    status: dict[str, object], read: Callable[[EphemeralRunner], object], path: str
) -> None:
    with pytest.raises(FieldError) as caught:
        read(malformed_runner(**status))

    assert caught.value.path == path
    assert str(caught.value).startswith(f"EphemeralRunner arc/runners-runner-bad: {path}: ")


runner_strategy = st.builds(
    runner,
    st.sampled_from([None, "Pending", "Running", "Succeeded", "Failed", "Outdated", "Weird"]),
    patch_id=st.one_of(st.none(), st.integers(min_value=0, max_value=2**31 - 1)),
    revision=st.one_of(st.none(), st.integers(min_value=0, max_value=5)),
    deleting=st.booleans(),
)


@given(st.lists(runner_strategy, max_size=30), st.integers(min_value=0, max_value=5))
def test_classification_partitions_the_runners(
    runners: list[EphemeralRunner], applied_revision: int
) -> None:
    states = classify(runners, applied_revision=applied_revision)

    assert all(len(bucket_of(states, r)) == 1 for r in runners)
    assert states.count == len(runners)
    assert states.latest_patch_id == max((r.patch_id for r in runners), default=0)
