"""Failed runners are collected after the TTL, and a set whose runners keep failing
backs off its replacements (``ersctl.ephemeralrunnerset.failurepolicy``), against a real server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from ersctl import api
from ersctl.ephemeralrunnerset.failurepolicy import FailedRunnerPolicy
from ersctl.ephemeralrunnerset.metrics import ArcSetGauges
from ersctl.reasons import Reason
from tests.clock import FakeClock
from tests.ersctl.ephemeralrunnerset.harness import Cluster

T0 = datetime(2030, 1, 1, tzinfo=UTC).timestamp()


def at(seconds: float) -> str:
    """T0 + ``seconds`` as Kubernetes writes a time."""
    return api.format_time(datetime.fromtimestamp(T0 + seconds, UTC))


def fail(cluster: Cluster, name: str, *, when: float, reason: str = "ImagePullBackOff") -> None:
    """What the runner controller leaves on a runner whose Pods failed too often."""
    cluster.set_runner_status(
        name,
        phase="Failed",
        reason="TooManyPodFailures",
        message=f"the runner pod failed 5 times; last: {reason}: image not found",
        failures={f"pod-{name}": at(when)},
    )


def arc_failed_gauge(cluster: Cluster) -> float | None:
    registry = CollectorRegistry()
    registry.register(ArcSetGauges(lambda: [cluster.ers()], lambda ers: cluster.runners(ers.name)))
    return registry.get_sample_value(
        "gha_controller_failed_ephemeral_runners",
        {"name": "runners", "namespace": cluster.namespace, "repository": "",
         "organization": "octo-org", "enterprise": ""},
    )  # fmt: skip


def condition(cluster: Cluster) -> dict[str, Any] | None:
    conditions = cluster.ers().status.get("conditions") or []
    return next((c for c in conditions if c["type"] == "RunnersFailing"), None)


def test_a_failed_runner_is_kept_for_the_ttl_then_removed_from_the_service_and_replaced(
    cluster: Cluster,
) -> None:
    clock = FakeClock(T0)
    cluster.use_reconciler(failed_runners=FailedRunnerPolicy(ttl=300), clock=clock)
    cluster.create_ers(replicas=2, patch_id=0)
    idle = cluster.add_runner(phase="Pending", runner_id=1)
    failed = cluster.add_runner(runner_id=2)
    fail(cluster, failed, when=0)
    clock.now = T0 + 100

    outcome = cluster.reconcile()

    assert cluster.live_runner_names() == {idle, failed}, "kept for people to inspect"
    assert outcome.result.requeue_after == pytest.approx(200), "back when the TTL is up"
    assert arc_failed_gauge(cluster) == 1
    clock.now = T0 + 300

    outcome = cluster.reconcile()

    assert outcome.action == "failed-runners-deleted"
    assert cluster.github.removed == [2], "its registration is removed from the service"
    assert cluster.live_runner_names() == {idle}
    [event] = cluster.events("FailedRunnerDeleted")
    assert event["type"] == "Warning"
    assert failed in event["message"] and "ImagePullBackOff" in event["message"]
    assert cluster.counter("failed_runners_deleted") == 1
    cluster.release_runner(failed)  # the runner controller finishes the deletion

    outcome = cluster.reconcile()

    assert outcome.action == "scale-up", "the slot is refilled"
    assert len(cluster.live_runner_names()) == 2
    assert arc_failed_gauge(cluster) == 0


def test_a_collected_slot_of_an_already_serviced_patch_waits_for_the_next_patch(
    cluster: Cluster,
) -> None:
    # The patch-ID rule holds for refills too: patch 5 produced runners, so only a new
    # patch creates more (the listener publishes one on its next poll).
    clock = FakeClock(T0 + 400)
    cluster.use_reconciler(failed_runners=FailedRunnerPolicy(ttl=300), clock=clock)
    cluster.create_ers(replicas=2, patch_id=5)
    cluster.add_runner(phase="Pending", runner_id=1, patch_id=5)
    failed = cluster.add_runner(runner_id=2, patch_id=5)
    fail(cluster, failed, when=0)

    assert cluster.reconcile().action == "failed-runners-deleted"
    cluster.release_runner(failed)

    assert cluster.reconcile().action == "hold"
    assert len(cluster.live_runner_names()) == 1

    cluster.patch_ers("runners", {"patchID": 6})

    assert cluster.reconcile().action == "scale-up"
    assert len(cluster.live_runner_names()) == 2


def test_a_set_whose_runners_keep_failing_backs_off_shows_it_and_a_new_revision_resets_it(
    cluster: Cluster,
) -> None:
    clock = FakeClock(T0)
    cluster.use_reconciler(failed_runners=FailedRunnerPolicy(ttl=60), clock=clock)
    cluster.create_ers(replicas=3, patch_id=0)
    first = [cluster.add_runner(runner_id=10 + i) for i in range(3)]
    for i, name in enumerate(first):
        fail(cluster, name, when=i)
    clock.now = T0 + 5

    cluster.reconcile()

    failing = condition(cluster)
    assert failing is not None and failing["status"] == "True"
    assert "3 of the last 3 runners failed" in failing["message"]
    assert first[2] in failing["message"] and "ImagePullBackOff" in failing["message"]
    [warning] = cluster.events("RunnersFailing")
    assert warning["type"] == "Warning"
    clock.now = T0 + 62  # all three past the TTL

    assert cluster.reconcile().action == "failed-runners-deleted"
    for name in first:
        cluster.release_runner(name)
    clock.now = T0 + 63

    outcome = cluster.reconcile()

    assert outcome.action == "backed-off", "no replacement at once: 10 s after the collection"
    assert outcome.result.requeue_after == pytest.approx(9)
    assert cluster.live_runner_names() == set()
    clock.now = T0 + 72

    assert cluster.reconcile().action == "scale-up"
    second = sorted(cluster.live_runner_names())
    assert len(second) == 3
    for name in second:
        fail(cluster, name, when=80)
    clock.now = T0 + 140

    assert cluster.reconcile().action == "failed-runners-deleted"
    for name in second:
        cluster.release_runner(name)
    outcome = cluster.reconcile()

    assert outcome.action == "backed-off"
    assert outcome.result.requeue_after == pytest.approx(80), "6 failures: 10 * 2**3"
    failing = condition(cluster)
    assert failing is not None and "6 of the last 6 runners failed" in failing["message"]

    cluster.patch_ers("runners", {"actionableRevision": 1})  # a fixed runner template
    assert cluster.reconcile().action == "revision-applied"

    outcome = cluster.reconcile()

    assert outcome.action == "scale-up", "a new revision resets the backoff"
    recovered = condition(cluster)
    assert recovered is not None and recovered["status"] == "False"
    assert [e["type"] for e in cluster.events("RunnersRecovered")] == ["Normal"]


def test_runners_that_exit_without_a_job_back_their_set_off_as_failed_ones_do(
    cluster: Cluster,
) -> None:
    # A broken entrypoint that exits 0: each runner Succeeded, none ran a job. Counted as
    # successes, they would be replaced at full speed for ever.
    clock = FakeClock(T0)
    cluster.use_reconciler(failed_runners=FailedRunnerPolicy(ttl=60), clock=clock)
    cluster.create_ers(replicas=3, patch_id=0)
    names = [cluster.add_runner(runner_id=10 + i) for i in range(3)]
    for name in names:
        cluster.set_runner_status(
            name,
            phase="Succeeded",
            reason=Reason.RUNNER_EXITED_WITHOUT_JOB,
            message="the runner exited without running a job",
        )
    clock.now = T0 + 5

    assert cluster.reconcile().action == "cleanup-finished"
    for name in names:
        cluster.release_runner(name)
    clock.now = T0 + 6
    outcome = cluster.reconcile()

    assert outcome.action == "backed-off", "10 s after the unused runners were seen"
    assert outcome.result.requeue_after == pytest.approx(9)
    failing = condition(cluster)
    assert failing is not None and "RunnerExitedWithoutJob" in failing["message"]
