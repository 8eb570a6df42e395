"""MessageSession: long poll, ack, acquire, and "401 -> refresh -> retry once"."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import httpx
import pytest

from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import (
    MessageParseError,
    MessageQueueTokenExpiredError,
    SessionNotFoundError,
)
from ghalistener.actions.session import MessageSession
from ghalistener.actions.types import JobAssigned, JobAvailable, JobCompleted, JobStarted
from tests.ghalistener.actions.conftest import (
    QUEUE_TOKEN,
    QUEUE_TOKEN_2,
    QUEUE_URL,
    GitHubMock,
    message_json,
    session_json,
)

QUEUE = QUEUE_URL.split("?")[0]

JOB_FIELDS = {
    "runnerRequestId": 101,
    "repositoryName": "repo",
    "ownerName": "my-org",
    "jobId": "job-1",
    "jobWorkflowRef": "my-org/repo/.github/workflows/ci.yml@refs/heads/main",
    "jobDisplayName": "build",
    "workflowRunId": 555,
    "eventName": "push",
    "requestLabels": ["arc-runners"],
    "queueTime": "2024-01-01T00:00:00Z",
    "scaleSetAssignTime": "0001-01-01T00:00:00Z",
}


@pytest.fixture
def session(github: GitHubMock, client: ActionsClient) -> Iterator[MessageSession]:
    github.service(
        "POST", "_apis/runtime/runnerscalesets/7/sessions"
    ).return_value = httpx.Response(200, json=session_json(totalAssignedJobs=4))
    github.service(
        "PATCH", "_apis/runtime/runnerscalesets/7/sessions/s-1"
    ).return_value = httpx.Response(
        200, json=session_json(token=QUEUE_TOKEN_2, totalAssignedJobs=5)
    )
    github.service(
        "DELETE", "_apis/runtime/runnerscalesets/7/sessions/s-1"
    ).return_value = httpx.Response(204)
    with MessageSession.open(client, scale_set_id=7, owner_name="host-1") as opened:
        yield opened


def queue_route(github: GitHubMock, method: str = "GET", path: str = "") -> object:
    return github.router.route(method=method, url__startswith=QUEUE + path)


def test_open_carries_the_session_statistics(session: MessageSession) -> None:
    assert session.statistics.total_assigned_jobs == 4
    assert session.session_id == "s-1"


def test_get_message_sends_the_long_poll_headers_and_decodes_all_job_kinds(
    github: GitHubMock, session: MessageSession
) -> None:
    jobs = [
        {"messageType": "JobAvailable", "acquireJobUrl": "https://x/acquire", **JOB_FIELDS},
        {"messageType": "JobAssigned", **JOB_FIELDS},
        {"messageType": "JobStarted", "runnerId": 11, "runnerName": "r-1", **JOB_FIELDS},
        {
            "messageType": "JobCompleted",
            "result": "succeeded",
            "runnerId": 11,
            "runnerName": "r-1",
            **JOB_FIELDS,
        },
    ]
    route = github.router.get(url__startswith=QUEUE)
    route.return_value = httpx.Response(200, json=message_json(3, jobs, totalAssignedJobs=1))

    message = session.get_message(last_message_id=2, max_capacity=10)

    assert message is not None and message.message_id == 3
    assert message.statistics.total_assigned_jobs == 1
    assert [type(job) for job in message.jobs] == [
        JobAvailable,
        JobAssigned,
        JobStarted,
        JobCompleted,
    ]
    available, _, started, completed = message.jobs
    assert isinstance(available, JobAvailable) and available.acquire_job_url == "https://x/acquire"
    assert isinstance(started, JobStarted) and (started.runner_id, started.runner_name) == (
        11,
        "r-1",
    )
    assert isinstance(completed, JobCompleted) and completed.result == "succeeded"
    assert started.runner_request_id == 101 and started.workflow_run_id == 555
    assert started.request_labels == ("arc-runners",)
    assert started.queue_time == datetime(2024, 1, 1, tzinfo=UTC)
    assert started.scale_set_assign_time is None  # Go's zero time: not set
    request = route.calls.last.request
    assert request.headers["Accept"] == "application/json; api-version=6.0-preview"
    assert request.headers["Authorization"] == f"Bearer {QUEUE_TOKEN}"
    assert request.headers["X-ScaleSetMaxCapacity"] == "10"
    assert request.url.params["lastMessageId"] == "2"
    assert request.url.params["sessionId"] == "s-1"


def test_last_message_id_is_sent_only_when_positive(
    github: GitHubMock, session: MessageSession
) -> None:
    route = github.router.get(url__startswith=QUEUE)
    route.return_value = httpx.Response(202)
    session.get_message(last_message_id=0, max_capacity=1)
    assert "lastMessageId" not in route.calls.last.request.url.params


def test_a_202_is_no_message_and_is_not_retried(
    github: GitHubMock, session: MessageSession
) -> None:
    route = github.router.get(url__startswith=QUEUE)
    route.return_value = httpx.Response(202)
    assert session.get_message(last_message_id=0, max_capacity=1) is None
    assert route.call_count == 1


def test_get_message_refreshes_the_session_on_401_and_retries_once(
    github: GitHubMock, session: MessageSession
) -> None:
    route = github.router.get(url__startswith=QUEUE)
    route.side_effect = [httpx.Response(401), httpx.Response(200, json=message_json(1, None))]
    message = session.get_message(last_message_id=0, max_capacity=1)
    assert message is not None and message.jobs == ()
    tokens = [call.request.headers["Authorization"] for call in route.calls]
    assert tokens == [f"Bearer {QUEUE_TOKEN}", f"Bearer {QUEUE_TOKEN_2}"]
    assert session.statistics.total_assigned_jobs == 5  # from the refreshed session


def test_a_second_401_is_raised_not_looped(github: GitHubMock, session: MessageSession) -> None:
    route = github.router.get(url__startswith=QUEUE)
    route.return_value = httpx.Response(401)
    with pytest.raises(MessageQueueTokenExpiredError):
        session.get_message(last_message_id=0, max_capacity=1)
    assert route.call_count == 2


def test_delete_message_acks_by_id_and_refreshes_on_401(
    github: GitHubMock, session: MessageSession
) -> None:
    route = github.router.delete(url__startswith=f"{QUEUE}/9")
    route.side_effect = [httpx.Response(401), httpx.Response(204)]
    session.delete_message(9)
    assert route.call_count == 2
    assert route.calls.last.request.headers["Authorization"] == f"Bearer {QUEUE_TOKEN_2}"
    assert route.calls.last.request.url.params["sessionId"] == "s-1"


def test_acquire_jobs_uses_the_queue_token_and_refreshes_on_401(
    github: GitHubMock, session: MessageSession
) -> None:
    route = github.service("POST", "_apis/runtime/runnerscalesets/7/acquirejobs")
    route.side_effect = [
        httpx.Response(401),
        httpx.Response(200, json={"count": 1, "value": [101]}),
    ]
    assert session.acquire_jobs([101, 102]) == [101]
    assert json.loads(route.calls.last.request.content) == [101, 102]
    assert route.calls.last.request.headers["Authorization"] == f"Bearer {QUEUE_TOKEN_2}"
    assert route.calls[0].request.headers["Authorization"] == f"Bearer {QUEUE_TOKEN}"


def test_acquiring_nothing_sends_nothing(github: GitHubMock, session: MessageSession) -> None:
    route = github.service("POST", "_apis/runtime/runnerscalesets/7/acquirejobs")
    assert session.acquire_jobs([]) == []
    assert not route.called


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda s: s.get_message(last_message_id=0, max_capacity=1), id="get"),
        pytest.param(lambda s: s.delete_message(3), id="ack"),
    ],
)
def test_a_404_from_the_queue_means_the_session_is_gone(
    github: GitHubMock, session: MessageSession, call: Callable[[MessageSession], object]
) -> None:
    github.router.route(url__startswith=QUEUE).return_value = httpx.Response(404)
    with pytest.raises(SessionNotFoundError):
        call(session)


def test_close_deletes_the_session_once(github: GitHubMock, client: ActionsClient) -> None:
    github.service(
        "POST", "_apis/runtime/runnerscalesets/7/sessions"
    ).return_value = httpx.Response(200, json=session_json())
    route = github.service("DELETE", "_apis/runtime/runnerscalesets/7/sessions/s-1")
    route.return_value = httpx.Response(204)
    opened = MessageSession.open(client, scale_set_id=7, owner_name="h")
    opened.close()
    opened.close()
    assert route.call_count == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(b"not json at all", "not JSON", id="non-JSON"),
        pytest.param(
            json.dumps({**message_json(1, []), "messageType": "Other"}).encode(),
            "unsupported messageType 'Other'",
            id="wrong messageType",
        ),
        pytest.param(
            json.dumps({"messageType": "RunnerScaleSetJobMessages", "statistics": {}}).encode(),
            "'messageId' is missing",
            id="missing messageId",
        ),
        pytest.param(
            json.dumps({"messageId": 1, "messageType": "RunnerScaleSetJobMessages"}).encode(),
            "'statistics' is missing",
            id="missing statistics",
        ),
    ],
)
def test_a_message_with_an_unusable_envelope_raises_a_parse_error_naming_what_is_wrong(
    github: GitHubMock, session: MessageSession, content: bytes, problem: str
) -> None:
    github.router.get(url__startswith=QUEUE).return_value = httpx.Response(200, content=content)
    with pytest.raises(MessageParseError) as caught:
        session.get_message(last_message_id=0, max_capacity=1)
    assert problem in str(caught.value)


GOOD_JOB = {"messageType": "JobAssigned", **JOB_FIELDS}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        pytest.param("{not json", "message body: the body is not JSON", id="body not JSON"),
        pytest.param('{"a": 1}', "message body: expected a JSON list", id="body not a list"),
        pytest.param(
            json.dumps([{"messageType": "JobStarted", "runnerRequestId": 1}, GOOD_JOB]),
            "job message #0: field 'runnerId' is missing",
            id="job started without runnerId",
        ),
        pytest.param(
            json.dumps([{"messageType": "JobStarted", "runnerId": 3, "runnerRequestId": 1}]),
            "job message #0: field 'runnerName' is missing",
            id="job started without runnerName",
        ),
        pytest.param(
            json.dumps([GOOD_JOB, {"messageType": "JobAssigned"}]),
            "job message #1 (JobAssigned): field 'runnerRequestId' is missing",
            id="job without runnerRequestId",
        ),
        pytest.param(
            json.dumps([{**GOOD_JOB, "jobId": 12345}, GOOD_JOB]),
            "job message #0 (JobAssigned): field 'jobId' must be str, got int",
            id="numeric jobId",
        ),
        pytest.param(
            json.dumps([{"runnerRequestId": 1}, GOOD_JOB]),
            "job message #0: field 'messageType' is missing",
            id="job without messageType",
        ),
        pytest.param(
            json.dumps([{**GOOD_JOB, "runnerRequestId": True}, GOOD_JOB]),
            "job message #0 (JobAssigned): field 'runnerRequestId' must be int, got bool",
            id="boolean runnerRequestId",
        ),
        pytest.param(
            json.dumps([GOOD_JOB, {**GOOD_JOB, "queueTime": "yesterday"}]),
            "job message #1 (JobAssigned): field 'queueTime' is not an RFC 3339 time",
            id="queueTime not a time",
        ),
        pytest.param(
            json.dumps([{**GOOD_JOB, "runnerAssignTime": 5}, GOOD_JOB]),
            "job message #0 (JobAssigned): field 'runnerAssignTime' must be an RFC 3339 time",
            id="numeric runnerAssignTime",
        ),
    ],
)
def test_a_bad_job_message_is_skipped_with_its_reason_and_the_rest_is_parsed(
    github: GitHubMock, session: MessageSession, body: str, problem: str
) -> None:
    # A per-job parse error used to fail the whole message, which was never acked and
    # came back forever: each job message now stands on its own.
    wire = {**message_json(9, None), "body": body}
    github.router.get(url__startswith=QUEUE).return_value = httpx.Response(200, json=wire)
    message = session.get_message(last_message_id=0, max_capacity=1)
    assert message is not None and message.message_id == 9
    assert len(message.skipped) == 1 and message.skipped[0].startswith(problem)
    good = json.loads(body).count(GOOD_JOB) if body.startswith("[") else 0
    assert [type(j) for j in message.jobs] == [JobAssigned] * good


def test_a_byte_order_mark_is_stripped(github: GitHubMock, session: MessageSession) -> None:
    body = json.dumps(message_json(4, [{"messageType": "JobAssigned", **JOB_FIELDS}])).encode()
    github.router.get(url__startswith=QUEUE).return_value = httpx.Response(
        200, content=b"\xef\xbb\xbf" + body
    )
    message = session.get_message(last_message_id=0, max_capacity=1)
    assert message is not None and len(message.jobs) == 1


def test_unknown_job_types_are_skipped_and_an_empty_body_is_no_jobs(
    github: GitHubMock, session: MessageSession
) -> None:
    jobs = [{"messageType": "JobFrobnicated", "x": 1}, {"messageType": "JobAssigned", **JOB_FIELDS}]
    github.router.get(url__startswith=QUEUE).side_effect = [
        httpx.Response(200, json=message_json(5, jobs)),
        httpx.Response(200, json=message_json(6, None)),
    ]
    first = session.get_message(last_message_id=0, max_capacity=1)
    assert first is not None and [type(j) for j in first.jobs] == [JobAssigned]
    second = session.get_message(last_message_id=5, max_capacity=1)
    assert second is not None and second.jobs == ()
