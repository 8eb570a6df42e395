"""The finished-runner cleanup and the scale-up guard (ARC PR #4642), against a real server.

Each test names the rule it pins; the closing report of the change records, per test,
the reversion that was made to watch it fail.
"""

from __future__ import annotations

import pytest

from ersctl import api
from ersctl.kube.errors import ConflictError
from tests.ersctl.ephemeralrunnerset.harness import Cluster, body


def test_a_stale_patch_cleans_up_the_finished_runner_and_creates_nothing_until_a_fresh_patch(
    cluster: Cluster,
) -> None:
    # The listener asked for 2 at patch 5, counting a runner whose job has since finished.
    cluster.create_ers(replicas=2, patch_id=5)
    finished = cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=1)
    busy = cluster.add_runner(phase="Running", patch_id=4, runner_id=2, job_id="job-2")

    outcome = cluster.reconcile()

    assert cluster.live_runner_names() == {busy}, "cleaned up, and nothing created in that pass"
    assert cluster.ers().finished_runner_cleanup_patch_id == 5
    assert outcome.action == "cleanup-finished"
    cluster.release_runner(finished)  # the runner controller finishes the deletion

    outcome = cluster.reconcile()

    assert cluster.live_runner_names() == {busy}, "nothing created while the patch ID is unchanged"
    assert outcome.action == "suppressed"
    assert cluster.events("ScaleUpSuppressed")

    cluster.patch_ers("runners", {"replicas": 2, "patchID": 6})
    outcome = cluster.reconcile()

    assert outcome.action == "scale-up"
    assert len(cluster.live_runner_names()) == 2
    assert cluster.counter("runners_created") == 1
    assert cluster.counter("runners_deleted") == 1
    assert cluster.counter("scale_up_suppressed") == 1


def test_a_runner_held_in_deleting_counts_toward_the_scale_up_total(cluster: Cluster) -> None:
    cluster.create_ers(replicas=2, patch_id=3)
    going = cluster.add_runner(phase="Running", patch_id=2, runner_id=1)
    staying = cluster.add_runner(phase="Running", patch_id=2, runner_id=2)
    cluster.delete_runner(going)  # its finalizer holds it in the deleting state

    cluster.reconcile()

    assert {r.name for r in cluster.runners()} == {going, staying}, "no replacement yet"

    cluster.release_runner(going)
    cluster.reconcile()

    assert len(cluster.live_runner_names()) == 2
    assert going not in cluster.live_runner_names()


def test_scale_up_is_suppressed_for_a_serviced_patch_id_and_resumes_on_a_new_one(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=2, patch_id=7, status={"finishedRunnerCleanupPatchID": 7})

    outcome = cluster.reconcile()

    assert cluster.runners() == []
    assert outcome.action == "suppressed"

    cluster.patch_ers("runners", {"patchID": 8})

    assert cluster.reconcile().action == "scale-up"
    assert len(cluster.runners()) == 2


def test_scale_up_is_never_suppressed_at_patch_id_zero(cluster: Cluster) -> None:
    # Patch 0 is "idle at minimum: force this state"; a marker of 0 must not block it.
    cluster.create_ers(replicas=1, patch_id=0, status={"finishedRunnerCleanupPatchID": 0})

    cluster.reconcile()

    assert len(cluster.runners()) == 1


def test_the_marker_records_a_patch_id_lower_than_the_one_it_holds(cluster: Cluster) -> None:
    # A restarted listener numbers from 0 again: the marker must follow it down, or the
    # exact-match guard never fires again.
    cluster.create_ers(replicas=1, patch_id=3, status={"finishedRunnerCleanupPatchID": 9})
    finished = cluster.add_runner(phase="Succeeded", patch_id=2, runner_id=1)

    assert cluster.reconcile().action == "cleanup-finished"
    assert cluster.ers().finished_runner_cleanup_patch_id == 3
    cluster.release_runner(finished)

    assert cluster.reconcile().action == "suppressed"
    assert cluster.runners() == []


@pytest.mark.embedded_only("fault injection")
def test_both_status_writers_send_a_resource_version_precondition_and_survive_a_conflict(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=1, patch_id=5, actionable_revision=0)
    cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=1)
    cluster.server.inject_fault(
        verb="patch", resource=api.ERS_PLURAL, subresource="status", code=409, times=1
    )

    assert cluster.reconcile().action == "cleanup-finished"

    cluster.patch_ers("runners", {"actionableRevision": 1})
    cluster.server.inject_fault(
        verb="patch", resource=api.ERS_PLURAL, subresource="status", code=409, times=1
    )

    assert cluster.reconcile().action == "revision-applied"
    patches = cluster.requests(verb="patch", resource=api.ERS_PLURAL, subresource="status")
    marker_writes = [b for b in map(body, patches) if "finishedRunnerCleanupPatchID" in b["status"]]
    revision_writes = [b for b in map(body, patches) if "appliedActionableRevision" in b["status"]]
    assert [r.status for r in patches[:2]] == [409, 200], "the marker write retried"
    assert len(marker_writes) >= 2 and len(revision_writes) == 2
    for patch in marker_writes[:2] + revision_writes:
        assert patch.get("metadata", {}).get("resourceVersion"), f"no precondition: {patch}"
    assert cluster.ers().finished_runner_cleanup_patch_id == 0, "cleared by the advance"
    assert cluster.ers().applied_actionable_revision == 1


@pytest.mark.embedded_only("fault injection")
def test_a_conflict_that_outlasts_the_retries_fails_closed_and_quietly(cluster: Cluster) -> None:
    cluster.create_ers(replicas=1, patch_id=5)
    finished = cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=1)
    cluster.server.inject_fault(
        verb="patch", resource=api.ERS_PLURAL, subresource="status", code=409, times=5
    )

    with pytest.raises(ConflictError):
        cluster.reconcile()

    assert cluster.live_runner_names() == {finished}, "no deletion without a recorded marker"
    assert cluster.ers().finished_runner_cleanup_patch_id == 0
    assert cluster.events("ReconcileFailed") == []


def test_the_status_update_does_not_carry_a_marker_it_did_not_change(cluster: Cluster) -> None:
    # spec.patchID (9) and the marker (4) differ: a status update computing the marker
    # from the spec would be indistinguishable from one copying it if they were equal.
    cluster.create_ers(replicas=1, patch_id=9, status={"finishedRunnerCleanupPatchID": 4})
    cluster.add_runner(phase="Running", patch_id=8, runner_id=1)
    cluster.sent.clear()

    assert cluster.reconcile().action == "hold"

    (patch,) = cluster.requests(verb="patch", resource=api.ERS_PLURAL, subresource="status")
    assert body(patch)["status"]["phase"] == "Running", "the update did run"
    assert "finishedRunnerCleanupPatchID" not in body(patch)["status"]
    assert cluster.ers().finished_runner_cleanup_patch_id == 4


@pytest.mark.embedded_only("the watch delay")
def test_with_set_events_delayed_the_reconcile_after_a_cleanup_creates_no_runner(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=2, patch_id=5)
    cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=1, finalizers=[])
    busy = cluster.add_runner(phase="Running", patch_id=4, runner_id=2, job_id="job-2")
    cluster.sync()
    cluster.server.set_watch_delay(api.ERS_PLURAL, 3.0)

    assert cluster.reconcile(sync=False).action == "cleanup-finished"
    # The runner deletion reaches the cache at once; the marker write does not.
    cluster.sync(sets=False)
    cached = cluster.cache.get_ers(cluster.namespace, "runners")
    assert cached is not None and cached.finished_runner_cleanup_patch_id == 0, "cache lags"

    cluster.reconcile(sync=False)

    assert cluster.live_runner_names() == {busy}, "a runner was created from the lagging cache"


@pytest.mark.embedded_only("the watch delay")
def test_the_guard_has_no_cached_fast_path_a_cleared_marker_is_honoured(
    cluster: Cluster,
) -> None:
    # The cache still shows the marker equal to the patch ID, but the server has
    # cleared it (a revision advance does that): a cached hit must not suppress.
    cluster.create_ers(replicas=2, patch_id=5, status={"finishedRunnerCleanupPatchID": 5})
    cluster.sync()
    cluster.server.set_watch_delay(api.ERS_PLURAL, 3.0)
    cluster.patch_ers_status("runners", {"finishedRunnerCleanupPatchID": 0})
    cached = cluster.cache.get_ers(cluster.namespace, "runners")
    assert cached is not None and cached.finished_runner_cleanup_patch_id == 5, "cache lags"

    cluster.reconcile(sync=False)

    assert len(cluster.runners()) == 2, "a cached marker the server had cleared suppressed"


@pytest.mark.parametrize(
    ("patch_id", "runner_patch_id"),
    [
        pytest.param(6, 6, id="the patch already produced runners"),
        pytest.param(7, 6, id="a new patch asking for what exists"),
        pytest.param(0, 6, id="idle at the minimum (patch 0)"),
    ],
)
def test_a_steady_state_reconcile_sends_no_request(
    cluster: Cluster, patch_id: int, runner_patch_id: int
) -> None:
    cluster.create_ers(replicas=2, patch_id=patch_id, status={"finishedRunnerCleanupPatchID": 3})
    for runner_id in (1, 2):
        cluster.add_runner(phase="Running", patch_id=runner_patch_id, runner_id=runner_id)
    cluster.reconcile()  # settles the status counts
    cluster.sync()
    cluster.sent.clear()

    outcome = cluster.reconcile(sync=False)

    sent = [r for r in cluster.sent.records() if r.verb != "watch"]
    assert sent == []
    assert outcome.action == "hold"
