"""The scaling decision (step 8), the suppression rule and scale-down selection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ersctl.api import EphemeralRunner, PatchID
from ersctl.ephemeralrunnerset.classification import classify
from ersctl.ephemeralrunnerset.scaling import (
    AlreadyServiced,
    CleanUpFinished,
    Decision,
    Hold,
    ScaleDown,
    ScaleUp,
    decide,
    scale_down_candidates,
    scale_up_suppressed,
)
from tests.ersctl.ephemeralrunnerset.objects import runner


def decision(replicas: int, patch_id: int, runners: list[EphemeralRunner]) -> Decision:
    return decide(
        replicas=replicas,
        patch_id=PatchID(patch_id),
        states=classify(runners, applied_revision=0),
    )


def idle(n: int = 1, *, patch_id: int | None = None) -> list[EphemeralRunner]:
    return [runner("Running", runner_id=100 + i, patch_id=patch_id) for i in range(n)]


@pytest.mark.parametrize(
    ("replicas", "patch_id", "runners", "expected"),
    [
        pytest.param(0, 0, [], Hold, id="nothing wanted, nothing there"),
        pytest.param(
            3,
            5,
            idle(1, patch_id=5),
            AlreadyServiced,
            id="a non-zero patch that already produced runners is not serviced again",
        ),
        pytest.param(
            3,
            0,
            idle(1, patch_id=0),
            ScaleUp,
            id="patch 0 is always serviced even when runners carry patch 0",
        ),
        pytest.param(
            3,
            6,
            [*idle(1, patch_id=5), runner("Succeeded", patch_id=5)],
            CleanUpFinished,
            id="finished runners under a new patch are cleaned up first",
        ),
        pytest.param(
            0,
            0,
            [runner("Succeeded")],
            CleanUpFinished,
            id="finished runners at patch 0 are cleaned up first",
        ),
        pytest.param(2, 1, [], ScaleUp, id="below replicas scales up"),
        pytest.param(
            2,
            1,
            [runner(deleting=True), runner(deleting=True)],
            Hold,
            id="deleting runners fill the scale-up total",
        ),
        pytest.param(
            1, 3, idle(2), Hold, id="a non-zero patch never scales down (runners may be finishing)"
        ),
        pytest.param(1, 0, idle(2), ScaleDown, id="patch 0 above replicas scales down"),
        pytest.param(
            1,
            0,
            [runner("Running", runner_id=1), runner(deleting=True)],
            Hold,
            id="deleting runners do not count toward scale-down",
        ),
        pytest.param(
            2,
            0,
            [runner("Failed"), runner("Failed"), runner("Failed")],
            ScaleDown,
            id="failed runners count toward the total",
        ),
    ],
)
def test_the_decision_for_each_situation(
    replicas: int, patch_id: int, runners: list[EphemeralRunner], expected: type
) -> None:
    assert type(decision(replicas, patch_id, runners)) is expected


def test_scale_up_counts_runners_being_deleted() -> None:
    result = decision(4, 2, [*idle(1), runner(deleting=True)])

    assert result == ScaleUp(count=2, patch_id=PatchID(2))


def test_cleanup_carries_the_patch_id_and_only_the_finished_runners() -> None:
    done = runner("Succeeded")
    result = decision(3, 7, [*idle(2), done, runner("Failed")])

    assert result == CleanUpFinished(patch_id=PatchID(7), runners=(done,))


def test_scale_down_asks_for_the_excess_over_the_live_total() -> None:
    result = decision(1, 0, [*idle(3), runner(deleting=True)])

    assert isinstance(result, ScaleDown)
    assert result.count == 2


@pytest.mark.parametrize(
    ("patch_id", "guarded"),
    [
        pytest.param(0, False, id="patch 0 is never guarded"),
        pytest.param(1, True, id="a positive patch is guarded"),
    ],
)
def test_only_positive_patch_ids_are_guarded(patch_id: int, guarded: bool) -> None:
    assert ScaleUp(count=1, patch_id=PatchID(patch_id)).guarded is guarded


@pytest.mark.parametrize(
    ("patch_id", "marker", "suppressed"),
    [
        pytest.param(4, 4, True, id="the marker equals the patch: suppressed"),
        pytest.param(5, 4, False, id="a newer patch: not suppressed"),
        pytest.param(3, 4, False, id="a lower patch (restart, wrap): not suppressed"),
        pytest.param(0, 0, False, id="patch 0 is never suppressed"),
        pytest.param(4, 0, False, id="no marker: not suppressed"),
    ],
)
def test_suppression_is_exact_equality_with_a_positive_patch_id(
    patch_id: int, marker: int, suppressed: bool
) -> None:
    assert scale_up_suppressed(patch_id=PatchID(patch_id), marker=PatchID(marker)) is suppressed


def test_scale_down_tries_pending_before_running_oldest_first() -> None:
    young_pending = runner("Pending", runner_id=1, created="2026-11-29T10:05:00Z")
    old_pending = runner("Pending", runner_id=2, created="2026-11-29T10:01:00Z")
    young_running = runner("Running", runner_id=3, created="2026-11-29T10:00:30Z")
    old_running = runner("Running", runner_id=4, created="2026-11-29T10:00:00Z")

    order = scale_down_candidates(
        pending=[young_pending, old_pending], running=[young_running, old_running]
    )

    assert order == (old_pending, young_pending, old_running, young_running)


@pytest.mark.parametrize(
    ("item", "eligible"),
    [
        pytest.param(runner("Running", runner_id=1), True, id="registered and idle"),
        pytest.param(runner("Running"), False, id="unregistered (runnerId 0) is skipped"),
        pytest.param(
            runner("Running", runner_id=1, job_id="j-1"), False, id="a runner with a job is busy"
        ),
        pytest.param(
            runner("Running", runner_id=1, job_request_id=9),
            False,
            id="a runner with a job request is busy",
        ),
        pytest.param(
            runner("Succeeded", job_id="j-1"), True, id="a done runner is taken even if busy"
        ),
    ],
)
def test_scale_down_skips_unregistered_and_busy_runners(
    item: EphemeralRunner, eligible: bool
) -> None:
    assert (item in scale_down_candidates(pending=[], running=[item])) is eligible


states_strategy = st.lists(
    st.builds(
        runner,
        st.sampled_from([None, "Pending", "Running", "Succeeded", "Failed"]),
        patch_id=st.one_of(st.none(), st.integers(min_value=0, max_value=6)),
        runner_id=st.integers(min_value=0, max_value=3),
        job_id=st.sampled_from(["", "job"]),
        deleting=st.booleans(),
    ),
    max_size=20,
)


@given(
    states_strategy,
    st.integers(min_value=0, max_value=25),
    st.integers(min_value=0, max_value=6),
)
def test_the_decision_never_overshoots_and_patch_zero_is_the_only_way_down(
    runners: list[EphemeralRunner], replicas: int, patch_id: int
) -> None:
    states = classify(runners, applied_revision=0)
    result = decide(replicas=replicas, patch_id=PatchID(patch_id), states=states)

    if isinstance(result, ScaleUp):
        assert not states.finished, "scaling in the pass that deletes finished runners"
        assert result.count == replicas - states.scale_up_total > 0
    if isinstance(result, ScaleDown):
        assert patch_id == 0
        assert result.count == states.total - replicas > 0
        assert all(c.runner_id != 0 and not c.has_job for c in result.candidates)
    if isinstance(result, AlreadyServiced):
        assert patch_id != 0
    if states.finished and not isinstance(result, AlreadyServiced):
        assert isinstance(result, CleanUpFinished)
