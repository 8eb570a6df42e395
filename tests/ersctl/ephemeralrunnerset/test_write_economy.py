"""Rules that keep the controller's API writes at what its work needs (issues 14, 25).

Each test names the rule it pins and fails when that rule is reverted: a repeated
suppression of one patch ID records one Event; the set's status is written only when a
field it keeps changes (its phase, the marker, the applied revision), never for a runner
count (those are metrics); a cleanup batch costs the marker write and nothing else; a
status the server already holds is not patched again while the cache still shows the
version the last write replaced.
"""

from __future__ import annotations

import pytest

from ersctl import api
from tests.ersctl.ephemeralrunnerset.harness import Cluster, body

RUNNING = {"phase": "Running"}


def status_patches(cluster: Cluster) -> list[dict[str, object]]:
    return [
        body(r)["status"]
        for r in cluster.requests(verb="patch", resource=api.ERS_PLURAL, subresource="status")
    ]


def a_finished_and_a_busy_runner_at_patch_5(cluster: Cluster) -> None:
    cluster.create_ers(replicas=2, patch_id=5, status=RUNNING)
    cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=1)
    cluster.add_runner(phase="Running", patch_id=4, runner_id=2, job_id="job-2")


def test_a_patch_id_suppressed_again_and_again_records_one_event(cluster: Cluster) -> None:
    cluster.create_ers(
        replicas=2, patch_id=7, status={**RUNNING, "finishedRunnerCleanupPatchID": 7}
    )

    for _ in range(3):  # every runner event re-reconciles a suppressed set
        assert cluster.reconcile().action == "suppressed"

    assert [e["count"] for e in cluster.events("ScaleUpSuppressed")] == [1]
    assert cluster.counter("scale_up_suppressed") == 3, "the metric still counts each one"

    # A new suppressed patch ID is news: the same Event counts it.
    cluster.patch_ers("runners", {"patchID": 9})
    cluster.patch_ers_status("runners", {"finishedRunnerCleanupPatchID": 9})
    assert cluster.reconcile().action == "suppressed"

    suppressed = cluster.events("ScaleUpSuppressed")
    assert [(e["count"], "patch 9" in e["message"]) for e in suppressed] == [(2, True)]


def test_an_unchanged_status_sends_nothing(cluster: Cluster) -> None:
    cluster.create_ers(replicas=1, patch_id=3, status=RUNNING)
    cluster.add_runner(phase="Running", patch_id=3, runner_id=1)
    cluster.sent.clear()

    assert cluster.reconcile().action == "hold"

    assert status_patches(cluster) == []


def test_runner_count_changes_send_no_status_write(cluster: Cluster) -> None:
    # Runners created, then registered, then running a job, then one failing: every
    # count changes, and no field the status keeps does.
    cluster.create_ers(replicas=2, patch_id=3, status=RUNNING)
    cluster.sent.clear()

    assert cluster.reconcile().action == "scale-up"
    first, second = sorted(r.name for r in cluster.runners())
    cluster.set_runner_status(first, phase="Pending", runnerId=1)
    assert cluster.reconcile().action == "hold"
    cluster.set_runner_status(first, phase="Running", jobId="job-1")
    cluster.set_runner_status(second, phase="Failed")
    assert cluster.reconcile().action == "hold"

    assert status_patches(cluster) == []
    assert len(cluster.requests(verb="create", resource=api.ER_PLURAL)) == 2


def test_a_finished_runner_cleanup_costs_the_marker_write_alone_and_no_event(
    cluster: Cluster,
) -> None:
    a_finished_and_a_busy_runner_at_patch_5(cluster)
    cluster.sent.clear()

    assert cluster.reconcile().action == "cleanup-finished"

    assert status_patches(cluster) == [{"finishedRunnerCleanupPatchID": 5}]
    assert cluster.events() == []


@pytest.mark.embedded_only("the watch delay keeps the cache behind the listener's patch")
def test_a_cleanup_decided_on_a_patch_id_the_listener_replaced_writes_no_marker(
    cluster: Cluster,
) -> None:
    a_finished_and_a_busy_runner_at_patch_5(cluster)
    cluster.sync()
    cluster.server.set_watch_delay(api.ERS_PLURAL, 2.0)
    cluster.patch_ers("runners", {"patchID": 6})  # the cache shows patch 5 for 2 s
    cluster.sent.clear()

    outcome = cluster.reconcile(sync=False)

    # A marker for patch 5 would suppress nothing (the set carries 6): not written, and
    # the finished runner waits for the decision on patch 6.
    assert outcome.action == "patch-moved-on"
    assert status_patches(cluster) == []
    assert len(cluster.live_runner_names()) == 2
    cluster.server.set_watch_delay(api.ERS_PLURAL, 0.0)
    assert cluster.reconcile().action == "cleanup-finished"  # once the cache shows 6
    assert status_patches(cluster) == [{"finishedRunnerCleanupPatchID": 6}]


@pytest.mark.embedded_only("the watch delay keeps the cache behind the controller's write")
def test_a_status_the_server_already_holds_is_not_patched_again_from_a_lagging_cache(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=1, patch_id=3)
    cluster.add_runner(phase="Running", patch_id=3, runner_id=1)
    cluster.sync()
    cluster.server.set_watch_delay(api.ERS_PLURAL, 30.0)
    cluster.sent.clear()

    cluster.reconcile(sync=False)  # the first phase
    cluster.reconcile(sync=False)  # the cache still shows the set without one

    assert status_patches(cluster) == [{"phase": "Running", "currentReplicas": 0}]
    cluster.server.set_watch_delay(api.ERS_PLURAL, 0.0)
