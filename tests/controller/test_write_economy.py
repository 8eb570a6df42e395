"""Rules that keep the controller's API writes at what its work needs (issue 14).

Each test names the rule it pins and fails when that rule is reverted: a repeated
suppression of one patch ID records one Event; a cleanup batch costs one status write
(the marker carries the counts); a status the server already holds is not patched
again while the cache still shows the version the last write replaced.
"""

from __future__ import annotations

import pytest

from ersctl import api
from tests.controller.harness import Cluster, body

RUNNING = {"phase": "Running"}


def status_patches(cluster: Cluster) -> list[dict[str, object]]:
    return [
        body(r)["status"]
        for r in cluster.requests(verb="patch", resource=api.ERS_PLURAL, subresource="status")
    ]


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


def test_a_finished_runner_cleanup_costs_one_status_write_and_no_event(
    cluster: Cluster,
) -> None:
    cluster.create_ers(
        replicas=2,
        patch_id=5,
        status={**RUNNING, "currentReplicas": 2, "runningEphemeralRunners": 2},
    )
    cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=1)
    cluster.add_runner(phase="Running", patch_id=4, runner_id=2, job_id="job-2")
    cluster.sent.clear()

    assert cluster.reconcile().action == "cleanup-finished"

    assert status_patches(cluster) == [
        {"finishedRunnerCleanupPatchID": 5, "currentReplicas": 1, "runningEphemeralRunners": 1}
    ]
    live = cluster.ers()
    assert (live.current_replicas, live.running_runners) == (1, 1)
    assert cluster.events() == []


@pytest.mark.embedded_only("the watch delay keeps the cache behind the controller's write")
def test_a_status_the_server_already_holds_is_not_patched_again_from_a_lagging_cache(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=1, patch_id=3, status=RUNNING)
    cluster.add_runner(phase="Running", patch_id=3, runner_id=1)
    cluster.sync()
    cluster.server.set_watch_delay(api.ERS_PLURAL, 30.0)
    cluster.sent.clear()

    cluster.reconcile(sync=False)  # counts 0 -> 1
    cluster.reconcile(sync=False)  # the cache still shows the counts at 0

    assert status_patches(cluster) == [{"currentReplicas": 1, "runningEphemeralRunners": 1}]
    cluster.server.set_watch_delay(api.ERS_PLURAL, 0.0)
