"""Fixtures for the actions-client tests: a mocked GitHub (respx) and an injected clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
import pytest
import respx

from ghalistener.actions.auth import AppCredentials, PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.retry import RetryPolicy
from tests.clock import FakeClock

PAT = "ghp_patSECRETvalue0123456789"
REG_TOKEN = "AREGTOKENsecretvalue98765"
QUEUE_TOKEN = "queueTOKENsecretvalue-1"
QUEUE_TOKEN_2 = "queueTOKENsecretvalue-2"
CONFIG_URL = "https://github.com/my-org"
API = "https://api.github.com"
SERVICE = "https://pipelines.actions.test/tenant1"
QUEUE_URL = "https://broker.actions.test/tenant1/message?sessionId=s-1"
START = 1_700_000_000.0


def admin_token(exp: float, marker: str = "admin") -> str:
    """An admin JWT as the service would mint it (we never verify its signature)."""
    return jwt.encode({"exp": int(exp), "sub": marker}, "k" * 32, algorithm="HS256")


@dataclass
class Sleeps:
    """Records the waits the retry policy asked for instead of sleeping."""

    waits: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@dataclass
class GitHubMock:
    """The respx router plus the auth-chain routes every test needs."""

    router: respx.MockRouter
    clock: FakeClock
    registration: respx.Route
    admin: respx.Route
    admin_tokens: list[str] = field(default_factory=list)

    def service(self, method: str, path: str) -> respx.Route:
        """A route on the actions service (query string ignored)."""
        return self.router.route(method=method, url__startswith=f"{SERVICE}/{path}")


def session_json(token: str = QUEUE_TOKEN, **stats: int) -> dict[str, Any]:
    return {
        "sessionId": "s-1",
        "ownerName": "host-1",
        "runnerScaleSet": {"id": 7, "name": "arc-runners"},
        "messageQueueUrl": QUEUE_URL,
        "messageQueueAccessToken": token,
        "statistics": {"totalAssignedJobs": 0, **stats},
    }


def message_json(
    message_id: int, jobs: list[dict[str, Any]] | None, **stats: int
) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "messageType": "RunnerScaleSetJobMessages",
        "body": "" if jobs is None else json.dumps(jobs),
        "statistics": {"totalAssignedJobs": 0, **stats},
    }


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def github(clock: FakeClock) -> Iterator[GitHubMock]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        mock = GitHubMock(
            router=router,
            clock=clock,
            registration=router.post(f"{API}/orgs/my-org/actions/runners/registration-token"),
            admin=router.post(f"{API}/actions/runner-registration"),
        )
        mock.registration.return_value = httpx.Response(
            201, json={"token": REG_TOKEN, "expires_at": "2099-01-01T00:00:00Z"}
        )

        def admin_connection(request: httpx.Request) -> httpx.Response:
            token = admin_token(clock.now + 600, marker=f"admin-{len(mock.admin_tokens)}")
            mock.admin_tokens.append(token)
            return httpx.Response(200, json={"url": f"{SERVICE}/", "token": token})

        mock.admin.side_effect = admin_connection
        yield mock


@pytest.fixture
def client(github: GitHubMock, clock: FakeClock, sleeps: Sleeps) -> Iterator[ActionsClient]:
    with ActionsClient(
        config_url=CONFIG_URL,
        credentials=PatCredentials(token=PAT),
        retry=RetryPolicy(sleep=sleeps),
        clock=clock,
    ) as actions_client:
        yield actions_client


def make_client(
    clock: FakeClock,
    *,
    credentials: PatCredentials | AppCredentials | None = None,
    config_url: str = CONFIG_URL,
    retry: RetryPolicy | None = None,
) -> ActionsClient:
    return ActionsClient(
        config_url=config_url,
        credentials=credentials or PatCredentials(token=PAT),
        retry=retry or RetryPolicy(sleep=lambda _: None),
        clock=clock,
    )
