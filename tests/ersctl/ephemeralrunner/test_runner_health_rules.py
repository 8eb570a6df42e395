"""The runner health rules (pure): what a Pod that says nothing for a while means, and
the Pod failures ``phases`` tells apart by mode."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ersctl.api import EphemeralRunner, ERPhase
from ersctl.ephemeralrunner.health import (
    Abandon,
    CheckOnline,
    HealthPolicy,
    NodeLost,
    Replace,
    assess,
    deregistration_left,
    exit_to_check,
    online_verdict,
    protection_due,
    vanished_pod,
)
from ersctl.ephemeralrunner.modes import Mode
from ersctl.ephemeralrunner.phases import (
    Finished,
    PodFailed,
    PodState,
    SyncStatus,
    Wait,
    decide,
    format_time,
)
from ghalistener.actions.types import RunnerID, RunnerReference

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
POLICY = HealthPolicy(
    start_timeout=60.0, online_timeout=120.0, node_lost_timeout=30.0, deregistration_timeout=90.0
)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def er(
    phase: str = "Pending", *, job: str = "", failures: dict[str, str] | None = None
) -> EphemeralRunner:
    status: dict[str, Any] = {"phase": phase, "runnerId": 42}
    if job:
        status["jobId"] = job
    if failures:
        status["failures"] = failures
    return EphemeralRunner(
        {"metadata": {"name": "r", "namespace": "ns", "uid": "u"}, "status": status}
    )


PENDING = PodState(uid="pod-1", phase="Pending", created_at=ago(10))
RUNNING = PodState(uid="pod-1", phase="Running", created_at=ago(500), runner_started_at=ago(100))


def judge(runner: EphemeralRunner, pod: PodState, *, confirmed: bool = False) -> object:
    return assess(runner, pod, now=NOW, policy=POLICY, online_confirmed=confirmed)


# -- Pod failures the Pod reports ---------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "mode", "reason", "detail"),
    [
        pytest.param(
            PodState(uid="p", phase="Failed", reason="Evicted", message="low on memory"),
            Mode.EVICTED,
            "Evicted",
            "the runner pod was evicted (Evicted: low on memory)",
            id="evicted",
        ),
        pytest.param(
            PodState(uid="p", phase="Failed", reason="OutOfcpu", message="Pod was rejected"),
            Mode.REJECTED,
            "OutOfcpu",
            "the node rejected the runner pod (OutOfcpu: Pod was rejected)",
            id="OutOf* admission rejection",
        ),
        pytest.param(
            PodState(uid="p", phase="Failed", reason="NodeShutdown"),
            Mode.POD_FAILED,
            "NodeShutdown",
            "the runner pod failed (NodeShutdown)",
            id="failed otherwise",
        ),
        pytest.param(
            PodState(
                uid="p", phase="Pending", init_failure="init container setup exited with code 2"
            ),
            Mode.INIT_FAILED,
            "InitContainerFailed",
            "init container setup exited with code 2",
            id="init container failed while the runner never started",
        ),
    ],
)
def test_a_pod_that_fails_before_its_runner_ends_is_a_failure_of_its_mode(
    pod: PodState, mode: Mode, reason: str, detail: str
) -> None:
    decision = decide(er(), pod)
    assert isinstance(decision, PodFailed)
    assert (decision.mode, decision.reason, decision.detail) == (mode, reason, detail)


def test_an_init_container_failure_after_the_runner_started_is_no_start_failure() -> None:
    # A restartable (sidecar) init container may exit while the runner runs a job.
    pod = replace(RUNNING, init_failure="init container dind exited with code 1")
    assert isinstance(decide(er(job="job-1"), pod), SyncStatus)


def pod_doc(status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"uid": "pod-1", **meta}, "status": status}


@pytest.mark.parametrize(
    ("status", "reason", "message"),
    [
        pytest.param(
            {
                "containerStatuses": [
                    {
                        "name": "runner",
                        "state": {
                            "waiting": {
                                "reason": "ImagePullBackOff",
                                "message": 'Back-off pulling image "x"',
                            }
                        },
                    }
                ]
            },
            "ImagePullBackOff",
            'container runner: Back-off pulling image "x"',
            id="the runner's image does not pull",
        ),
        pytest.param(
            {
                "containerStatuses": [
                    {
                        "name": "runner",
                        "state": {
                            "waiting": {
                                "reason": "CreateContainerConfigError",
                                "message": 'secret "s" not found',
                            }
                        },
                    }
                ]
            },
            "CreateContainerConfigError",
            'container runner: secret "s" not found',
            id="a config the container cannot be made from",
        ),
        pytest.param(
            {
                "initContainerStatuses": [
                    {"name": "setup", "state": {"waiting": {"reason": "ErrImagePull"}}}
                ],
                "containerStatuses": [
                    {"name": "runner", "state": {"waiting": {"reason": "PodInitializing"}}}
                ],
            },
            "ErrImagePull",
            "container setup",
            id="an init container's image",
        ),
        pytest.param(
            {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes are available: 3 Insufficient cpu.",
                    }
                ]
            },
            "Unschedulable",
            "0/3 nodes are available: 3 Insufficient cpu.",
            id="the scheduler finds no node",
        ),
        pytest.param(
            {
                "containerStatuses": [
                    {"name": "runner", "state": {"waiting": {"reason": "ContainerCreating"}}}
                ]
            },
            "",
            "",
            id="merely starting is no cause",
        ),
    ],
)
def test_the_cause_a_pod_gives_for_not_starting_is_read(
    status: dict[str, Any], reason: str, message: str
) -> None:
    pod = PodState.from_pod(pod_doc(status))
    assert (pod.waiting_reason, pod.waiting_message) == (reason, message)


# -- a Pod that does not start ------------------------------------------------------------


def test_a_pending_pod_is_looked_at_again_when_its_start_deadline_comes() -> None:
    decision = judge(er(), PENDING)
    assert decision == Wait(requeue_after=50.0)  # created 10 s ago, 60 s allowed


def test_a_pod_not_started_by_its_deadline_is_a_failure_naming_its_cause() -> None:
    pod = replace(
        PENDING,
        created_at=ago(61),
        waiting_reason="ImagePullBackOff",
        waiting_message='container runner: Back-off pulling image "x"',
    )
    decision = judge(er(), pod)
    assert decision == PodFailed(
        pod_uid="pod-1",
        reason="ImagePullBackOff",
        message='container runner: Back-off pulling image "x"',
        mode=Mode.START_TIMEOUT,
        detail="the runner pod did not start within 60s "
        '(ImagePullBackOff: container runner: Back-off pulling image "x")',
    )


def test_a_pod_running_a_sidecar_but_not_its_runner_is_not_started() -> None:
    pod = replace(PENDING, phase="Running", created_at=ago(61))
    decision = judge(er(), pod)
    assert isinstance(decision, PodFailed) and decision.mode is Mode.START_TIMEOUT
    assert decision.reason == "StartTimeout" and decision.message == "the pod gave no cause"


# -- a runner that never comes online -----------------------------------------------------


def test_an_idle_runner_is_looked_up_once_its_online_deadline_passed() -> None:
    assert judge(er(), replace(RUNNING, runner_started_at=ago(100))) == Wait(requeue_after=20.0)
    decision = judge(er(), replace(RUNNING, runner_started_at=ago(121)))
    assert decision == CheckOnline(pod_uid="pod-1", then=Wait())


@pytest.mark.parametrize(
    ("runner", "confirmed"),
    [
        pytest.param(er("Running", job="job-1"), False, id="it has a job"),
        pytest.param(er(), True, id="it was seen online before"),
    ],
)
def test_a_runner_with_a_job_or_seen_online_is_never_looked_up(
    runner: EphemeralRunner, confirmed: bool
) -> None:
    pod = replace(RUNNING, runner_started_at=ago(10_000))
    assert not isinstance(judge(runner, pod, confirmed=confirmed), CheckOnline)


def reference(*, status: str = "online", busy: bool = False) -> RunnerReference:
    return RunnerReference(id=RunnerID(42), name="r", status=status, busy=busy)


def test_what_github_says_of_a_runner_past_its_online_deadline() -> None:
    check = CheckOnline(pod_uid="pod-1", then=Wait())
    assert online_verdict(er(), check, reference(), policy=POLICY) is None
    assert (
        online_verdict(er(), check, reference(status="offline", busy=True), policy=POLICY) is None
    )
    offline = online_verdict(er(), check, reference(status="offline"), policy=POLICY)
    assert isinstance(offline, PodFailed) and offline.mode is Mode.NOT_ONLINE
    assert offline.pod_uid == "pod-1" and "offline" in offline.message
    lost = online_verdict(er(), check, None, policy=POLICY)
    assert isinstance(lost, Abandon) and lost.mode is Mode.REGISTRATION_LOST
    assert "runner 42" in lost.detail


# -- a lost node ----------------------------------------------------------------------------


def test_a_pod_terminating_past_its_grace_period_plus_the_timeout_lost_its_node() -> None:
    terminating = replace(RUNNING, deleting=True, deleted_at=ago(10))
    assert judge(er(), terminating) == Wait(requeue_after=20.0)
    lost = judge(er("Running", job="job-1"), replace(terminating, deleted_at=ago(31)))
    assert isinstance(lost, NodeLost) and lost.pod_uid == "pod-1"
    assert f"terminating past its grace period since {format_time(ago(31))}" in lost.detail


def test_a_pod_unknown_since_its_node_stopped_reporting_lost_its_node() -> None:
    unknown = replace(RUNNING, phase="Unknown", ready=False, not_ready_since=ago(29))
    assert judge(er(), unknown) == Wait(requeue_after=1.0)
    assert isinstance(judge(er(), replace(unknown, not_ready_since=ago(31))), NodeLost)
    # Without a readiness transition, its age counts.
    assert isinstance(judge(er(), replace(unknown, not_ready_since=None)), NodeLost)


# -- a Pod deleted under its runner -------------------------------------------------------


def test_a_pod_deleted_under_its_runner_is_made_again_or_its_spent_runner_deleted() -> None:
    assert vanished_pod(er(), "") is None  # never had one
    assert vanished_pod(er(failures={"pod-1": format_time(NOW)}), "pod-1") is None  # ours
    assert vanished_pod(er(), "pod-1") == Replace(
        mode=Mode.POD_DELETED,
        detail="the runner pod was deleted while its runner had no job; making another",
    )
    spent = vanished_pod(er("Running", job="job-1"), "pod-1")
    assert isinstance(spent, Abandon) and spent.mode is Mode.POD_DELETED
    assert "during job job-1" in spent.detail


# -- protection, deregistration, the policy -----------------------------------------------


@pytest.mark.parametrize(
    ("runner", "pod", "policy", "due"),
    [
        pytest.param(er("Running", job="job-1"), RUNNING, POLICY, True, id="busy"),
        pytest.param(er(), RUNNING, POLICY, False, id="idle"),
        pytest.param(
            er("Running", job="j"),
            replace(RUNNING, protected=True),
            POLICY,
            False,
            id="done already",
        ),
        pytest.param(
            er("Running", job="j"),
            RUNNING,
            replace(POLICY, protect_busy=False),
            False,
            id="turned off",
        ),
        pytest.param(
            er("Running", job="j"), replace(RUNNING, runner_exit_code=0), POLICY, False, id="exited"
        ),
        pytest.param(
            er("Running", job="j"), replace(RUNNING, deleting=True), POLICY, False, id="deleting"
        ),
    ],
)
def test_only_a_busy_runners_live_pod_is_protected(
    runner: EphemeralRunner, pod: PodState, policy: HealthPolicy, due: bool
) -> None:
    assert protection_due(runner, pod, policy) is due


def test_a_deleted_runner_waits_for_its_deregistration_from_its_deletion_on() -> None:
    runner = er()
    runner.metadata["deletionTimestamp"] = format_time(ago(60))
    assert deregistration_left(runner, now=NOW, policy=POLICY) == 30.0
    assert deregistration_left(runner, now=NOW + timedelta(seconds=31), policy=POLICY) < 0


def test_a_health_policy_without_time_for_a_rule_is_rejected() -> None:
    with pytest.raises(ValueError, match="timeouts must be > 0"):
        HealthPolicy(start_timeout=0)


def test_only_a_runner_exiting_0_without_a_recorded_job_is_checked_at_github() -> None:
    success = Finished(phase=ERPhase.SUCCEEDED)
    assert exit_to_check(er(), success)
    assert not exit_to_check(er("Running", job="job-1"), success)
    assert not exit_to_check(er(), Finished(phase=ERPhase.OUTDATED))


def test_a_finished_runner_still_finishes_first() -> None:
    exited = replace(RUNNING, runner_exit_code=0, runner_started_at=ago(10_000))
    assert judge(er(), exited) == Finished(phase=ERPhase.SUCCEEDED)
