"""A deleted runner's registration (``ersctl.ephemeralrunner.deregistration``, ARC 0.15's #4664
where no job can be lost by it): gone already, nothing is asked; a runner whose Pod
cannot be running a job goes at once and its registration is removed in the
background, whatever GitHub does meanwhile; a runner whose Pod may be running a job
keeps waiting for GitHub (tests/ersctl/ephemeralrunner/test_runner_health.py)."""

from __future__ import annotations

import logging

import pytest

from ersctl.kube.errors import ConflictError
from ersctl.testing.podsim import exited_status
from ghalistener.testing.state import Fault
from tests.ersctl.ephemeralrunner.conftest import CREDENTIALS, HEALTH, Harness
from tests.ersctl.ephemeralrunner.test_runner_controller import RUNNER, start_a_job
from tests.ersctl.ephemeralrunner.test_runner_health import (
    RUNNING,
    a_runner_with_its_pod,
    faults,
    message,
)
from tests.polling import eventually

OTHER = "arc-runner-fghij"
PROBE_CALLS = 1000


def removal_calls(h: Harness, latency: float = 0.0) -> Fault:
    """Counts the service's remove-runner requests from now on (a fault that changes
    nothing but, with ``latency``, their time: ``PROBE_CALLS - probe.times`` were made)."""
    return h.sim.faults.inject(endpoint="remove_runner", times=PROBE_CALLS, latency=latency)


def podless_runner(h: Harness, name: str) -> int:
    """A registered runner whose Pod is gone; its runner id."""
    h.create_runner(name)
    h.settle(name)
    h.kube.delete_object("pods", h.namespace, name)
    return h.sim_runners()[name]


def deleted(h: Harness, name: str = RUNNER) -> None:
    h.kube.delete_object("ephemeralrunners", h.namespace, name)
    h.settle(name)


def test_a_runner_that_ran_its_job_is_let_go_without_asking_github(h: Harness) -> None:
    a_runner_with_its_pod(h, RUNNING)
    runner_id = h.sim_runners()[RUNNER]
    start_a_job(h, runner_id)
    h.record_job_started("job-1")
    h.sim.complete_job(runner_id=runner_id)  # an ephemeral runner deregisters after its job
    h.set_pod_status(exited_status(0))
    h.settle()
    probe = removal_calls(h)

    deleted(h)
    assert h.runner() is None
    # A runner whose removal goes to the background, after: once GitHub has seen its
    # removal, it was the only one asked for.
    other = podless_runner(h, OTHER)
    deleted(h, OTHER)
    eventually(lambda: other not in h.sim_runners().values(), what="the other removed")
    assert PROBE_CALLS - probe.times == 1


def test_a_runner_without_a_live_pod_goes_at_once_while_github_fails_to_remove_it(
    h: Harness,
) -> None:
    runner_id = podless_runner(h, RUNNER)
    h.sim.inject_fault(endpoint="remove_runner", status=503, times=2)

    deleted(h)  # raises if the reconcile waits on GitHub

    assert h.runner() is None and h.secret() is None
    assert runner_id in h.sim_runners().values()  # not removed yet: GitHub failed
    eventually(
        lambda: runner_id not in h.sim_runners().values(),
        timeout=10,
        what="its registration removed in the background (backoff 1 s, 2 s)",
    )
    assert not h.events("RegistrationAbandoned")


def test_a_registration_github_keeps_failing_to_remove_is_abandoned_after_the_timeout(
    h: Harness,
) -> None:
    runner_id = podless_runner(h, RUNNER)
    h.sim.inject_fault(endpoint="remove_runner", status=500, times=-1)
    deleted(h)
    assert h.runner() is None

    h.clock.advance(HEALTH.deregistration_timeout + 1)

    eventually(lambda: h.events("RegistrationAbandoned"), timeout=10, what="given up")
    assert f"remove runner {runner_id} at GitHub" in message(h, "RegistrationAbandoned")
    assert faults(h, "deregistration_timeout") == 1


@pytest.mark.parametrize("pod_state", ["terminated", "deleting"])
def test_a_runner_whose_pod_ended_or_is_going_does_not_wait_for_its_busy_registration(
    h: Harness, pod_state: str
) -> None:
    a_runner_with_its_pod(h, RUNNING)
    runner_id = h.sim_runners()[RUNNER]
    start_a_job(h, runner_id)
    if pod_state == "terminated":
        h.set_pod_status(exited_status(143))
    else:
        h.kube.patch_object(
            "pods", h.namespace, RUNNER, {"metadata": {"finalizers": ["tests.example/held"]}}
        )
        h.kube.delete_object("pods", h.namespace, RUNNER)

    deleted(h)

    assert h.runner() is None  # JobStillRunning is the background's to retry
    assert runner_id in h.sim_runners().values()
    if pod_state == "deleting":
        h.kube.patch_object("pods", h.namespace, RUNNER, {"metadata": {"finalizers": []}})


@pytest.mark.embedded_only("fails the finalizer patch at the server")
def test_a_registration_pushed_again_while_it_is_being_removed_is_asked_for_once(
    h: Harness,
) -> None:
    runner_id = podless_runner(h, RUNNER)
    probe = removal_calls(h, latency=0.5)  # still being removed when pushed again
    h.server.inject_fault(verb="patch", resource="ephemeralrunners", code=409)
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    with pytest.raises(ConflictError):
        h.reconcile()  # queued, then its finalizer patch refused: the reconcile again

    h.settle()

    assert h.runner() is None
    eventually(lambda: runner_id not in h.sim_runners().values(), what="it removed")
    # Anything queued after it comes after it: once another runner's removal is
    # through, a second request for the first would have been counted.
    other = podless_runner(h, OTHER)
    deleted(h, OTHER)
    eventually(lambda: other not in h.sim_runners().values(), what="the other removed")
    assert PROBE_CALLS - probe.times == 2


@pytest.mark.embedded_only("fails the credentials read at the server")
def test_a_registration_whose_credentials_cannot_be_read_for_a_while_is_removed_later(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    # An API server that does not answer the credentials read for a moment (a restart,
    # an overloaded control plane) used to end the removal as a bug: "removing runner
    # ... failed" with a traceback, and the registration was never removed.
    runner_id = podless_runner(h, RUNNER)
    h.server.inject_fault(verb="get", resource="secrets", name=CREDENTIALS, code=503, times=2)

    deleted(h)

    assert h.runner() is None
    eventually(
        lambda: runner_id not in h.sim_runners().values(),
        timeout=10,
        what="its registration removed once the credentials could be read (backoff 1 s, 2 s)",
    )
    assert not h.events("RegistrationAbandoned")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
