"""The reconciler acts on the decision function it is built with (its public seam)."""

from __future__ import annotations

from ersctl.api import EphemeralRunnerSet
from ersctl.ephemeralrunnerset.classification import RunnerStates
from ersctl.ephemeralrunnerset.scaling import Decision, ScaleUp, ThenDelete
from tests.ersctl.ephemeralrunnerset.harness import Cluster


def scale_up_then_delete_finished(ers: EphemeralRunnerSet, states: RunnerStates) -> Decision:
    """ARC's order before PR #4642: compare against the live total, then clean up."""
    return ThenDelete(
        then=ScaleUp(count=ers.replicas - states.total, patch_id=ers.patch_id),
        runners=states.finished,
    )


def test_a_then_delete_decision_creates_and_cleans_up_in_one_pass_without_a_marker(
    cluster: Cluster,
) -> None:
    cluster.use_reconciler(scaling=scale_up_then_delete_finished)
    cluster.create_ers(replicas=2, patch_id=5)
    finished = cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=1)
    busy = cluster.add_runner(phase="Running", patch_id=4, runner_id=2, job_id="job-2")

    outcome = cluster.reconcile()

    names = cluster.live_runner_names()
    assert outcome.action == "scale-up"
    assert busy in names and finished not in names, "the finished runner deleted"
    assert len(names) == 2, "one created in the same pass: the replacement the guard prevents"
    assert cluster.ers().finished_runner_cleanup_patch_id == 0, "no marker"


def test_the_shipped_decision_cleans_up_first_under_a_marker(cluster: Cluster) -> None:
    cluster.create_ers(replicas=2, patch_id=5)
    finished = cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=1)
    busy = cluster.add_runner(phase="Running", patch_id=4, runner_id=2, job_id="job-2")

    outcome = cluster.reconcile()

    assert outcome.action == "cleanup-finished"
    assert finished not in cluster.live_runner_names()
    assert cluster.live_runner_names() == {busy}
    assert cluster.ers().finished_runner_cleanup_patch_id == 5
