"""Runner health through the real reconciler, the API server and the GitHub simulator:
one test per failure mode (what the controller concludes, after how long, the Event,
the metric, what becomes of the slot), busy runners never deleted by these rules, and
busy runners' Pods protected from disruption. Deadlines are the harness's short
``HEALTH`` policy, passed by moving its clock; the test plays the kubelet."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import pytest

from ersctl.api import ER_REGISTRATION_FINALIZER, format_time
from ersctl.ephemeralrunner.pods import DISRUPTION_ANNOTATIONS
from ersctl.kube.reconcile import Result
from ersctl.scaleset.ports import ServiceError
from ersctl.testing.podsim import exited_status, running_status
from tests.ersctl.ephemeralrunner.conftest import HEALTH, Harness
from tests.ersctl.ephemeralrunner.test_runner_controller import RUNNER, start_a_job
from tests.ersctl.ephemeralrunner.test_runner_manager import UNSCHEDULED

RUNNING = running_status()


def faults(h: Harness, mode: str) -> float:
    return h.metric("ersctl_runner_faults_total", mode=mode)


def message(h: Harness, reason: str) -> str:
    (event,) = h.events(reason)
    return str(event["message"])


def pod_uid(h: Harness) -> str:
    pod = h.pod()
    assert pod is not None
    return str(pod["metadata"]["uid"])


def a_runner_with_its_pod(h: Harness, status: dict[str, Any] | None = None) -> str:
    """A registered runner with its Pod (in ``status``, when given); its Pod's uid."""
    h.create_runner()
    h.settle()
    if status is not None:
        h.set_pod_status(status)
    return pod_uid(h)


def with_job(h: Harness) -> None:
    """The runner takes a job at GitHub and the listener records it."""
    start_a_job(h, h.sim_runners()[RUNNER])
    h.record_job_started("job-1")
    h.settle()


def failures_of(h: Harness) -> dict[str, Any]:
    runner = h.runner()
    assert runner is not None
    return runner.failures


# -- failures the Pod reports -------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason", "mode", "said"),
    [
        pytest.param(
            {"phase": "Failed", "reason": "Evicted", "message": "The node was low on memory."},
            "RunnerPodEvicted",
            "evicted",
            "the runner pod was evicted (Evicted: The node was low on memory.); failure 1 of 3",
            id="evicted",
        ),
        pytest.param(
            {"phase": "Failed", "reason": "OutOfmemory", "message": "Pod was rejected"},
            "RunnerPodRejected",
            "rejected",
            "the node rejected the runner pod (OutOfmemory: Pod was rejected); failure 1 of 3",
            id="rejected by the node (OutOf*)",
        ),
        pytest.param(
            {
                "phase": "Pending",
                "initContainerStatuses": [
                    {"name": "setup", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
                ],
                "containerStatuses": [
                    {"name": "runner", "state": {"waiting": {"reason": "PodInitializing"}}}
                ],
            },
            "RunnerInitFailed",
            "init_failed",
            "init container setup exited with code 1 (Error); failure 1 of 3",
            id="an init container failed",
        ),
    ],
)
def test_a_pod_failing_before_its_runner_ran_is_replaced_through_the_backoff(
    h: Harness, status: dict[str, Any], reason: str, mode: str, said: str
) -> None:
    first = a_runner_with_its_pod(h, status)

    assert h.settle().requeue_after == 5.0  # the failure backoff
    assert list(failures_of(h)) == [first] and h.pod() is None
    assert message(h, reason) == said
    assert faults(h, mode) == 1
    h.clock.advance(5.0)
    h.settle()
    assert pod_uid(h) != first  # the slot is refilled by a new Pod of the same runner


def test_an_idle_runner_evicted_by_node_pressure_is_retried_but_one_with_a_job_deleted(
    h: Harness,
) -> None:
    a_runner_with_its_pod(h, RUNNING)
    with_job(h)
    h.sim.complete_job(runner_id=h.sim_runners()[RUNNER], result="failed")  # the job died
    h.set_pod_status({"phase": "Failed", "reason": "Evicted"})
    h.settle()

    runner = h.runner()
    assert runner is None or runner.is_deleting  # its registration is spent
    assert h.events("RunnerFailedWithJob") and faults(h, "evicted") == 1


# -- a Pod that does not start ------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cause"),
    [
        pytest.param(
            {
                "phase": "Pending",
                "containerStatuses": [
                    {
                        "name": "runner",
                        "state": {
                            "waiting": {
                                "reason": "ImagePullBackOff",
                                "message": 'Back-off pulling image "ghcr.io/no/such:image"',
                            }
                        },
                    }
                ],
            },
            'ImagePullBackOff: container runner: Back-off pulling image "ghcr.io/no/such:image"',
            id="ImagePullBackOff",
        ),
        pytest.param(
            {
                "phase": "Pending",
                "containerStatuses": [
                    {"name": "runner", "state": {"waiting": {"reason": "ErrImagePull"}}}
                ],
            },
            "ErrImagePull: container runner",
            id="ErrImagePull",
        ),
        pytest.param(
            {
                "phase": "Pending",
                "containerStatuses": [
                    {
                        "name": "runner",
                        "state": {
                            "waiting": {
                                "reason": "CreateContainerConfigError",
                                "message": 'secret "runner-env" not found',
                            }
                        },
                    }
                ],
            },
            'CreateContainerConfigError: container runner: secret "runner-env" not found',
            id="CreateContainerConfigError",
        ),
        pytest.param(
            UNSCHEDULED,
            "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.",
            id="Unschedulable",
        ),
    ],
)
def test_a_pod_pending_past_the_start_timeout_fails_naming_its_cause(
    h: Harness, status: dict[str, Any], cause: str
) -> None:
    first = a_runner_with_its_pod(h, status)
    result = h.settle()
    # Looked at again at the deadline (the Pod's time is whole seconds, the clock's too).
    assert result.requeue_after is not None
    assert HEALTH.start_timeout - 2 <= result.requeue_after <= HEALTH.start_timeout + 1
    assert failures_of(h) == {}  # not yet

    h.clock.advance(HEALTH.start_timeout + 1)
    h.settle()

    assert list(failures_of(h)) == [first] and h.pod() is None
    said = message(h, "RunnerStartTimeout")
    assert said == f"the runner pod did not start within 600s ({cause}); failure 1 of 3"
    runner = h.runner()
    assert runner is not None and runner.status["reason"] == cause.split(":")[0]
    assert faults(h, "start_timeout") == 1


# -- a runner that never comes online ---------------------------------------------------


def past_the_online_deadline(h: Harness) -> None:
    h.clock.advance(HEALTH.online_timeout + 1)


def test_a_runner_never_online_at_github_is_a_failure_and_gets_a_new_pod(h: Harness) -> None:
    first = a_runner_with_its_pod(h, RUNNING)  # the Pod runs; the runner never connects
    h.settle()
    assert failures_of(h) == {}

    past_the_online_deadline(h)
    h.settle()

    assert list(failures_of(h)) == [first]
    assert "the runner was not online at the service within 900s" in message(h, "RunnerNotOnline")
    assert faults(h, "not_online") == 1
    assert RUNNER in h.sim_runners()  # the registration stays: the next Pod uses it


def test_a_runner_online_at_github_is_looked_up_once_and_then_left_alone(h: Harness) -> None:
    a_runner_with_its_pod(h, RUNNING)
    secret = h.secret()
    assert secret is not None
    h.sim.connect_runner(jit_config(secret))
    past_the_online_deadline(h)
    assert h.settle() == Result()  # online: no deadline left

    h.sim.inject_fault(status=500, times=-1)  # any further look at GitHub would fail
    past_the_online_deadline(h)
    h.settle()
    assert failures_of(h) == {} and faults(h, "not_online") == 0


def test_the_replacement_pod_of_a_runner_seen_online_is_looked_up_again(h: Harness) -> None:
    """GitHub's "online" spoke of the first Pod's process: the Pod made after a drain
    runs a new one, which must reach GitHub in its turn."""
    a_runner_with_its_pod(h, RUNNING)
    secret = h.secret()
    assert secret is not None
    h.sim.connect_runner(jit_config(secret))
    past_the_online_deadline(h)
    assert h.settle() == Result()  # online: this Pod is left alone

    h.kube.delete_object("pods", h.namespace, RUNNER)  # a drain: SIGTERM, and the runner
    h.sim.disconnect_runner(h.sim_runners()[RUNNER], graceful=True)  # deletes its session
    h.reconcile()  # another Pod at once
    second = pod_uid(h)
    # It runs from now on (the harness's clock), but its runner never reaches GitHub.
    h.set_pod_status(running_status(started_at=format_time(h.clock.datetime())))
    assert h.settle().requeue_after  # not yet past its own online deadline
    past_the_online_deadline(h)
    h.settle()

    assert list(failures_of(h)) == [second]
    assert faults(h, "not_online") == 1


def jit_config(secret: dict[str, Any]) -> str:
    return base64.b64decode(secret["data"]["jitToken"]).decode()


def test_an_idle_running_runner_github_no_longer_knows_is_deleted(h: Harness) -> None:
    a_runner_with_its_pod(h, RUNNING)
    h.sim.remove_runner(h.sim_runners()[RUNNER])  # e.g. a job took it unrecorded
    past_the_online_deadline(h)
    h.settle()

    assert h.runner() is None  # gone: the set makes another
    assert "no longer knows runner" in message(h, "RunnerRegistrationLost")
    assert faults(h, "registration_lost") == 1


# -- a Pod deleted under its runner -------------------------------------------------------


def test_a_pod_deleted_under_an_idle_runner_is_made_again_at_once_without_a_failure(
    h: Harness,
) -> None:
    first = a_runner_with_its_pod(h, RUNNING)
    h.kube.delete_object("pods", h.namespace, RUNNER)  # a drain
    h.settle()

    assert pod_uid(h) != first
    assert failures_of(h) == {}  # not the runner's fault
    (event,) = h.events("RunnerPodDeleted")
    assert event["type"] == "Normal" and faults(h, "pod_deleted") == 1


def test_a_pod_deleted_under_a_busy_runner_is_not_made_again_its_runner_is_deleted(
    h: Harness,
) -> None:
    a_runner_with_its_pod(h, RUNNING)
    with_job(h)
    h.kube.delete_object("pods", h.namespace, RUNNER)
    h.sim.complete_job(runner_id=h.sim_runners()[RUNNER], result="failed")
    h.settle()

    runner = h.runner()
    assert runner is None or runner.is_deleting
    assert h.pod() is None  # no Pod with a spent JIT config (ARC #4588)
    assert "deleted during job job-1" in message(h, "RunnerPodDeleted")


# -- a lost node ----------------------------------------------------------------------------


NODE_FINALIZER = "example.com/lost-node"
"""Holds a deleted Pod as a kubelet that never answers would: stuck terminating."""


def stuck_terminating(h: Harness) -> None:
    h.kube.patch_object("pods", h.namespace, RUNNER, {"metadata": {"finalizers": [NODE_FINALIZER]}})
    h.kube.delete_object("pods", h.namespace, RUNNER)


def test_a_pod_stuck_terminating_past_the_timeout_is_force_deleted_with_its_runner(
    h: Harness,
) -> None:
    uid = a_runner_with_its_pod(h, RUNNING)
    stuck_terminating(h)
    result = h.settle()
    assert result.requeue_after is not None
    assert HEALTH.node_lost_timeout - 2 <= result.requeue_after <= HEALTH.node_lost_timeout + 1
    assert not h.events("RunnerNodeLost")

    h.clock.advance(HEALTH.node_lost_timeout + 1)
    h.sent.clear()
    h.settle()

    forced = [r for r in h.sent.records() if r.verb == "delete" and r.resource == "pods"]
    assert [r.body for r in forced] == [{"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}]
    assert h.runner() is None  # the set makes another runner, under another name
    assert "its node does not answer; deleting the runner" in message(h, "RunnerNodeLost")
    assert faults(h, "node_lost") == 1


def test_a_pod_in_phase_unknown_past_the_timeout_is_deleted_with_its_runner(h: Harness) -> None:
    a_runner_with_its_pod(h, RUNNING)
    h.set_pod_status({"phase": "Unknown", "conditions": [{"type": "Ready", "status": "False"}]})
    h.settle()
    assert h.runner() is not None

    h.clock.advance(HEALTH.node_lost_timeout + 1)
    h.settle()

    assert h.runner() is None and h.pod() is None
    assert "in phase Unknown since" in message(h, "RunnerNodeLost")


def test_a_lost_nodes_runner_that_github_says_is_busy_is_never_deleted(h: Harness) -> None:
    a_runner_with_its_pod(h, RUNNING)
    with_job(h)
    stuck_terminating(h)
    h.clock.advance(HEALTH.node_lost_timeout + 1)

    assert h.settle().requeue_after == 30.0
    runner = h.runner()
    assert runner is not None and not runner.is_deleting
    assert not h.events("RunnerNodeLost")

    h.sim.complete_job(runner_id=h.sim_runners()[RUNNER], result="failed")  # GitHub gives up
    h.settle()
    assert h.events("RunnerNodeLost") and h.runner() is None


# -- a runner that exits without a job (ARC #4709) ----------------------------------------


def test_a_runner_that_exits_without_a_job_is_removed_from_github_at_once(h: Harness) -> None:
    a_runner_with_its_pod(h, RUNNING)
    h.set_pod_status(exited_status(0))
    h.settle()

    runner = h.runner()
    assert runner is not None and runner.phase == "Succeeded"
    assert runner.exited_unused  # its set counts it as a failure
    assert h.sim_runners() == {}  # not left listed until its runner is deleted
    (event,) = h.events("RunnerExitedWithoutJob")
    assert event["type"] == "Normal" and faults(h, "exited_without_job") == 1


@pytest.mark.parametrize("recorded", [True, False], ids=["job recorded", "listener late"])
def test_a_runner_that_ran_its_job_is_not_reported_as_unused(h: Harness, recorded: bool) -> None:
    a_runner_with_its_pod(h, RUNNING)
    start_a_job(h, h.sim_runners()[RUNNER])
    if recorded:
        h.record_job_started("job-1")
    h.sim.complete_job(runner_id=h.sim_runners()[RUNNER])  # GitHub removes it after its job
    h.set_pod_status(exited_status(0))
    h.settle()

    runner = h.runner()
    assert runner is not None and runner.phase == "Succeeded" and not runner.exited_unused
    assert not h.events("RunnerExitedWithoutJob") and faults(h, "exited_without_job") == 0


# -- a registration GitHub keeps failing to remove ----------------------------------------


def test_a_deleted_runner_is_let_go_when_github_keeps_failing_past_the_timeout(
    h: Harness,
) -> None:
    a_runner_with_its_pod(h, RUNNING)
    runner_id = h.sim_runners()[RUNNER]
    h.sim.inject_fault(endpoint="remove_runner", status=500, times=-1)
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    with pytest.raises(ServiceError):
        h.reconcile()  # retried with backoff
    runner = h.runner()
    assert runner is not None and runner.has_finalizer(ER_REGISTRATION_FINALIZER)

    h.clock.advance(HEALTH.deregistration_timeout + 1)
    h.settle()

    assert h.runner() is None
    said = message(h, "RegistrationAbandoned")
    assert f"remove runner {runner_id} at GitHub" in said
    assert faults(h, "deregistration_timeout") == 1


def test_a_deleted_busy_runner_keeps_its_finalizer_past_the_timeout(h: Harness) -> None:
    a_runner_with_its_pod(h, RUNNING)
    with_job(h)
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    h.clock.advance(HEALTH.deregistration_timeout + 1)

    assert h.settle().requeue_after == 30.0  # JobStillRunning: never forced
    runner = h.runner()
    assert runner is not None and runner.has_finalizer(ER_REGISTRATION_FINALIZER)
    assert not h.events("RegistrationAbandoned")


# -- busy runners are protected from disruption -------------------------------------------


def pod_annotations(h: Harness) -> dict[str, str]:
    pod = h.pod()
    assert pod is not None
    return dict(pod["metadata"].get("annotations") or {})


def test_a_busy_runners_pod_carries_the_do_not_disrupt_annotations_an_idle_ones_none(
    h: Harness,
) -> None:
    a_runner_with_its_pod(h, RUNNING)
    h.settle()
    assert not set(DISRUPTION_ANNOTATIONS) & set(pod_annotations(h))  # idle: consolidation may

    with_job(h)

    assert pod_annotations(h).items() >= DISRUPTION_ANNOTATIONS.items()
    assert pod_annotations(h)["actions.github.com/patch-id"] == "3"  # the rest is kept


def test_without_busy_runner_protection_no_pod_is_annotated(h: Harness) -> None:
    h.reconciler = h.build(replace(HEALTH, protect_busy=False))
    a_runner_with_its_pod(h, RUNNING)
    with_job(h)
    assert not set(DISRUPTION_ANNOTATIONS) & set(pod_annotations(h))
