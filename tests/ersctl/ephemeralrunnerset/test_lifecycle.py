"""Revision advance, crash consistency of the cleanup, and deleting the set."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ersctl import api
from ersctl.kube.errors import KubeError
from tests.ersctl.ephemeralrunnerset.harness import Cluster


def test_a_revision_advance_rebuilds_idle_runners_keeps_busy_ones_and_clears_the_marker(
    cluster: Cluster,
) -> None:
    cluster.create_ers(
        replicas=3,
        patch_id=5,
        actionable_revision=2,
        status={"appliedActionableRevision": 1, "finishedRunnerCleanupPatchID": 5},
    )
    idle = cluster.add_runner(phase="Running", patch_id=4, revision=1, runner_id=11)
    pending = cluster.add_runner(phase="Pending", patch_id=4, revision=1)
    busy = cluster.add_runner(phase="Running", patch_id=4, revision=1, runner_id=13, job_id="j")

    assert cluster.reconcile().action == "revision-applied"

    assert cluster.github.removed == [11], "the idle runner left the service first"
    assert cluster.live_runner_names() == {busy}
    assert {r.name for r in cluster.runners() if r.is_deleting} == {idle, pending}
    ers = cluster.ers()
    assert ers.applied_actionable_revision == 2
    assert ers.finished_runner_cleanup_patch_id == 0
    assert ers.phase == "Running"


def test_a_runner_showing_only_its_job_request_id_is_busy_for_cleanup_as_for_scale_down(
    cluster: Cluster,
) -> None:
    """One rule for "busy" on every removal path: a runner whose status shows the job
    request but no job id yet keeps its job through a revision advance."""
    cluster.create_ers(replicas=1, actionable_revision=2, status={"appliedActionableRevision": 1})
    busy = cluster.add_runner(phase="Running", revision=1, runner_id=14)
    cluster.set_runner_status(busy, jobRequestId=901)

    assert cluster.reconcile().action == "revision-applied"

    assert cluster.github.attempts == [], "not even asked to remove it"
    assert cluster.live_runner_names() == {busy}


@pytest.mark.parametrize(
    ("runner_revision", "phase"),
    [
        pytest.param(2, "Outdated", id="a runner of the new revision reports Outdated"),
        pytest.param(1, "Running", id="only a runner of the replaced revision reports Outdated"),
    ],
)
@pytest.mark.embedded_only("the watch delay")
def test_the_phase_after_an_advance_comes_from_a_live_list_judged_at_the_new_revision(
    cluster: Cluster, runner_revision: int, phase: str
) -> None:
    cluster.create_ers(
        actionable_revision=2, status={"appliedActionableRevision": 1, "phase": "Outdated"}
    )
    cluster.sync()
    # The runner is on the server but not yet in the cache (its watch events lag), so
    # the cleanup does not see it; only the revision writer's live list does.
    cluster.server.set_watch_delay(api.ER_PLURAL, 3.0)
    cluster.add_runner(phase="Outdated", revision=runner_revision, runner_id=4)

    assert cluster.reconcile(sync=False).action == "revision-applied"

    assert cluster.ers().phase == phase


@pytest.mark.embedded_only("the watch delay")
def test_a_reconcile_holding_an_older_target_cannot_move_the_applied_revision_back(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=0, actionable_revision=2, status={"appliedActionableRevision": 1})
    cluster.sync()
    # The cache keeps showing revision 2 > applied 1 while another pass (or replica)
    # has since applied revision 3.
    cluster.server.set_watch_delay(api.ERS_PLURAL, 3.0)
    cluster.patch_ers("runners", {"actionableRevision": 3})
    cluster.patch_ers_status("runners", {"appliedActionableRevision": 3})

    outcome = cluster.reconcile(sync=False)

    assert cluster.ers().applied_actionable_revision == 3
    assert not cluster.events("RevisionApplied"), "nothing was applied by this reconcile"
    assert outcome.action == "revision-superseded"


@dataclass(frozen=True)
class Crash:
    """The request that fails with a 500 (``second``: the second runner's deletion)."""

    verb: str
    resource: str
    subresource: str | None = None
    second: bool = False


@pytest.mark.parametrize(
    ("fault", "finished_runners", "deleted_before_the_crash"),
    [
        pytest.param(
            Crash("patch", api.ERS_PLURAL, subresource="status"),
            1,
            0,
            id="the marker write fails",
        ),
        pytest.param(
            Crash("delete", api.ER_PLURAL),
            1,
            0,
            id="after the marker write, before the deletions",
        ),
        pytest.param(
            Crash("delete", api.ER_PLURAL, second=True),
            2,
            1,
            id="midway through the deletions",
        ),
    ],
)
@pytest.mark.embedded_only("fault injection")
def test_a_crash_during_the_cleanup_never_creates_a_runner_for_the_serviced_patch(
    cluster: Cluster,
    fault: Crash,
    finished_runners: int,
    deleted_before_the_crash: int,
) -> None:
    cluster.create_ers(replicas=2, patch_id=5)
    done = [
        cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=i + 1, finalizers=[])
        for i in range(finished_runners)
    ]
    busy = cluster.add_runner(phase="Running", patch_id=4, runner_id=9, job_id="job")
    target = sorted(done)[-1] if fault.second else None
    cluster.server.inject_fault(
        verb=fault.verb,
        resource=fault.resource,
        subresource=fault.subresource,
        name=target,
        code=500,
        times=1,
    )

    with pytest.raises(KubeError, match="500"):
        cluster.reconcile()
    left_after_the_crash = len(cluster.runners())
    for _ in range(3):
        cluster.reconcile()
        assert cluster.live_runner_names() == {busy}, "a runner was created for patch 5"

    assert cluster.ers().finished_runner_cleanup_patch_id == 5
    assert left_after_the_crash == finished_runners + 1 - deleted_before_the_crash
    assert cluster.events("ReconcileFailed")


def test_deleting_the_set_removes_idle_runners_lets_busy_ones_finish_then_drops_the_finalizer(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=3, patch_id=2)
    idle = cluster.add_runner(phase="Running", patch_id=1, runner_id=21)
    unregistered = cluster.add_runner(phase="Pending", patch_id=1)
    busy = cluster.add_runner(phase="Running", patch_id=1, runner_id=23, job_id="job")
    cluster.github.busy = {23}
    cluster.custom.delete_namespaced_custom_object(
        api.GROUP, api.VERSION, cluster.namespace, api.ERS_PLURAL, "runners"
    )

    assert cluster.reconcile().action == "deleting"

    assert cluster.github.removed == [21]
    assert cluster.live_runner_names() == {busy}, "the busy runner keeps its job"
    for name in (idle, unregistered):
        cluster.release_runner(name)
    assert cluster.reconcile().action == "deleting"
    assert cluster.ers().has_finalizer(api.ERS_FINALIZER), "a runner is left"

    cluster.set_runner_status(busy, phase="Succeeded")
    cluster.reconcile()
    cluster.release_runner(busy)

    assert cluster.reconcile().action == "finalizer-removed"
    assert cluster.kube.get_object(api.ERS_PLURAL, cluster.namespace, "runners") is None


def test_scale_down_at_patch_zero_removes_idle_registered_runners_pending_first(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=1, patch_id=0)
    pending = cluster.add_runner(phase="Pending", runner_id=5)
    cluster.add_runner(phase="Pending")  # not registered yet: nothing to remove
    older = cluster.add_runner(phase="Running", runner_id=6)
    refused = cluster.add_runner(phase="Running", runner_id=7)
    cluster.add_runner(phase="Running", runner_id=8, job_id="job")  # busy
    cluster.github.busy = {7}

    outcome = cluster.reconcile()

    # Pending first; the running ones may share a creation second (ordered by name then),
    # and the pure tests pin oldest-first.
    assert cluster.github.attempts[0] == 5
    assert sorted(cluster.github.attempts[1:]) == [6, 7]
    assert cluster.github.removed == [5, 6]
    deleting = {r.name for r in cluster.runners() if r.is_deleting}
    assert deleting == {pending, older}
    assert refused in cluster.live_runner_names()
    assert outcome.action == "scale-down"
    assert cluster.events("ScaledDown")


def test_a_scale_down_reads_the_credentials_secret_once_per_batch(cluster: Cluster) -> None:
    cluster.create_ers(replicas=0, patch_id=0)
    for runner_id in (5, 6):
        cluster.add_runner(phase="Running", runner_id=runner_id)

    assert cluster.reconcile().action == "scale-down"

    assert sorted(cluster.github.removed) == [5, 6]
    credential_reads = [
        r for r in cluster.requests(verb="get", resource="secrets") if r.name == "github-config"
    ]
    assert len(credential_reads) == 1, "one read per batch"


def test_without_its_credentials_secret_a_scale_down_warns_changes_nothing_and_retries_later(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=0, patch_id=0)
    idle = cluster.add_runner(phase="Running", runner_id=6)
    cluster.core.delete_namespaced_secret("github-config", cluster.namespace)

    outcome = cluster.reconcile()

    assert cluster.live_runner_names() == {idle}
    assert cluster.github.attempts == []
    (event,) = cluster.events("InvalidSpec")
    assert event["type"] == "Warning"
    assert event["message"] == (
        f"spec.ephemeralRunnerSpec.githubConfigSecret: Secret {cluster.namespace}/github-config"
        " not found"
    )
    assert outcome.result.requeue_after == 30.0


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("revision", id="applying a new runner spec revision"),
        pytest.param("outdated", id="cleaning up an Outdated set"),
        pytest.param("deleting", id="deleting the set"),
    ],
)
def test_without_its_credentials_secret_no_cleanup_path_deletes_any_runner(
    cluster: Cluster, path: str
) -> None:
    """Issue 6: unusable credentials when a service call is needed -> no runner changes.
    The terminated runner needs no service call, but the idle one in the same pass does."""
    revision = 1 if path == "revision" else None
    status = {"phase": "Outdated"} if path == "outdated" else None
    cluster.create_ers(replicas=2, patch_id=3, status=status, actionable_revision=revision)
    finished = cluster.add_runner(phase="Succeeded", patch_id=2, runner_id=5)
    idle = cluster.add_runner(phase="Running", patch_id=2, runner_id=6)
    cluster.core.delete_namespaced_secret("github-config", cluster.namespace)
    if path == "deleting":
        cluster.custom.delete_namespaced_custom_object(
            api.GROUP, api.VERSION, cluster.namespace, api.ERS_PLURAL, "runners"
        )

    outcome = cluster.reconcile()

    assert outcome.action == "invalid"
    assert cluster.live_runner_names() == {finished, idle}, "no runner deleted"
    assert cluster.github.attempts == []
    assert [e["type"] for e in cluster.events("InvalidSpec")] == ["Warning"]


def test_created_runners_are_owned_annotated_labelled_and_held_by_finalizers(
    cluster: Cluster,
) -> None:
    created = cluster.create_ers(
        replicas=1,
        patch_id=4,
        labels={"actions.github.com/scale-set-name": "runners"},
        runner_metadata={"annotations": {"team": "ci"}},
    )

    cluster.reconcile()

    (item,) = cluster.runners()
    assert item.name.startswith("runners-runner-")
    owner = item.controller_owner()
    assert owner is not None and owner["uid"] == created["metadata"]["uid"]
    assert owner["blockOwnerDeletion"] is True
    assert item.finalizers == [api.ER_FINALIZER, api.ER_REGISTRATION_FINALIZER]
    assert item.annotations == {
        "team": "ci",
        api.PATCH_ID_ANNOTATION: "4",
        api.ACTIONABLE_REVISION_ANNOTATION: "0",
    }
    assert item.labels == {
        "actions.github.com/scale-set-name": "runners",
        "app.kubernetes.io/component": "runner",
    }
    assert item.spec == cluster.ers().ephemeral_runner_spec
