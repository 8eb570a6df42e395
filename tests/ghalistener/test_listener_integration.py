"""The real listener against a respx-mocked scale-set service and the test's Kubernetes
API.

Every scaling assertion reads what the EphemeralRunnerSet actually received: the
merge patches the listener's client sent and the server accepted, as (replicas, patchID)
pairs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from ersctl import api
from ersctl.api import RunnerID
from ersctl.kube.calls import JSON_PATCH, MERGE_PATCH
from ersctl.kube.errors import KubeError
from ersctl.testing.apiserver import ApiServer
from ghalistener.actions.client import ActionsClient
from ghalistener.errors import SessionHeldError
from ghalistener.listener import Listener
from ghalistener.metrics import ListenerMetrics, ScaleSetLabels
from ghalistener.ports import SessionRetry
from ghalistener.publisher import KubePublisher, KubeRetry, Resumed
from ghalistener.scaler import Scaler
from ghalistener.sessions import SessionOpener
from tests.ghalistener.github import PAT, SCALE_SET_ID, TIMEOUT, Message, ScaleSetService, job
from tests.kubeapi import KubeApi
from tests.kubeclient import Sent, SentRequests

NAMESPACE = "arc"  # a label of the metrics only
ERS_NAME = "runners"


def ers_manifest() -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {"name": ERS_NAME},
        "spec": {
            "replicas": 0,
            "patchID": 0,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": "https://github.com/octo",
                "githubConfigSecret": "creds",
                "runnerScaleSetId": SCALE_SET_ID,
                "spec": {"containers": [{"name": "runner", "image": "runner:latest"}]},
            },
        },
    }


def runner_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"name": name},
        "spec": {
            "githubConfigUrl": "https://github.com/octo",
            "githubConfigSecret": "creds",
            "runnerScaleSetId": SCALE_SET_ID,
            "spec": {"containers": [{"name": "runner", "image": "runner:latest"}]},
        },
    }


@dataclass
class Harness:
    service: ScaleSetService
    kube: KubeApi
    actions: ActionsClient
    api_client: client.ApiClient
    sent: SentRequests

    @property
    def apiserver(self) -> ApiServer:
        """The embedded server, for tests marked ``embedded_only`` (its hooks)."""
        assert self.kube.embedded is not None, "a test of the server's hooks: embedded_only"
        return self.kube.embedded

    def listener(
        self,
        *,
        min_runners: int = 0,
        max_runners: int = 10,
        session_retry: SessionRetry | None = None,
        kube_retry: KubeRetry | None = None,
        metrics: ListenerMetrics | None = None,
        resumed: Resumed | None = None,
        fresh_id_interval: float = 60.0,
    ) -> Listener:
        resumed = resumed or Resumed()
        listener = Listener(
            scale_set_id=SCALE_SET_ID,
            open_session=SessionOpener(
                client=self.actions, scale_set_id=SCALE_SET_ID, owner_name="test-host"
            ),
            scaler=Scaler(
                min_runners=min_runners,
                max_runners=max_runners,
                completed=resumed.completed_runners,
            ),
            publisher=self.publisher(kube_retry=kube_retry),
            metrics=metrics,
            session_retry=session_retry or SessionRetry(interval=0.0, attempts=3),
            last_message_id=resumed.last_message_id,
            fresh_id_interval=fresh_id_interval,
        )
        # When the script runs out, stop: the poll in flight is abandoned.
        self.service.on_exhausted = listener.request_stop
        return listener

    def publisher(
        self, *, kube_retry: KubeRetry | None = None, scale_set_id: int = SCALE_SET_ID
    ) -> KubePublisher:
        return KubePublisher(
            api_client=self.api_client,
            namespace=self.kube.namespace,
            name=ERS_NAME,
            scale_set_id=scale_set_id,
            retry=kube_retry or KubeRetry(sleep=lambda _: None),
        )

    def ers_patches(self) -> list[Sent]:
        """The patches of the set the server accepted."""
        return [
            r
            for r in self.sent.records()
            if r.method == "PATCH"
            and r.targets("ephemeralrunnersets", ERS_NAME)
            and r.status is not None
            and r.status < 300
        ]

    def published(self) -> list[tuple[int, int]]:
        pairs = []
        for record in self.ers_patches():
            if "spec" in record.body:  # not the empty start-up patch
                spec = record.body["spec"]
                pairs.append((spec["replicas"], spec["patchID"]))
        return pairs

    def ers_spec(self) -> dict[str, Any]:
        obj = self.kube.get_object("ephemeralrunnersets", self.kube.namespace, ERS_NAME)
        assert obj is not None
        return dict(obj["spec"])

    def runner(self, name: str) -> dict[str, Any] | None:
        return self.kube.get_object("ephemeralrunners", self.kube.namespace, name)


@pytest.fixture
def harness(
    service: ScaleSetService, kube: KubeApi, kube_client: client.ApiClient, actions: ActionsClient
) -> Harness:
    kube.create_object("ephemeralrunnersets", ers_manifest())
    return Harness(
        service=service,
        kube=kube,
        actions=actions,
        api_client=kube_client,
        sent=SentRequests(kube_client),
    )


def started(request_id: int, runner: str) -> dict[str, Any]:
    return job("JobStarted", request_id, runnerId=request_id, runnerName=runner)


def completed(request_id: int, runner: str) -> dict[str, Any]:
    return job(
        "JobCompleted",
        request_id,
        runnerId=request_id,
        runnerName=runner,
        result="succeeded",
        runnerAssignTime="2026-01-01T00:00:04Z",
    )


# --- the (replicas, patchID) sequence -------------------------------------------------


def test_idle_at_the_minimum_publishes_zero(harness: Harness) -> None:
    harness.service.steps = [TIMEOUT, TIMEOUT, Message(1, 0), TIMEOUT]
    harness.listener(min_runners=1).run()
    # Every empty long poll republishes; the message, which repeats it, does not.
    assert harness.published() == [(1, 0), (1, 0), (1, 0), (1, 0)]
    assert harness.ers_spec()["replicas"] == 1


def test_jobs_assigned_and_completed_publish_fresh_ids(harness: Harness) -> None:
    harness.service.steps = [
        Message(1, 2, (job("JobAvailable", 11), job("JobAvailable", 12))),
        TIMEOUT,
        Message(2, 2, (started(11, "r-11"), started(12, "r-12"))),
        Message(3, 1, (completed(11, "r-11"),)),
        TIMEOUT,
        Message(4, 0, (completed(12, "r-12"),)),
        TIMEOUT,
        TIMEOUT,
    ]
    harness.listener().run()
    assert harness.published() == [
        (0, 0),  # the session's statistics: the first ID after a start is 0
        (2, 1),  # two jobs assigned
        (2, 2),  # 202: recomputed, a new ID
        (2, 3),  # started: dirty
        (1, 4),  # one completed: a fresh ID, never 0
        (1, 5),  # 202
        (0, 6),  # the last completed: fresh even though back at the minimum
        (0, 0),  # idle at the minimum, nothing dirty
        (0, 0),
    ]
    assert harness.service.entries("acquire") == [("acquire", (11, 12))]


def test_a_message_that_tells_nothing_new_is_not_published_and_a_job_event_always_is(
    harness: Harness,
) -> None:
    # After the assignment is published, a message that only makes a job available
    # (its statistics still count 2) would send the same count with a fresh ID: nothing
    # the controller acts on. A start with the same count is news (dirty), and so is
    # the empty long poll's fresh ID, the controller's way out of a suppression.
    harness.service.steps = [
        Message(1, 2, (job("JobAvailable", 11), job("JobAvailable", 12))),
        Message(2, 2, (job("JobAvailable", 13),)),
        Message(3, 2, (started(11, "r-11"),)),
        TIMEOUT,
    ]
    harness.listener().run()
    assert harness.published() == [(0, 0), (2, 1), (2, 3), (2, 4)]
    assert harness.service.entries("acquire") == [("acquire", (11, 12)), ("acquire", (13,))]


def test_a_message_without_news_is_published_once_the_last_patch_is_older_than_the_interval(
    harness: Harness,
) -> None:
    # A queue at max_runners: every message makes jobs available and none changes the
    # count, and no long poll ends empty. A set short of a runner (one failed) is
    # refilled only under a fresh ID, so one comes once the last patch is that old.
    harness.service.steps = [Message(n, 2, (job("JobAvailable", 10 + n),)) for n in (1, 2, 3)]
    harness.listener(max_runners=2, fresh_id_interval=0.0).run()
    assert harness.published() == [(0, 0), (2, 1), (2, 2), (2, 3)]


def test_a_job_completed_at_the_minimum_still_publishes_a_fresh_id(harness: Harness) -> None:
    # A job assigned and taken back (canceled) never moves the target off the minimum;
    # the completion must still reach the controller as a new, non-zero ID.
    canceled = job("JobCompleted", 21, result="canceled")
    harness.service.steps = [TIMEOUT, Message(1, 0, (job("JobAssigned", 21), canceled)), TIMEOUT]
    harness.listener().run()
    assert harness.published() == [(0, 0), (0, 0), (0, 2), (0, 0)]


def test_every_timeout_recomputes_the_desired_count(harness: Harness) -> None:
    harness.service.assigned_at_open = 3
    harness.service.steps = [TIMEOUT, TIMEOUT, TIMEOUT]
    harness.listener(max_runners=5).run()
    assert harness.published() == [(3, 0), (3, 1), (3, 2), (3, 3)]


def test_the_target_is_capped_by_max_runners_and_sent_as_capacity(harness: Harness) -> None:
    harness.service.steps = [Message(1, 9)]
    harness.listener(min_runners=1, max_runners=4).run()
    assert harness.published() == [(1, 0), (4, 1)]


def test_a_restart_numbers_from_zero_again(harness: Harness) -> None:
    harness.service.steps = [Message(1, 2), TIMEOUT]
    harness.listener().run()
    harness.service.assigned_at_open = 2
    harness.service.steps = [TIMEOUT]
    harness.listener().run()
    assert harness.published() == [(0, 0), (2, 1), (2, 2), (2, 0), (2, 1)]
    assert harness.service.entries("session-deleted") == [
        ("session-deleted", "s1"),
        ("session-deleted", "s2"),
    ]


def test_each_patch_is_a_merge_patch_of_replicas_patch_id_and_what_they_account_for(
    harness: Harness,
) -> None:
    harness.service.steps = [Message(1, 1)]
    harness.listener().run()
    assert harness.ers_patches()
    for record in harness.ers_patches():
        assert record.content_type.startswith(MERGE_PATCH)
        assert set(record.body) == {"spec", "metadata"}
        assert set(record.body["spec"]) == {"replicas", "patchID"}
        assert set(record.body["metadata"]) == {"annotations"}
        assert set(record.body["metadata"]["annotations"]) == {
            api.COMPLETED_RUNNERS_ANNOTATION,
            api.LAST_MESSAGE_ANNOTATION,
        }
        assert record.path.endswith(
            f"/namespaces/{harness.kube.namespace}/ephemeralrunnersets/{ERS_NAME}"
        )


# --- runners, acks, acquisitions ------------------------------------------------------


def test_job_started_writes_the_job_fields_and_an_unknown_runner_is_skipped(
    harness: Harness,
) -> None:
    for name, phase in (("r-11", "Pending"), ("r-13", "Succeeded")):
        harness.kube.create_object("ephemeralrunners", runner_manifest(name))
        harness.kube.patch_object(
            "ephemeralrunners", harness.kube.namespace, name, {"status": {"phase": phase}},
            subresource="status",
        )  # fmt: skip
    jobs = (started(11, "r-11"), started(12, "r-gone"), started(13, "r-13"))
    harness.service.steps = [Message(1, 3, jobs)]
    harness.listener().run()
    runner = harness.runner("r-11")
    assert runner is not None
    assert {
        k: runner["status"][k] for k in runner["status"] if k.startswith(("job", "workflow"))
    } == {
        "jobRequestId": 11,
        "jobId": "job-11",
        "jobRepositoryName": "octo/app",
        "jobWorkflowRef": "octo/app/.github/workflows/ci.yml@refs/heads/main",
        "workflowRunId": 1011,
        "jobDisplayName": "build 11",
    }
    # A Pending runner is Running and ready in the same write (the controller's would
    # be a second one); a finished one keeps its phase and gets the job fields alone.
    assert (runner["status"]["phase"], runner["status"]["ready"]) == ("Running", True)
    finished = harness.runner("r-13")
    assert finished is not None and finished["status"]["phase"] == "Succeeded"
    assert finished["status"]["jobId"] == "job-13"
    status_patches = [
        (r.name, r.content_type.split(";")[0], r.status)
        for r in harness.sent.records()
        if r.method == "PATCH" and r.targets("ephemeralrunners", subresource="status")
    ]
    assert status_patches == [
        ("r-11", JSON_PATCH, 200),
        ("r-gone", JSON_PATCH, 404),
        ("r-13", JSON_PATCH, 422),
        ("r-13", MERGE_PATCH, 200),
    ]
    assert harness.service.entries("ack") == [("ack", "s1", 1)], "the 404 did not stop the message"


def test_each_ack_comes_after_its_message_was_handled(harness: Harness) -> None:
    harness.kube.create_object("ephemeralrunners", runner_manifest("r-11"))
    seen_at_ack: dict[int, tuple[int, bool]] = {}

    def record_state(message_id: int) -> None:
        runner = harness.runner("r-11")
        has_job = bool(runner and runner.get("status", {}).get("jobId"))
        seen_at_ack[message_id] = (len(harness.published()), has_job)

    harness.service.on_ack = record_state
    harness.service.steps = [
        Message(1, 1, (job("JobAvailable", 11),)),
        Message(2, 1, (started(11, "r-11"),)),
        Message(3, 0, (completed(11, "r-11"),)),
    ]
    harness.listener().run()
    # When message k was acked, its own desired-count patch (the (k+1)-th) had landed.
    assert seen_at_ack == {1: (2, False), 2: (3, True), 3: (4, True)}
    acquire_at = harness.service.journal.index(("acquire", (11,)))
    assert acquire_at < harness.service.journal.index(("ack", "s1", 1))


@pytest.mark.embedded_only("fault injection")
def test_a_crash_mid_message_redelivers_it_and_reaches_the_same_end_state(
    harness: Harness,
) -> None:
    harness.kube.create_object("ephemeralrunners", runner_manifest("r-11"))
    harness.service.steps = [
        Message(1, 1, (job("JobAvailable", 11),)),
        Message(2, 1, (started(11, "r-11"),)),
        Message(3, 0, (completed(11, "r-11"),)),
    ]
    harness.apiserver.inject_fault(
        verb="patch", resource="ephemeralrunners", subresource="status", code=500, times=2
    )
    with pytest.raises(KubeError, match="500"):
        harness.listener(kube_retry=KubeRetry(attempts=2, sleep=lambda _: None)).run()
    assert harness.service.entries("ack") == [("ack", "s1", 1)], "message 2 was not acked"
    assert ("session-deleted", "s1") in harness.service.journal

    harness.listener().run()  # a new incarnation: message 2 comes back to session s2
    assert harness.service.entries("deliver")[1:3] == [("deliver", "s1", 2), ("deliver", "s2", 2)]
    assert harness.service.entries("ack") == [("ack", "s1", 1), ("ack", "s2", 2), ("ack", "s2", 3)]
    runner = harness.runner("r-11")
    assert runner is not None and runner["status"]["jobId"] == "job-11"
    assert harness.ers_spec()["replicas"] == 0
    # The new incarnation numbers from 0 again and handles 2 and 3 exactly as the first would.
    assert harness.published()[-3:] == [(0, 0), (1, 1), (0, 2)]


def test_a_bad_job_message_is_logged_and_skipped_and_the_message_still_acked(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    # A parse error used to be fatal: the message was never acked, so every new
    # listener got it again and died again. Now only the bad job message is lost.
    no_runner_name = job("JobStarted", 11, runnerId=11)
    harness.service.steps = [
        Message(1, 1, (no_runner_name, job("JobAvailable", 13), completed(12, "r-12"))),
        TIMEOUT,
    ]
    with caplog.at_level(logging.WARNING, logger="ghalistener"):
        harness.listener().run()
    assert harness.service.entries("ack") == [("ack", "s1", 1)]
    assert harness.service.entries("acquire") == [("acquire", (13,))]
    assert harness.published() == [(0, 0), (1, 1), (1, 2)]  # the completion made ID 1 dirty
    skipped = [r for r in caplog.records if "cannot be parsed" in r.getMessage()]
    assert len(skipped) == 1
    assert "'runnerName' is missing" in skipped[0].getMessage()
    assert skipped[0].fields == {"message_id": 1}  # type: ignore[attr-defined]
    assert PAT not in caplog.text


# --- sessions -------------------------------------------------------------------------


def test_an_expired_queue_token_is_refreshed_and_the_poll_retried(harness: Harness) -> None:
    harness.service.expire_next_poll = True
    harness.service.steps = [Message(1, 1)]
    harness.listener().run()
    assert harness.service.entries("refresh") == [("refresh", "s1")]
    assert harness.service.entries("ack") == [("ack", "s1", 1)]
    assert harness.published() == [(0, 0), (1, 1)]


def test_a_404_on_the_poll_opens_a_new_session_and_publishes_its_statistics(
    harness: Harness,
) -> None:
    harness.service.assigned_at_open = 1
    harness.service.drop_on_next = "poll"
    harness.service.steps = [TIMEOUT]
    harness.listener().run()
    assert harness.service.entries("session-created") == [
        ("session-created", "s1"),
        ("session-created", "s2"),
    ]
    assert harness.service.entries("poll-denied") == [("poll-denied", "s1", 404)]
    assert harness.published() == [(1, 0), (1, 1), (1, 2)]
    assert harness.service.entries("session-deleted") == [("session-deleted", "s2")]


def test_a_session_dropped_on_the_ack_redelivers_the_message_to_the_new_session(
    harness: Harness,
) -> None:
    harness.service.drop_on_next = "ack"
    harness.service.steps = [Message(1, 2, (job("JobAvailable", 11),))]
    harness.listener().run()
    assert harness.service.entries("deliver") == [("deliver", "s1", 1), ("deliver", "s2", 1)]
    assert harness.service.entries("ack") == [("ack", "s2", 1)]
    # s1: (0,0) then (2,1); s2 opens with its statistics (0 assigned), newer than the
    # redelivered message's (2 assigned): its jobs are handled, its count not published.
    assert harness.published() == [(0, 0), (2, 1), (0, 2), (0, 0)]


@pytest.mark.parametrize(
    "where", [pytest.param("ack", id="on the ack"), pytest.param("acquire", id="on acquire")]
)
def test_a_404_that_left_the_session_alive_deletes_it_before_opening_a_new_one(
    harness: Harness, where: str
) -> None:
    # Before, the old session was abandoned: the service, which allows one session per
    # scale set, answered every create with 409 until the listener gave up.
    harness.service.exclusive = True
    harness.service.spurious_404_on = where
    harness.service.steps = [Message(1, 1, (job("JobAvailable", 11),))]
    harness.listener().run()
    journal = harness.service.journal
    assert journal.index(("session-deleted", "s1")) < journal.index(("session-created", "s2"))
    assert harness.service.entries("session-conflict") == []
    assert harness.service.entries("ack") == [("ack", "s2", 1)]


def test_a_session_held_elsewhere_is_retried_until_free(harness: Harness) -> None:
    harness.service.conflicts = 2
    harness.service.steps = [TIMEOUT]
    harness.listener(session_retry=SessionRetry(interval=0.01, attempts=3)).run()
    assert len(harness.service.entries("session-conflict")) == 2
    assert harness.published() == [(0, 0), (0, 0)]


def test_a_session_held_through_every_attempt_gives_up(harness: Harness) -> None:
    harness.service.conflicts = 10
    listener = harness.listener(session_retry=SessionRetry(interval=0.01, attempts=4))
    with pytest.raises(SessionHeldError, match="another listener holds the message session"):
        listener.run()
    assert len(harness.service.entries("session-conflict")) == 4
    assert harness.published() == []


# --- Kubernetes failures --------------------------------------------------------------


@pytest.mark.embedded_only("fault injection")
def test_a_failed_ers_patch_is_retried(harness: Harness) -> None:
    harness.apiserver.inject_fault(verb="patch", resource="ephemeralrunnersets", code=503, times=2)
    waits: list[float] = []
    harness.service.steps = [Message(1, 1)]
    harness.listener(kube_retry=KubeRetry(attempts=3, sleep=waits.append)).run()
    assert harness.published() == [(0, 0), (1, 1)]
    assert len(waits) == 2 and waits[1] > waits[0], "exponential backoff between tries"


@pytest.mark.embedded_only("fault injection")
def test_a_persistent_ers_patch_failure_is_fatal(harness: Harness) -> None:
    harness.apiserver.inject_fault(verb="patch", resource="ephemeralrunnersets", code=500, times=50)
    match = f"ephemeralrunnersets/{harness.kube.namespace}/runners: HTTP 500"
    with pytest.raises(KubeError, match=match):
        harness.listener(kube_retry=KubeRetry(attempts=3, sleep=lambda _: None)).run()
    assert harness.service.entries("session-deleted") == [("session-deleted", "s1")]


def test_a_missing_ers_is_fatal_without_retries(harness: Harness) -> None:
    harness.kube.delete_object("ephemeralrunnersets", harness.kube.namespace, ERS_NAME)
    harness.sent.clear()
    with pytest.raises(KubeError, match="404"):
        harness.listener().run()
    assert len([r for r in harness.sent.records() if r.method == "PATCH"]) == 1


def test_metrics_follow_the_statistics_and_jobs(harness: Harness) -> None:
    metrics = ListenerMetrics(
        ScaleSetLabels(name=ERS_NAME, namespace=NAMESPACE, organization="octo")
    )
    harness.service.steps = [
        Message(1, 2, (started(11, "r-x"),)),
        Message(2, 1, (completed(11, "r-x"),)),
    ]
    harness.listener(metrics=metrics).run()
    values = {
        (sample.name, sample.labels.get("job_result", "")): sample.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
    }
    assert values[("gha_assigned_jobs", "")] == 1
    assert values[("gha_desired_runners", "")] == 1
    assert values[("gha_started_jobs_total", "")] == 1
    assert values[("gha_completed_jobs_total", "succeeded")] == 1


def test_a_message_redelivered_within_the_process_is_counted_once(harness: Harness) -> None:
    metrics = ListenerMetrics(
        ScaleSetLabels(name=ERS_NAME, namespace=NAMESPACE, organization="octo")
    )
    harness.service.drop_on_next = "ack"  # message 1 comes back to the next session
    harness.service.steps = [Message(1, 0, (started(11, "r-x"), completed(11, "r-x")))]
    harness.listener(metrics=metrics).run()
    assert harness.service.entries("deliver") == [("deliver", "s1", 1), ("deliver", "s2", 1)]
    values = {
        (sample.name, sample.labels.get("job_result", "")): sample.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
    }
    assert values[("gha_started_jobs_total", "")] == 1
    assert values[("gha_completed_jobs_total", "succeeded")] == 1


# --- what each count is made of, and a restart that reads it back -----------------------


def test_each_count_names_the_jobs_completed_before_it_and_its_newest_message(
    harness: Harness,
) -> None:
    harness.kube.create_object("ephemeralrunners", runner_manifest("r-11"))
    harness.service.steps = [
        Message(1, 1, (started(11, "r-11"),)),
        Message(2, 0, (completed(11, "r-11"),)),
    ]
    harness.listener().run()
    annotations = [record.body["metadata"]["annotations"] for record in harness.ers_patches()]
    assert [a[api.COMPLETED_RUNNERS_ANNOTATION] for a in annotations] == ["", "", "11"]
    assert [a[api.LAST_MESSAGE_ANNOTATION] for a in annotations] == ["7/0", "7/1", "7/2"]
    stored = harness.kube.get_object("ephemeralrunnersets", harness.kube.namespace, ERS_NAME)
    assert stored is not None
    assert stored["spec"]["replicas"] == 0
    assert stored["metadata"]["annotations"] == annotations[-1], "one patch wrote both"


def test_a_restarted_listener_reads_back_what_was_published_and_keeps_to_it(
    harness: Harness,
) -> None:
    harness.service.steps = [Message(1, 2), Message(2, 0, (completed(11, "r-11"),))]
    harness.listener().run()

    resumed = harness.publisher().check_target()

    assert resumed == Resumed(last_message_id=2, completed_runners=(RunnerID(11),))
    assert harness.publisher(scale_set_id=SCALE_SET_ID + 1).check_target().last_message_id == 0
    # Message 2 comes back to the next listener with its statistics; the session's are newer.
    harness.service.assigned_at_open = 1
    harness.service.steps = [Message(2, 3, (completed(11, "r-11"),)), TIMEOUT]
    harness.listener(resumed=resumed).run()
    assert harness.published()[-3:] == [(1, 0), (1, 1), (1, 2)]
    last = harness.ers_patches()[-1].body["metadata"]["annotations"]
    assert last == {api.COMPLETED_RUNNERS_ANNOTATION: "11", api.LAST_MESSAGE_ANNOTATION: "7/2"}
