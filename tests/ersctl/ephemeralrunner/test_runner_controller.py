"""The EphemeralRunner reconciler against the embedded API server and the GitHub
simulator: registration, the JIT Secret and Pod, phases driven by the Pod status the
test writes, failure backoff and the Failed limit, Outdated, RunnerExists, and the
registration finalizer."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ersctl.api import ER_FINALIZER, ER_REGISTRATION_FINALIZER, EphemeralRunner
from ersctl.arcclient.cache import CachedReader
from ersctl.ephemeralrunner.controller import CachedPods, CachedRunners, runner_pod_informer
from ersctl.ephemeralrunner.phases import READY_REPORT_DELAY
from ersctl.ephemeralrunner.registration import RetryLater
from ersctl.ephemeralrunner.stores import KubeRunnerResources
from ersctl.kube.errors import NotLeaderError
from ersctl.kube.reconcile import Request, Result
from ersctl.kube.store import OWNER_UID_INDEX, Store, controller_owner_uid
from ersctl.testing.podsim import exited_status, running_status
from ghalistener.publisher import KubePublisher
from tests.ersctl.ephemeralrunner.conftest import HEALTH, NO_SCHEDULER, TOKEN, Harness
from tests.ersctl.kube.conftest import reconcile_in_the_worker_loop
from tests.ghalistener.fakes import started
from tests.kubeapi import KubeApi
from tests.kubeclient import SentRequests, json_object
from tests.polling import eventually

RUNNER = "arc-runner-abcde"


def terminated(code: int) -> dict[str, Any]:
    return exited_status(code)


def stamp(when: datetime) -> str:
    """``when`` as a kubelet stamps a Pod's times."""
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def online_a_while_ago() -> str:
    """A Pod time far enough back that an idle runner's readiness is reported at once."""
    return stamp(datetime.now(UTC) - timedelta(seconds=READY_REPORT_DELAY))


RUNNING = running_status(started_at=online_a_while_ago())


def owner_of(doc: dict[str, Any]) -> tuple[str, str, bool]:
    (ref,) = doc["metadata"]["ownerReferences"]
    return ref["kind"], ref["uid"], ref["controller"]


def test_a_new_runner_is_registered_and_gets_a_jit_secret_and_a_pod_it_owns(h: Harness) -> None:
    created = h.create_runner()
    h.settle()

    registered = h.sim_runners()
    assert list(registered) == [RUNNER]  # runner name = ER name
    runner = h.runner()
    assert runner is not None
    assert set(runner.finalizers) == {ER_FINALIZER, ER_REGISTRATION_FINALIZER}
    assert (runner.runner_id, runner.runner_name) == (registered[RUNNER], RUNNER)

    secret = h.secret()
    assert secret is not None
    assert owner_of(secret) == ("EphemeralRunner", created.uid, True)
    jit = base64.b64decode(secret["data"]["jitToken"]).decode()
    assert h.sim.connect_runner(jit)["id"] == registered[RUNNER]  # a working JIT config

    pod = h.pod()
    assert pod is not None
    assert owner_of(pod) == ("EphemeralRunner", created.uid, True)
    assert pod["metadata"]["labels"]["app.kubernetes.io/component"] == "runner"
    assert pod["metadata"]["annotations"]["actions.github.com/patch-id"] == "3"
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["ACTIONS_RUNNER_INPUT_JITCONFIG"]["valueFrom"] == {
        "secretKeyRef": {"name": RUNNER, "key": "jitToken"}
    }
    assert env["ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"]["value"] == "1"
    assert jit not in str(pod)  # by reference only


def status_patches(h: Harness) -> list[dict[str, Any]]:
    """The runner status patches the reconciler sent, in order."""
    return [
        json_object(r.body)["status"]
        for r in h.sent.records()
        if (r.verb, r.resource, r.subresource) == ("patch", "ephemeralrunners", "status")
    ]


def phase_and_ready(h: Harness) -> tuple[str, bool]:
    runner = h.runner()
    assert runner is not None
    return runner.phase, runner.ready


def test_an_idle_runner_is_pending_and_ready_until_the_listener_records_its_job(
    h: Harness,
) -> None:
    h.create_runner()
    h.settle()
    h.set_pod_status({"phase": "Pending"})
    h.settle()
    assert phase_and_ready(h) == ("Pending", False)  # being provisioned

    h.set_pod_status(running_status(started_at=stamp(h.clock.datetime())))  # online, no job
    # Ready is news only to people: written once the runner stayed idle a while (a
    # runner made for a queued job gets it first, and its Running write says ready).
    assert h.settle().requeue_after == READY_REPORT_DELAY
    assert phase_and_ready(h) == ("Pending", False)
    h.clock.advance(READY_REPORT_DELAY)
    h.settle()
    assert phase_and_ready(h) == ("Pending", True)

    h.record_job_started("job-1")  # the listener, on JobStarted
    h.settle()
    runner = h.runner()
    assert runner is not None
    assert (runner.phase, runner.ready, runner.job_id) == ("Running", True, "job-1")

    h.set_pod_status(terminated(0))
    h.settle()
    runner = h.runner()
    assert runner is not None and (runner.phase, runner.ready) == ("Succeeded", False)
    assert runner.job_id == "job-1"  # the phase writes never touch the listener's fields
    # a finished runner's Pod and JIT config go at once; the set deletes the ER itself
    assert h.pod() is None and h.secret() is None
    assert h.metric("ersctl_runners_finished_total", phase="Succeeded") == 1


def test_a_runner_that_gets_its_job_soon_after_coming_online_costs_one_status_write(
    h: Harness,
) -> None:
    h.create_runner()
    h.settle()
    h.sent.clear()
    h.set_pod_status(running_status(started_at=stamp(h.clock.datetime())))
    h.settle()
    h.clock.advance(READY_REPORT_DELAY / 2)

    h.record_job_started("job-1")
    h.settle()

    # Running and ready in one write: the runner's readiness rode along with its job.
    assert [(s["phase"], s["ready"]) for s in status_patches(h)] == [("Running", True)]


def test_a_job_our_listener_records_costs_the_controller_no_status_write(h: Harness) -> None:
    h.create_runner()
    h.settle()
    h.set_pod_status(RUNNING)
    h.settle()
    h.sent.clear()

    with h.kube.api_client() as api_client:
        publisher = KubePublisher(api_client=api_client, namespace=h.namespace, name="set")
        assert publisher.record_job_started(started(1, RUNNER))
    h.settle()

    runner = h.runner()
    assert runner is not None and (runner.phase, runner.ready) == ("Running", True)
    assert status_patches(h) == []


def test_deleting_an_idle_runner_removes_both_finalizers_in_one_patch(h: Harness) -> None:
    h.create_runner()
    h.settle()
    h.sent.clear()

    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    h.settle()

    assert h.runner() is None
    finalizer_patches = [
        json_object(r.body)["metadata"]["finalizers"]
        for r in h.sent.records()
        if (r.verb, r.resource, r.subresource) == ("patch", "ephemeralrunners", None)
    ]
    assert finalizer_patches == [[]]


def test_a_runner_let_go_is_not_patched_again_while_the_cache_still_shows_it(
    h: Harness,
) -> None:
    h.create_runner()
    h.settle()
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    # The informer cache has seen the deletion start, and not yet the runner go.
    runners = Store(indexers={OWNER_UID_INDEX: controller_owner_uid})
    runners.upsert(h.kube.get_object("ephemeralrunners", h.namespace, RUNNER) or {})
    api_client = h.kube.api_client()
    h.sent.attach(api_client)
    writer = KubeRunnerResources(api_client)
    cached = CachedRunners(CachedReader(sets=Store(), runners=runners), writer)
    h.reconciler = h.build(HEALTH, runners=cached)
    h.sent.clear()

    h.reconcile()  # lets it go
    h.reconcile()  # queued meanwhile (by its Pod's deletion): nothing left to do

    assert h.runner() is None
    patches = [r for r in h.sent.records() if r.targets("ephemeralrunners", RUNNER)]
    assert [(r.verb, r.status) for r in patches] == [("patch", 200)]


def test_a_finished_runners_pod_is_deleted_once_while_the_cache_still_shows_it(
    h: Harness,
) -> None:
    h.create_runner()
    h.settle()
    h.record_job_started("job-1")
    h.set_pod_status(terminated(0))
    # The Pod cache has seen the Pod end, and not yet its deletion.
    pods = runner_pod_informer(h.kube.api_client(), namespace=h.namespace)
    pods.store.upsert(h.pod() or {})
    h.reconciler = h.build(HEALTH, pods=CachedPods(pods, h.resources))
    h.sent.clear()

    h.reconcile()  # Succeeded: its Pod and JIT Secret go at once
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)  # the set collects it
    h.reconcile()  # lets it go

    assert h.runner() is None and h.pod() is None
    pod_deletes = [r for r in h.sent.records() if (r.verb, r.resource) == ("delete", "pods")]
    assert [r.status for r in pod_deletes] == [200]


def test_a_failed_pod_is_recreated_after_a_backoff_and_counted(h: Harness) -> None:
    h.create_runner()
    h.settle()
    first = h.pod()
    assert first is not None
    h.set_pod_status(terminated(1))

    result = h.reconcile()
    assert result.requeue_after == 5.0
    runner = h.runner()
    assert runner is not None and list(runner.failures) == [first["metadata"]["uid"]]
    assert h.pod() is None
    assert h.events("RunnerPodFailed")

    assert h.settle().requeue_after == 5.0  # inside the backoff: no new Pod
    assert h.pod() is None
    h.clock.advance(5.0)
    h.settle()
    second = h.pod()
    assert second is not None and second["metadata"]["uid"] != first["metadata"]["uid"]
    assert h.metric("ersctl_runner_pods_created_total") == 2
    assert h.metric("ersctl_runner_pod_failures_total") == 1
    assert h.metric("ersctl_runner_registrations_total") == 1  # one registration, two Pods


def test_the_runner_turns_failed_at_the_configured_failure_limit(h: Harness) -> None:
    h.create_runner()  # the harness configures max_failures=3
    h.settle()
    for attempt in range(3):
        h.set_pod_status(terminated(2))
        h.settle()
        h.clock.advance(60.0)
        h.settle()
        runner = h.runner()
        assert runner is not None and len(runner.failures) == attempt + 1
    runner = h.runner()
    assert runner is not None
    assert (runner.phase, runner.status.get("reason")) == ("Failed", "TooManyPodFailures")
    # The last Pod's reason stays readable: the set quotes it when it collects the runner.
    assert runner.status.get("message") == (
        "the runner pod failed 3 times; last: RunnerFailed: the runner container exited with code 2"
    )
    assert h.pod() is None and h.secret() is None
    assert h.events("TooManyPodFailures")
    # A registration that can never run a job is removed (in the background).
    eventually(lambda: h.sim_runners() == {}, what="its registration removed")
    h.clock.advance(3600.0)
    h.settle()
    assert h.pod() is None  # Failed is final


def a_runner_one_pod_failure_from_the_limit(h: Harness) -> None:
    """A runner whose first two Pods failed (the harness allows three), its third Pod
    made after the backoff."""
    h.create_runner()
    h.settle()
    for _ in range(2):
        h.set_pod_status(terminated(2))
        h.settle()
        h.clock.advance(60.0)
        h.settle()


def test_the_failure_that_reaches_the_limit_and_the_failed_phase_are_one_status_write(
    h: Harness,
) -> None:
    a_runner_one_pod_failure_from_the_limit(h)
    last = h.pod()
    assert last is not None
    h.sent.clear()

    h.set_pod_status(terminated(2))
    h.settle()

    (written,) = status_patches(h)
    assert list(written["failures"]) == [last["metadata"]["uid"]]
    assert (written["phase"], written["reason"]) == ("Failed", "TooManyPodFailures")
    runner = h.runner()
    assert runner is not None and len(runner.failures) == 3 and runner.phase == "Failed"
    assert h.metric("ersctl_runners_finished_total", phase="Failed") == 1


def test_the_pod_whose_failure_reaches_the_limit_is_deleted_once_while_the_cache_shows_it(
    h: Harness,
) -> None:
    a_runner_one_pod_failure_from_the_limit(h)
    h.set_pod_status(terminated(2))
    # The Pod cache has seen the third Pod fail, and not yet its deletion.
    pods = runner_pod_informer(h.kube.api_client(), namespace=h.namespace)
    pods.store.upsert(h.pod() or {})
    h.reconciler = h.build(HEALTH, pods=CachedPods(pods, h.resources))
    h.sent.clear()

    h.settle()  # the failure, the Failed phase, and the resources' deletion

    runner = h.runner()
    assert runner is not None and runner.phase == "Failed" and h.pod() is None
    pod_deletes = [r for r in h.sent.records() if (r.verb, r.resource) == ("delete", "pods")]
    assert [r.status for r in pod_deletes] == [200]


def test_the_deprecated_version_exit_code_makes_the_runner_outdated(h: Harness) -> None:
    h.create_runner()
    h.settle()
    h.set_pod_status(terminated(7))
    h.settle()
    runner = h.runner()
    assert runner is not None
    assert (runner.phase, runner.status.get("reason")) == ("Outdated", "RunnerVersionDeprecated")
    assert runner.failures == {}  # not a failure to retry: no new Pod
    assert h.pod() is None
    assert h.events("RunnerVersionDeprecated")


def test_a_runner_exists_answer_replaces_the_stale_registration_of_that_name(h: Harness) -> None:
    # A registration of this name whose JIT config was lost (a crash after generating it).
    stale = h.sim.generate_jit_config(h.scale_set_id, RUNNER)["runner"]["id"]
    h.create_runner()
    h.settle()
    registered = h.sim_runners()
    assert list(registered) == [RUNNER]
    assert registered[RUNNER] != stale
    runner = h.runner()
    assert runner is not None and runner.runner_id == registered[RUNNER]
    assert h.pod() is not None
    assert h.events("RegistrationReplaced")


def test_a_runner_name_registered_to_another_scale_set_is_never_taken_over(h: Harness) -> None:
    other = h.sim.create_scale_set(name="someone-else")["id"]
    h.sim.generate_jit_config(other, RUNNER)
    h.create_runner()
    with pytest.raises(RetryLater):
        h.reconcile()
    assert h.sim_runners() == {RUNNER: h.sim_runners()[RUNNER]}  # still theirs
    assert h.events("RunnerNameTaken")
    runner = h.runner()
    assert runner is not None and runner.is_deleting  # the set will make another


def test_deleting_a_runner_removes_its_registration_then_lets_it_go(h: Harness) -> None:
    h.create_runner()
    h.settle()
    assert RUNNER in h.sim_runners()
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    h.settle()
    assert RUNNER not in h.sim_runners()
    assert h.runner() is None


def test_a_registration_already_gone_counts_as_removed(h: Harness) -> None:
    h.create_runner()
    h.settle()
    h.sim.remove_runner(h.sim_runners()[RUNNER])  # RunnerNotFound from now on
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    h.settle()
    assert h.runner() is None


def test_a_busy_runner_is_not_forced_off_and_its_removal_is_retried(h: Harness) -> None:
    h.create_runner()
    h.settle()
    runner_id = h.sim_runners()[RUNNER]
    start_a_job(h, runner_id)
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)

    result = h.settle()
    assert result.requeue_after == 30.0
    runner = h.runner()
    assert runner is not None and runner.has_finalizer(ER_REGISTRATION_FINALIZER)
    assert RUNNER in h.sim_runners()

    h.sim.complete_job(runner_id=runner_id)
    h.settle()
    assert h.runner() is None


class LaggingCache:
    """The runner store as the runtime's cache can show it after our own last finalizer
    removal let the runner go: still there, deleting, one finalizer on."""

    def __init__(self, store: KubeRunnerResources, shown: EphemeralRunner) -> None:
        self._store, self._shown = store, shown

    def get_runner(self, namespace: str, name: str) -> EphemeralRunner | None:
        return self._shown

    def patch_runner(self, runner: EphemeralRunner, patch: dict[str, Any]) -> EphemeralRunner:
        return self._store.patch_runner(runner, patch)

    def patch_runner_status(
        self, runner: EphemeralRunner, patch: dict[str, Any]
    ) -> EphemeralRunner:
        return self._store.patch_runner_status(runner, patch)

    def delete_runner(self, runner: EphemeralRunner) -> None:
        self._store.delete_runner(runner)


def test_a_runner_gone_meanwhile_ends_its_reconcile_quietly(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    # A finished runner used to leave "WARNING ... NotFoundError: patch ephemeralrunners/..."
    # behind: the reconcile after the one that removed its last finalizer, from a cache
    # that did not show it gone yet, removed that finalizer again from a deleted object.
    h.create_runner()
    h.settle()
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    deleting = h.runner()
    assert deleting is not None and deleting.has_finalizer(ER_FINALIZER)
    h.settle()
    assert h.runner() is None
    lagging = h.build(HEALTH, runners=LaggingCache(h.resources, deleting))
    with caplog.at_level(logging.DEBUG):
        assert (
            reconcile_in_the_worker_loop(lagging, Request(h.namespace, RUNNER)) == 0
        )  # no failure: nothing to retry
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_failed_reconcile_is_one_warning_line(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h.create_runner(githubConfigSecret="no-such-secret")
    with caplog.at_level(logging.INFO):
        assert reconcile_in_the_worker_loop(h.reconciler, Request(h.namespace, RUNNER)) == 1
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.getMessage().startswith("reconcile failed, retrying in ")
    assert "githubConfigSecret" in warning.getMessage()
    assert h.events("InvalidRunner")  # the Event is recorded all the same


def test_missing_credentials_are_a_warning_event_naming_the_field_and_change_nothing(
    h: Harness,
) -> None:
    h.create_runner(githubConfigSecret="no-such-secret")
    with pytest.raises(ValueError, match="githubConfigSecret"):
        h.reconcile()
    (event,) = h.events("InvalidRunner")
    assert "githubConfigSecret" in event["message"]
    assert h.secret() is None and h.pod() is None
    assert h.sim_runners() == {}
    # and it can still be deleted: it never registered, so there is nothing to remove
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    h.settle()
    assert h.runner() is None


def test_a_registered_runner_whose_credentials_vanished_is_held_and_says_why(
    h: Harness,
) -> None:
    h.create_runner()
    h.settle()
    h.kube.delete_object("secrets", h.namespace, "github-credentials")
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    with pytest.raises(ValueError, match="githubConfigSecret"):
        h.reconcile()
    runner = h.runner()
    assert runner is not None and runner.has_finalizer(ER_REGISTRATION_FINALIZER)
    assert RUNNER in h.sim_runners()  # never dropped silently: the registration stays known
    assert h.events("InvalidRunner")


def test_no_secret_is_ever_logged_or_recorded(h: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    h.create_runner()
    h.settle()
    secret = h.secret()
    assert secret is not None
    jit = base64.b64decode(secret["data"]["jitToken"]).decode()
    h.set_pod_status(terminated(1))
    h.settle()
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    h.settle()

    recorded = caplog.text + str(h.kube.list_objects("events", h.namespace))
    recorded += str(h.kube.list_objects("ephemeralrunners", h.namespace))
    for value in (jit, secret["data"]["jitToken"], TOKEN):
        assert value not in recorded
    assert "arc-runner-abcde" in caplog.text  # the logs did say what happened


def start_a_job(h: Harness, runner_id: int) -> None:
    request = h.sim.enqueue_job(h.scale_set_id)
    session = h.sim.create_session(h.scale_set_id, "listener")
    h.sim.acquire_jobs(h.scale_set_id, session.queue_token, [request])
    h.sim.start_job(runner_id, request)


def test_a_pod_that_fails_during_a_job_is_not_replaced_and_its_runner_is_deleted(
    h: Harness,
) -> None:
    h.create_runner()
    h.settle()
    runner_id = h.sim_runners()[RUNNER]
    start_a_job(h, runner_id)
    # what the listener writes on JobStarted
    job = {"jobId": "job-1", "jobRequestId": 1, "jobRepositoryName": "my-org/my-repo"}
    h.kube.patch_object(
        "ephemeralrunners", h.namespace, RUNNER, {"status": job}, subresource="status"
    )
    h.set_pod_status(terminated(137))

    h.settle()
    # Its job died with its Pod: the runner goes at once (no new Pod, no failure
    # counted), and its registration, which the service holds until it fails the job,
    # is removed in the background (ersctl.ephemeralrunner.deregistration).
    assert h.runner() is None
    assert h.events("RunnerFailedWithJob")
    assert RUNNER in h.sim_runners()


def test_an_idle_runner_in_steady_state_reads_itself_and_its_pod_and_writes_nothing(
    h: Harness,
) -> None:
    h.create_runner()
    h.settle()
    h.set_pod_status(RUNNING)
    h.settle()
    h.sent.clear()

    h.reconcile()

    assert [(r.verb, r.resource) for r in h.sent.records()] == [
        ("get", "ephemeralrunners"),
        ("get", "pods"),
    ]


def test_runner_pod_and_secret_writes_are_refused_without_the_lease(
    kube: KubeApi, kube_client: Any
) -> None:
    sent = SentRequests(kube_client)
    resources = KubeRunnerResources(kube_client, fence=lambda: False)
    meta = {"name": RUNNER, "namespace": kube.namespace}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {}}
    writes: list[Callable[[], object]] = [
        lambda: resources.create_pod(pod),
        lambda: resources.delete_pod(kube.namespace, RUNNER),
        lambda: resources.create_secret(secret),
        lambda: resources.delete_secret(kube.namespace, RUNNER),
    ]
    for write in writes:
        with pytest.raises(NotLeaderError, match="no longer holds the lease"):
            write()
    assert sent.records() == [], "refused before reaching the server"


def hook_resource(
    h: Harness, kind: str, name: str, runner: str, *, finalizers: list[str] | None = None
) -> None:
    """A job Pod or Secret as Kubernetes container mode's hooks create it for ``runner``."""
    metadata: dict[str, Any] = {"name": name, "namespace": h.namespace}
    metadata["labels"] = {"runner-pod": runner}
    if finalizers:
        metadata["finalizers"] = finalizers
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod" if kind == "pods" else "Secret",
        "metadata": metadata,
    }
    if kind == "pods":
        body["spec"] = {
            "schedulerName": NO_SCHEDULER,
            "containers": [{"name": "job", "image": "node:20"}],
        }
    h.kube.create_object(kind, body)


CONTAINER_MODE: dict[str, Any] = {
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "runner",
                "image": "ghcr.io/actions/actions-runner",
                "env": [
                    {
                        "name": "ACTIONS_RUNNER_CONTAINER_HOOKS",
                        "value": "/home/runner/k8s/index.js",
                    }
                ],
            }
        ],
    }
}


def test_in_container_mode_a_deleted_runner_takes_its_hook_pods_and_secrets_with_it(
    h: Harness,
) -> None:
    h.create_runner(**CONTAINER_MODE)
    h.settle()
    hook_resource(h, "pods", "job-pod", RUNNER)
    # One still terminating (a finalizer of someone else's): the runner waits for it.
    hook_resource(h, "pods", "job-pod-slow", RUNNER, finalizers=["example.com/slow"])
    hook_resource(h, "secrets", "job-secret", RUNNER)
    hook_resource(h, "pods", "other-job-pod", "another-runner")
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)

    assert h.settle() == Result(requeue_after=5.0)
    assert h.runner() is not None, "kept while a hook Pod is still terminating"
    assert h.kube.get_object("pods", h.namespace, "job-pod") is None
    assert h.kube.get_object("secrets", h.namespace, "job-secret") is None
    h.kube.patch_object("pods", h.namespace, "job-pod-slow", {"metadata": {"finalizers": []}})
    h.settle()

    assert h.runner() is None
    assert h.kube.get_object("pods", h.namespace, "other-job-pod") is not None, "not its"


def test_without_container_hooks_labelled_pods_are_not_the_runners_to_delete(h: Harness) -> None:
    h.create_runner()
    h.settle()
    hook_resource(h, "pods", "job-pod", RUNNER)
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    h.settle()
    assert h.runner() is None
    assert h.kube.get_object("pods", h.namespace, "job-pod") is not None
