"""The authentication chain: PAT and GitHub App, admin connection, refresh before expiry."""

from __future__ import annotations

import json
from typing import TypedDict

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ghalistener.actions.auth import AppCredentials, PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import CredentialsError, MessageParseError, RequestError
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.types import SystemInfo
from tests.clock import FakeClock
from tests.ghalistener.actions.conftest import (
    API,
    PAT,
    REG_TOKEN,
    SERVICE,
    GitHubMock,
    Sleeps,
    admin_token,
    make_client,
)

SCALE_SET = {"id": 7, "name": "arc-runners", "runnerGroupId": 1}


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def test_pat_chain_sends_each_credential_to_the_right_place(
    github: GitHubMock, client: ActionsClient
) -> None:
    route = github.service("GET", "_apis/runtime/runnerscalesets/7")
    route.return_value = httpx.Response(200, json=SCALE_SET)

    assert client.get_runner_scale_set_by_id(7).name == "arc-runners"

    registration = github.registration.calls.last.request
    assert registration.headers["Authorization"] == f"Bearer {PAT}"
    admin = github.admin.calls.last.request
    assert admin.headers["Authorization"] == f"RemoteAuth {REG_TOKEN}"
    assert json.loads(admin.content) == {
        "url": "https://github.com/my-org",
        "runner_event": "register",
    }
    service = route.calls.last.request
    assert service.headers["Authorization"] == f"Bearer {github.admin_tokens[-1]}"
    assert service.headers["Content-Type"] == "application/json"
    assert service.url.params["api-version"] == "6.0-preview"


def test_app_chain_signs_a_short_lived_jwt_and_exchanges_it_for_an_installation_token(
    github: GitHubMock, clock: FakeClock, rsa_key: rsa.RSAPrivateKey
) -> None:
    exchange = github.router.post(f"{API}/app/installations/42/access_tokens")
    exchange.return_value = httpx.Response(
        201, json={"token": "ghs_installationTOKEN", "expires_at": "2099-01-01T00:00:00Z"}
    )
    github.service("GET", "_apis/runtime/runnerscalesets/7").return_value = httpx.Response(
        200, json=SCALE_SET
    )
    credentials = AppCredentials(app_id="Iv1.abc", installation_id=42, private_key=pem(rsa_key))
    with make_client(clock, credentials=credentials) as client:
        client.get_runner_scale_set_by_id(7)

    request = exchange.calls.last.request
    assert request.headers["Accept"] == "application/vnd.github+json"
    scheme, token = request.headers["Authorization"].split(" ")
    assert scheme == "Bearer"
    claims = jwt.decode(
        token,
        rsa_key.public_key(),
        algorithms=["RS256"],
        options={"verify_exp": False, "verify_iat": False},
    )
    assert claims["iss"] == "Iv1.abc"
    assert claims["iat"] == int(clock.now) - 60
    assert 0 < claims["exp"] - claims["iat"] <= 600
    registration = github.registration.calls.last.request
    assert registration.headers["Authorization"] == "Bearer ghs_installationTOKEN"


def test_the_chain_is_refreshed_when_less_than_a_minute_remains(
    github: GitHubMock, client: ActionsClient, clock: FakeClock
) -> None:
    github.service("GET", "_apis/runtime/runnerscalesets/7").return_value = httpx.Response(
        200, json=SCALE_SET
    )
    client.get_runner_scale_set_by_id(7)
    clock.advance(600 - 61)  # the admin token expires at start + 600
    client.get_runner_scale_set_by_id(7)
    assert github.admin.call_count == 1

    clock.advance(2)  # now 59 s remain
    client.get_runner_scale_set_by_id(7)

    assert github.registration.call_count == 2
    assert github.admin.call_count == 2
    last = github.router.calls.last.request
    assert last.headers["Authorization"] == f"Bearer {github.admin_tokens[1]}"


def test_the_installation_token_is_reused_until_it_nears_expiry(
    github: GitHubMock, clock: FakeClock, rsa_key: rsa.RSAPrivateKey
) -> None:
    exchange = github.router.post(f"{API}/app/installations/42/access_tokens")
    expiry = "2023-11-14T23:13:20Z"  # START (1_700_000_000) + 3600 s
    exchange.return_value = httpx.Response(201, json={"token": "ghs_x", "expires_at": expiry})
    github.service("GET", "_apis/runtime/runnerscalesets/7").return_value = httpx.Response(
        200, json=SCALE_SET
    )
    credentials = AppCredentials(app_id="1", installation_id=42, private_key=pem(rsa_key))
    with make_client(clock, credentials=credentials) as client:
        client.get_runner_scale_set_by_id(7)
        clock.advance(600)  # admin token expired, installation token still good for 50 min
        client.get_runner_scale_set_by_id(7)
        assert (github.admin.call_count, exchange.call_count) == (2, 1)
        clock.advance(3600 - 600 - 30)  # 30 s left on the installation token
        client.get_runner_scale_set_by_id(7)
        assert (github.admin.call_count, exchange.call_count) == (3, 2)


@pytest.mark.parametrize("status", [pytest.param(401, id="401"), pytest.param(403, id="403")])
def test_the_admin_connection_call_is_retried_on_401_and_403(
    github: GitHubMock, client: ActionsClient, status: int
) -> None:
    token = admin_token(github.clock.now + 600)
    github.admin.side_effect = [
        httpx.Response(status, json={"message": "not yet"}),
        httpx.Response(status, json={"message": "not yet"}),
        httpx.Response(200, json={"url": SERVICE, "token": token}),
    ]
    github.service("GET", "_apis/runtime/runnerscalesets/7").return_value = httpx.Response(
        200, json=SCALE_SET
    )
    assert client.get_runner_scale_set_by_id(7).id == 7
    assert github.admin.call_count == 3


def test_a_persistent_admin_connection_refusal_surfaces_after_the_retry_bound(
    github: GitHubMock, client: ActionsClient, sleeps: Sleeps
) -> None:
    github.admin.side_effect = None
    github.admin.return_value = httpx.Response(403, json={"message": "Forbidden"})
    with pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(7)
    assert caught.value.status == 403
    assert github.admin.call_count == 5
    assert len(sleeps.waits) == 4


def test_an_admin_connection_without_url_or_token_is_rejected(
    github: GitHubMock, client: ActionsClient
) -> None:
    github.admin.side_effect = None
    github.admin.return_value = httpx.Response(200, json={"url": "", "token": "x"})
    with pytest.raises(MessageParseError, match="'url'"):
        client.get_runner_scale_set_by_id(7)


def test_an_admin_token_without_exp_is_rejected(github: GitHubMock, client: ActionsClient) -> None:
    github.admin.side_effect = None
    no_exp = jwt.encode({"sub": "x"}, "k" * 32, algorithm="HS256")
    github.admin.return_value = httpx.Response(200, json={"url": SERVICE, "token": no_exp})
    with pytest.raises(CredentialsError, match="exp"):
        client.get_runner_scale_set_by_id(7)


def test_a_failed_registration_token_request_is_a_request_error(
    github: GitHubMock, client: ActionsClient
) -> None:
    github.registration.return_value = httpx.Response(
        404, json={"message": "Not Found"}, headers={"X-GitHub-Request-Id": "AB:CD"}
    )
    with pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(7)
    assert caught.value.status == 404
    assert caught.value.github_request_id == "AB:CD"
    assert "registration token" in str(caught.value)


def test_a_rejected_admin_token_triggers_one_reconnect(
    github: GitHubMock, client: ActionsClient
) -> None:
    route = github.service("GET", "_apis/runtime/runnerscalesets/7")
    route.side_effect = [httpx.Response(401), httpx.Response(200, json=SCALE_SET)]
    assert client.get_runner_scale_set_by_id(7).id == 7
    assert github.admin.call_count == 2
    first, second = (call.request.headers["Authorization"] for call in route.calls)
    assert first != second


def test_user_agent_is_the_system_info_json(github: GitHubMock, clock: FakeClock) -> None:
    route = github.service("GET", "_apis/runtime/runnerscalesets/7")
    route.return_value = httpx.Response(200, json=SCALE_SET)
    info = SystemInfo(
        system="gha-scaleset",
        version="1.2.3",
        commit_sha="abc",
        scale_set_id=7,
        subsystem="ghalistener",
    )
    with ActionsClient(
        config_url="https://github.com/my-org",
        credentials=PatCredentials(token=PAT),
        system_info=info,
        retry=RetryPolicy(sleep=lambda _: None),
        clock=clock,
    ) as client:
        client.get_runner_scale_set_by_id(7)
    agent = json.loads(route.calls.last.request.headers["User-Agent"])
    assert agent == {
        "system": "gha-scaleset",
        "version": "1.2.3",
        "commit_sha": "abc",
        "scale_set_id": 7,
        "subsystem": "ghalistener",
    }
    assert github.admin.calls.last.request.headers["User-Agent"] == info.user_agent()


class AppFields(TypedDict):
    app_id: str
    installation_id: int
    private_key: str


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        pytest.param(
            {"app_id": "", "installation_id": 1, "private_key": "x"}, "id", id="no app id"
        ),
        pytest.param(
            {"app_id": "1", "installation_id": 0, "private_key": "-----BEGIN PRIVATE KEY-----"},
            "installation",
            id="no installation id",
        ),
        pytest.param(
            {"app_id": "1", "installation_id": 1, "private_key": "nope"}, "PEM", id="no PEM"
        ),
    ],
)
def test_unusable_app_credentials_are_rejected_up_front(kwargs: AppFields, problem: str) -> None:
    with pytest.raises(CredentialsError, match=problem):
        AppCredentials(**kwargs)


def test_a_private_key_that_cannot_sign_is_a_credentials_error_without_the_key(
    github: GitHubMock, clock: FakeClock
) -> None:
    broken = "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n"
    credentials = AppCredentials(app_id="1", installation_id=42, private_key=broken)
    with (
        make_client(clock, credentials=credentials) as client,
        pytest.raises(CredentialsError) as caught,
    ):
        client.get_runner_scale_set_by_id(7)
    assert "bm90IGEga2V5" not in str(caught.value)
