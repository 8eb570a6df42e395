"""What a runner Pod's state means for its EphemeralRunner (pure decisions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ersctl.api import EphemeralRunner, ERPhase
from ersctl.ephemeralrunner.modes import Mode
from ersctl.ephemeralrunner.phases import (
    READY_REPORT_DELAY,
    FailurePolicy,
    Finished,
    PodFailed,
    PodState,
    SyncStatus,
    Wait,
    decide,
    format_time,
    report_ready_later,
    seconds_until_next_pod,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def er(phase: str = "", ready: bool = False, *, job: str = "") -> EphemeralRunner:
    status: dict[str, Any] = {"phase": phase, "ready": ready}
    if job:
        status["jobId"] = job  # what the listener writes on JobStarted
    return EphemeralRunner({"metadata": {"name": "r"}, "status": status})


def pod(
    phase: str = "Pending",
    *,
    exit_code: int | None = None,
    running: bool = False,
    ready: bool = False,
    reason: str = "",
    deleting: bool = False,
    container: str = "runner",
) -> dict[str, Any]:
    state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
    if running:
        state = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code}}
    meta: dict[str, Any] = {"name": "r", "uid": "pod-1"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "status": {
            "phase": phase,
            "reason": reason,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": container, "state": state}],
        },
    }


@pytest.mark.parametrize(
    ("runner", "doc", "expected"),
    [
        pytest.param(
            er(""),
            pod("Pending"),
            SyncStatus(phase=ERPhase.PENDING, ready=False, reason="", message=""),
            id="new runner, pending pod -> Pending",
        ),
        pytest.param(er("Pending"), pod("Pending"), Wait(), id="already Pending -> nothing"),
        pytest.param(
            er("Pending"),
            pod("Running", running=True, ready=True),
            SyncStatus(phase=ERPhase.PENDING, ready=True, reason="", message=""),
            id="pod runs, no job -> still Pending, now ready (online and idle)",
        ),
        pytest.param(
            er("Pending", ready=True),
            pod("Running", running=True, ready=True),
            Wait(),
            id="idle and ready already recorded -> nothing",
        ),
        pytest.param(
            er("Pending", ready=True, job="job-1"),
            pod("Running", running=True, ready=True),
            SyncStatus(phase=ERPhase.RUNNING, ready=True, reason="", message=""),
            id="listener recorded a job -> Running",
        ),
        pytest.param(
            er("", job="job-1"),
            pod("Running", running=True, ready=True),
            SyncStatus(phase=ERPhase.RUNNING, ready=True, reason="", message=""),
            id="job recorded before the first phase write -> Running",
        ),
        pytest.param(
            er("Running", ready=True, job="job-1"),
            pod("Running", running=True, ready=True),
            Wait(),
            id="already Running with its job -> nothing",
        ),
        pytest.param(
            er("Running", ready=True),
            pod("Running", running=True, ready=True),
            SyncStatus(phase=ERPhase.PENDING, ready=True, reason="", message=""),
            id="Running without a job (written by an older version) -> Pending",
        ),
        pytest.param(
            er("Running", ready=True, job="job-1"),
            pod("Running", running=True, ready=False),
            SyncStatus(phase=ERPhase.RUNNING, ready=False, reason="", message=""),
            id="readiness lost during a job -> synced, still Running",
        ),
        pytest.param(
            er("Pending", ready=True),
            pod("Running", running=True, ready=False),
            SyncStatus(phase=ERPhase.PENDING, ready=False, reason="", message=""),
            id="readiness lost while idle -> synced, still Pending",
        ),
        pytest.param(
            er("Running", job="job-1"),
            pod("Succeeded", exit_code=0),
            Finished(phase=ERPhase.SUCCEEDED),
            id="runner exits 0 -> Succeeded",
        ),
        pytest.param(
            er("Running", job="job-1"),
            pod("Running", exit_code=0),
            Finished(phase=ERPhase.SUCCEEDED),
            id="runner exits 0 while a sidecar runs -> Succeeded",
        ),
        pytest.param(
            er("Running", job="job-1"),
            pod("Succeeded"),
            Finished(phase=ERPhase.SUCCEEDED),
            id="pod Succeeded without container status -> Succeeded",
        ),
        pytest.param(
            er("Running"),
            pod("Failed", exit_code=1, reason="Error"),
            PodFailed(
                pod_uid="pod-1",
                reason="Error",
                message="the runner container exited with code 1",
                mode=Mode.EXITED,
                detail="the runner container exited with code 1",
            ),
            id="runner exits 1 -> a failure",
        ),
        pytest.param(
            er("Running"),
            pod("Failed", reason="Evicted"),
            PodFailed(
                pod_uid="pod-1",
                reason="Evicted",
                message="",
                mode=Mode.EVICTED,
                detail="the runner pod was evicted (Evicted)",
            ),
            id="evicted before the runner ended -> a failure",
        ),
        pytest.param(
            er("Running"),
            pod("Failed", exit_code=7),
            Finished(
                phase=ERPhase.OUTDATED,
                reason="RunnerVersionDeprecated",
                message="the runner exited with code 7: its version is deprecated",
            ),
            id="deprecated-version exit code -> Outdated",
        ),
        pytest.param(
            er("Running"),
            pod("Failed", exit_code=1, deleting=True),
            Wait(),
            id="a pod being deleted -> nothing",
        ),
        pytest.param(
            er(""),
            pod("Running", exit_code=0, container="sidecar"),
            SyncStatus(phase=ERPhase.PENDING, ready=False, reason="", message=""),
            id="only the runner container's exit counts",
        ),
        pytest.param(
            er("Running", ready=True, job="job-1"),
            pod("Failed", exit_code=7),
            Finished(
                phase=ERPhase.OUTDATED,
                reason="RunnerVersionDeprecated",
                message="the runner exited with code 7: its version is deprecated",
            ),
            id="deprecated-version exit during a job -> Outdated all the same",
        ),
        pytest.param(
            er("Pending", ready=True),
            pod("Succeeded", exit_code=0),
            Finished(phase=ERPhase.SUCCEEDED),
            id="an idle runner that exits 0 -> Succeeded (GitHub says whether it ran a job)",
        ),
    ],
)
def test_the_runner_phase_follows_its_pod(
    runner: EphemeralRunner, doc: dict[str, Any], expected: object
) -> None:
    assert decide(runner, PodState.from_pod(doc)) == expected


def failures(*ages: float) -> dict[str, str]:
    return {f"pod-{i}": format_time(NOW - timedelta(seconds=age)) for i, age in enumerate(ages)}


@pytest.mark.parametrize(
    ("recorded", "expected_wait"),
    [
        pytest.param({}, 0.0, id="no failure -> now"),
        pytest.param(failures(0), 5.0, id="1 failure just now -> 5 s"),
        pytest.param(failures(3), 2.0, id="1 failure 3 s ago -> 2 s"),
        pytest.param(failures(60, 0), 10.0, id="2 failures -> 10 s after the latest"),
        pytest.param(failures(90, 60, 0), 20.0, id="3 failures -> 20 s"),
        pytest.param(failures(90, 60, 30, 0), 40.0, id="4 failures -> 40 s"),
        pytest.param(failures(100), 0.0, id="backoff already over -> now"),
        pytest.param({"pod-x": "yesterday-ish"}, 0.0, id="unparsable time never blocks"),
    ],
)
def test_a_new_pod_after_failures_waits_an_exponential_backoff(
    recorded: dict[str, str], expected_wait: float
) -> None:
    assert seconds_until_next_pod(recorded, now=NOW, policy=FailurePolicy()) == expected_wait


def test_the_backoff_is_capped() -> None:
    policy = FailurePolicy(max_failures=50, backoff_base=5.0, backoff_cap=60.0)
    assert policy.delay(10) == 60.0
    assert policy.delay(1000) == 60.0


@pytest.mark.parametrize(
    ("max_failures", "count", "exhausted"),
    [
        pytest.param(5, 4, False, id="default: 4 failures keep trying"),
        pytest.param(5, 5, True, id="default: the 5th failure ends it"),
        pytest.param(2, 2, True, id="configured 2"),
        pytest.param(1, 0, False, id="configured 1, no failure yet"),
    ],
)
def test_the_runner_gives_up_after_the_configured_number_of_failures(
    max_failures: int, count: int, exhausted: bool
) -> None:
    assert FailurePolicy(max_failures=max_failures).exhausted(count) is exhausted


def test_a_policy_that_never_allows_a_pod_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_failures"):
        FailurePolicy(max_failures=0)


def test_an_idle_runner_is_reported_ready_a_delay_after_its_ready_transition() -> None:
    # The container started at midnight; the readiness probe passed at 00:00:30.
    doc = pod("Running", running=True, ready=True)
    doc["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:30Z"
    state = PodState.from_pod(doc)
    idle = er("Pending")
    ready_at = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)

    early = report_ready_later(idle, state, decide(idle, state), now=ready_at)
    assert early == Wait(requeue_after=READY_REPORT_DELAY)
    late = ready_at + timedelta(seconds=READY_REPORT_DELAY)
    assert report_ready_later(idle, state, decide(idle, state), now=late) == SyncStatus(
        phase=ERPhase.PENDING, ready=True, reason="", message=""
    )
    # A reason or message to clear is written at once, ready along with it.
    stale = er("Pending")
    stale.raw["status"]["reason"] = "RunnerPodFailed"
    assert report_ready_later(stale, state, decide(stale, state), now=ready_at) == SyncStatus(
        phase=ERPhase.PENDING, ready=True, reason="", message=""
    )
    # A runner with a job is reported at once: Running carries ready along.
    busy = er("Pending", job="job-1")
    assert isinstance(
        report_ready_later(busy, state, decide(busy, state), now=ready_at), SyncStatus
    )
