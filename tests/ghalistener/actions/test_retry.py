"""The retry policy: what is retried, how often, how long between tries."""

from __future__ import annotations

import logging

import httpx
import pytest

from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import RateLimitedError, RequestError
from ghalistener.actions.retry import RetryPolicy, is_rate_limited, rate_limit_wait
from ghalistener.actions.transport import error_from_response
from tests.clock import FakeClock
from tests.ghalistener.actions.conftest import GitHubMock, Sleeps

SCALE_SET = {"id": 7, "name": "arc-runners"}
PATH = "_apis/runtime/runnerscalesets/7"


@pytest.mark.parametrize(
    "status",
    [pytest.param(500, id="500"), pytest.param(503, id="503"), pytest.param(429, id="429")],
)
def test_retryable_statuses_are_retried_until_success(
    github: GitHubMock, client: ActionsClient, status: int
) -> None:
    route = github.service("GET", PATH)
    route.side_effect = [
        httpx.Response(status),
        httpx.Response(status),
        httpx.Response(200, json=SCALE_SET),
    ]
    assert client.get_runner_scale_set_by_id(7).id == 7
    assert route.call_count == 3


def test_retries_stop_at_four_and_the_last_response_is_surfaced(
    github: GitHubMock, client: ActionsClient, sleeps: Sleeps
) -> None:
    route = github.service("GET", PATH)
    route.side_effect = [httpx.Response(502)] * 4 + [
        httpx.Response(503, json={"message": "last one"}, headers={"ActivityId": "act-5"})
    ]
    with pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(7)
    assert route.call_count == 5
    assert caught.value.status == 503
    assert caught.value.activity_id == "act-5"
    assert "last one" in str(caught.value)
    assert len(sleeps.waits) == 4


def test_connection_errors_are_retried_and_the_last_one_surfaced_without_a_status(
    github: GitHubMock, client: ActionsClient, sleeps: Sleeps
) -> None:
    route = github.service("GET", PATH)
    route.side_effect = httpx.ConnectError("connection refused")
    with pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(7)
    assert route.call_count == 5
    assert caught.value.status is None
    assert "ConnectError" in str(caught.value)
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_read_timeouts_are_retried(github: GitHubMock, client: ActionsClient) -> None:
    route = github.service("GET", PATH)
    route.side_effect = [httpx.ReadTimeout("slow"), httpx.Response(200, json=SCALE_SET)]
    assert client.get_runner_scale_set_by_id(7).id == 7
    assert route.call_count == 2


@pytest.mark.parametrize(
    "status",
    [pytest.param(501, id="501"), pytest.param(400, id="400"), pytest.param(404, id="404")],
)
def test_other_errors_are_not_retried(
    github: GitHubMock, client: ActionsClient, status: int
) -> None:
    route = github.service("GET", PATH)
    route.return_value = httpx.Response(status)
    with pytest.raises(RequestError):
        client.get_runner_scale_set_by_id(7)
    assert route.call_count == 1


def test_every_wait_is_at_most_the_cap(github: GitHubMock, clock: FakeClock) -> None:
    waits: list[float] = []
    policy = RetryPolicy(max_retries=8, initial_wait=1.0, max_wait=30.0, sleep=waits.append)
    route = github.service("GET", PATH)
    route.return_value = httpx.Response(500)
    with (
        ActionsClient(
            config_url="https://github.com/my-org",
            credentials=PatCredentials(token="ghp_abcdefgh"),
            retry=policy,
            clock=clock,
        ) as client,
        pytest.raises(RequestError),
    ):
        client.get_runner_scale_set_by_id(7)
    assert route.call_count == 9
    assert len(waits) == 8
    assert all(0 <= w <= 30.0 for w in waits)


def test_jittered_waits_stay_below_the_exponential_envelope() -> None:
    waits: list[float] = []
    policy = RetryPolicy(max_retries=6, initial_wait=1.0, max_wait=30.0, sleep=waits.append)
    transport = httpx.MockTransport(lambda request: httpx.Response(503))
    with httpx.Client(transport=transport) as http:
        response = policy.run(lambda: http.get("https://x.test/"))
    assert response.status_code == 503
    envelope = [min(30.0, 2.0**i) for i in range(6)]
    assert all(w <= cap for w, cap in zip(waits, envelope, strict=True))


def test_each_retried_attempt_is_one_warning_naming_the_request(
    github: GitHubMock, client: ActionsClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ghalistener.actions")
    route = github.service("GET", PATH)
    route.side_effect = [
        httpx.Response(503),
        httpx.ConnectError("refused"),
        httpx.Response(200, json=SCALE_SET),
    ]

    client.get_runner_scale_set_by_id(7)

    retries = [r for r in caplog.records if r.getMessage() == "retrying a failed GitHub request"]
    assert [(r.levelno, r.fields["attempt"], r.fields["outcome"]) for r in retries] == [  # type: ignore[attr-defined]
        (logging.WARNING, 1, "status 503"),
        (logging.WARNING, 2, "ConnectError"),
    ]
    assert all(
        r.fields["request"].startswith("GET ") and PATH in r.fields["request"]  # type: ignore[attr-defined]
        for r in retries
    )


def _answer(status: int, headers: dict[str, str]) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=httpx.Request("GET", "https://x/y"))


@pytest.mark.parametrize(
    ("status", "headers", "limited", "wait"),
    [
        pytest.param(429, {"Retry-After": "30"}, True, 30.0, id="429-seconds"),
        pytest.param(
            429, {"Retry-After": "Thu, 01 Jan 2026 00:01:00 GMT"}, True, 60.0, id="429-date"
        ),
        pytest.param(429, {}, True, None, id="429-unsaid"),
        pytest.param(
            403,
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1767225720"},
            True,
            120.0,
            id="403-primary-limit",
        ),
        pytest.param(403, {}, False, None, id="403-refused"),
    ],
)
def test_a_rate_limit_is_told_from_a_refusal_and_its_reset_read(
    status: int, headers: dict[str, str], limited: bool, wait: float | None
) -> None:
    now = 1767225600.0  # 2026-01-01T00:00:00Z
    response = _answer(status, headers)
    assert is_rate_limited(response) is limited
    if limited:
        assert rate_limit_wait(response, now=now) == wait
        error = error_from_response(response)
        assert isinstance(error, RateLimitedError)
        assert error.retry_after is not None or wait is None


def test_a_policy_that_does_not_retry_rate_limits_returns_the_429_at_once() -> None:
    sleeps: list[float] = []
    policy = RetryPolicy(retry_rate_limited=False, sleep=sleeps.append)
    answers = iter([_answer(429, {"Retry-After": "5"}), _answer(503, {}), _answer(200, {})])
    assert policy.run(lambda: next(answers)).status_code == 429
    assert sleeps == []
