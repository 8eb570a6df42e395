"""Finished runners the listener's count already leaves out: refilled at once, no marker.

The listener names, in the set's ``actions.github.com/completed-runner-ids`` annotation
(written with ``spec.replicas`` and ``spec.patchID`` in one patch), the runners whose
completed jobs its count leaves out. A finished runner named there frees a slot the
count asks for; one not named there keeps ARC's guard, exactly.
"""

from __future__ import annotations

import pytest

from ersctl import api
from ersctl.api import PatchID, RunnerID, format_runner_ids, parse_runner_ids
from ersctl.ephemeralrunnerset.classification import classify
from ersctl.ephemeralrunnerset.scaling import (
    AlreadyServiced,
    CleanUpFinished,
    ReplaceFinished,
    decide,
)
from tests.ersctl.ephemeralrunnerset.harness import Cluster, body
from tests.ersctl.ephemeralrunnerset.objects import runner

COMPLETED = api.COMPLETED_RUNNERS_ANNOTATION


def publish(cluster: Cluster, *, replicas: int, patch_id: int, completed: list[int]) -> None:
    """What the listener does: the count, its patch ID and the completions it leaves out."""
    cluster.patch_ers(
        "runners",
        {"replicas": replicas, "patchID": patch_id},
        annotations={COMPLETED: format_runner_ids(completed)},
    )


# -- against a real API server -----------------------------------------------------------


def test_a_finished_runner_the_count_leaves_out_is_replaced_in_the_same_reconcile(
    cluster: Cluster,
) -> None:
    # At capacity (2) with a job queued: runner 1's job completed, the listener published
    # patch 6 without it (2 = the busy runner + the queued job), then runner 1's Pod ended.
    cluster.create_ers(replicas=2, patch_id=5)
    publish(cluster, replicas=2, patch_id=6, completed=[1])
    finished = cluster.add_runner(phase="Succeeded", patch_id=5, runner_id=1, job_id="j1")
    busy = cluster.add_runner(phase="Running", patch_id=5, runner_id=2, job_id="j2")

    outcome = cluster.reconcile()

    assert outcome.action == "replace-finished"
    live = cluster.live_runner_names()
    assert finished not in live and busy in live and len(live) == 2
    assert cluster.ers().finished_runner_cleanup_patch_id == 0, "no marker written"
    status_writes = cluster.requests(verb="patch", resource=api.ERS_PLURAL, subresource="status")
    assert not [w for w in status_writes if "finishedRunnerCleanupPatchID" in body(w)["status"]]
    assert not cluster.events("ScaleUpSuppressed")


def test_a_patch_that_already_produced_runners_still_refills_the_slot_it_frees(
    cluster: Cluster,
) -> None:
    # Two completions in one message (patch 6); the first runner's slot was refilled at 6,
    # then the second runner's Pod ended: ARC keeps it until the patch ID changes.
    cluster.create_ers(replicas=2, patch_id=6)
    publish(cluster, replicas=2, patch_id=6, completed=[1, 2])
    refilled = cluster.add_runner(phase="Running", patch_id=6, runner_id=3, job_id="j3")
    finished = cluster.add_runner(phase="Succeeded", patch_id=5, runner_id=2, job_id="j2")

    assert cluster.reconcile().action == "replace-finished"

    live = cluster.live_runner_names()
    assert finished not in live and refilled in live and len(live) == 2


def test_a_finished_runner_the_listener_did_not_name_gets_arcs_guard(cluster: Cluster) -> None:
    cluster.create_ers(replicas=2, patch_id=5)
    publish(cluster, replicas=2, patch_id=6, completed=[7])
    finished = cluster.add_runner(phase="Succeeded", patch_id=5, runner_id=1, job_id="j1")
    busy = cluster.add_runner(phase="Running", patch_id=5, runner_id=2, job_id="j2")

    assert cluster.reconcile().action == "cleanup-finished"
    assert cluster.ers().finished_runner_cleanup_patch_id == 6
    cluster.release_runner(finished)

    assert cluster.reconcile().action == "suppressed"
    assert cluster.live_runner_names() == {busy}


def test_one_unnamed_finished_runner_sends_the_whole_cleanup_to_arcs_guard(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=3, patch_id=5)
    publish(cluster, replicas=3, patch_id=6, completed=[1])
    cluster.add_runner(phase="Succeeded", patch_id=5, runner_id=1, job_id="j1")
    cluster.add_runner(phase="Succeeded", patch_id=5, runner_id=4, job_id="j4")

    assert cluster.reconcile().action == "cleanup-finished"
    assert cluster.ers().finished_runner_cleanup_patch_id == 6
    assert cluster.live_runner_names() == set()


def test_a_marker_for_this_patch_limits_the_refill_to_the_slots_the_runners_free(
    cluster: Cluster,
) -> None:
    # An earlier cleanup at patch 6 removed a runner the count may still hold a job for
    # (the marker); the named runner's slot is refilled, the rest waits for a new patch.
    cluster.create_ers(replicas=3, patch_id=5, status={"finishedRunnerCleanupPatchID": 6})
    publish(cluster, replicas=3, patch_id=6, completed=[1])
    cluster.add_runner(phase="Succeeded", patch_id=5, runner_id=1, job_id="j1")
    busy = cluster.add_runner(phase="Running", patch_id=5, runner_id=2, job_id="j2")

    assert cluster.reconcile().action == "replace-finished"

    live = cluster.live_runner_names()
    assert busy in live and len(live) == 2, "one runner for the one freed slot, not two"
    assert cluster.ers().finished_runner_cleanup_patch_id == 6


def test_without_a_marker_for_this_patch_its_whole_scale_up_is_done(cluster: Cluster) -> None:
    cluster.create_ers(replicas=3, patch_id=5)
    publish(cluster, replicas=3, patch_id=6, completed=[1])
    cluster.add_runner(phase="Succeeded", patch_id=5, runner_id=1, job_id="j1")
    busy = cluster.add_runner(phase="Running", patch_id=5, runner_id=2, job_id="j2")

    cluster.reconcile()

    live = cluster.live_runner_names()
    assert busy in live and len(live) == 3


@pytest.mark.parametrize("value", ["1,x", "1,-2", "1,,2", "0", "١"])
def test_a_malformed_annotation_names_no_runner(cluster: Cluster, value: str) -> None:
    cluster.create_ers(replicas=2, patch_id=5)
    cluster.patch_ers("runners", {"replicas": 2, "patchID": 6}, annotations={COMPLETED: value})
    cluster.add_runner(phase="Succeeded", patch_id=5, runner_id=1, job_id="j1")

    assert cluster.reconcile().action == "cleanup-finished"
    assert cluster.ers().finished_runner_cleanup_patch_id == 6


def test_at_patch_zero_a_named_runner_is_cleaned_up_as_arc_does(cluster: Cluster) -> None:
    cluster.create_ers(replicas=1, patch_id=3)
    publish(cluster, replicas=1, patch_id=0, completed=[1])
    cluster.add_runner(phase="Succeeded", patch_id=3, runner_id=1, job_id="j1")

    assert cluster.reconcile().action == "cleanup-finished"


# -- the decision (pure) -------------------------------------------------------------------


def test_an_unregistered_finished_runner_is_never_named() -> None:
    states = classify([runner("Succeeded", patch_id=1)], applied_revision=0)
    decision = decide(replicas=1, patch_id=PatchID(2), states=states, completed={RunnerID(0)})
    assert isinstance(decision, CleanUpFinished)


@pytest.mark.parametrize(
    ("serviced", "gap", "freed", "marker", "count"),
    [
        pytest.param(False, 3, 1, 0, 3, id="a fresh patch's own scale-up: the whole gap"),
        pytest.param(False, 3, 1, 6, 1, id="a cleanup recorded this patch: the freed slots"),
        pytest.param(True, 3, 1, 0, 1, id="a patch that produced runners: the freed slots"),
        pytest.param(False, 1, 2, 0, 1, id="never more than the gap"),
        pytest.param(False, 0, 2, 0, 0, id="no gap: delete only"),
    ],
)
def test_how_many_runners_replace_the_finished_ones(
    serviced: bool, gap: int, freed: int, marker: int, count: int
) -> None:
    finished = tuple(runner("Succeeded", runner_id=i + 1) for i in range(freed))
    decision = ReplaceFinished(patch_id=PatchID(6), runners=finished, gap=gap, serviced=serviced)
    assert decision.count(marker=PatchID(marker)) == count


def test_a_named_runner_lifts_already_serviced_only_while_finished_runners_are_named() -> None:
    refilled = runner("Running", patch_id=6, runner_id=3, job_id="j3")
    finished = runner("Succeeded", patch_id=5, runner_id=2, job_id="j2")
    states = classify([refilled, finished], applied_revision=0)
    named = decide(replicas=2, patch_id=PatchID(6), states=states, completed={RunnerID(2)})
    unnamed = decide(replicas=2, patch_id=PatchID(6), states=states, completed={RunnerID(9)})
    assert isinstance(named, ReplaceFinished) and named.serviced
    assert isinstance(unnamed, AlreadyServiced)


def test_runner_ids_round_trip_through_the_annotation() -> None:
    ids = (RunnerID(3), RunnerID(1), RunnerID(2))
    assert parse_runner_ids(format_runner_ids(ids)) == ids
    assert parse_runner_ids("") == ()
    assert parse_runner_ids("1, x") is None
