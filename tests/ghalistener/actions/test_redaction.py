"""No secret (PAT, App key, any token, JIT config) reaches logs, reprs or exception text."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ersctl.platform.redaction import RECENT_LIMIT, Redactor
from ghalistener.actions.auth import AppCredentials, PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import ActionsError
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.session import MessageSession
from ghalistener.actions.transport import redact_url
from tests.ghalistener.actions.conftest import (
    API,
    PAT,
    QUEUE_TOKEN,
    QUEUE_TOKEN_2,
    QUEUE_URL,
    REG_TOKEN,
    GitHubMock,
    message_json,
    session_json,
)

JIT = "JITCONFIGsecretpayload=="
INSTALLATION_TOKEN = "ghs_INSTALLATIONsecret42"


def secret_echo(*secrets: str) -> httpx.Response:
    """A hostile error body that quotes secrets back."""
    return httpx.Response(400, json={"typeName": "X", "message": " ".join(secrets)})


def exercise(github: GitHubMock, client: ActionsClient) -> list[str]:
    """Drive every kind of call, including failures; return the texts a user could see."""
    shown: list[str] = []
    github.service(
        "POST", "_apis/runtime/runnerscalesets/7/sessions"
    ).return_value = httpx.Response(200, json=session_json())
    github.service(
        "PATCH", "_apis/runtime/runnerscalesets/7/sessions/s-1"
    ).return_value = httpx.Response(200, json=session_json(token=QUEUE_TOKEN_2))
    github.service(
        "DELETE", "_apis/runtime/runnerscalesets/7/sessions/s-1"
    ).return_value = httpx.Response(204)
    github.service(
        "POST", "_apis/runtime/runnerscalesets/7/generatejitconfig"
    ).return_value = httpx.Response(
        200, json={"runner": {"id": 1, "name": "r"}, "encodedJITConfig": JIT}
    )
    queue = QUEUE_URL.split("?")[0]
    github.router.get(url__startswith=queue).side_effect = [
        httpx.Response(401, text=QUEUE_TOKEN),
        httpx.Response(200, json=message_json(1, None)),
        httpx.Response(401),
        httpx.Response(401, json={"message": QUEUE_TOKEN_2}),
    ]
    session = MessageSession.open(client, scale_set_id=7, owner_name="h")
    shown.append(repr(session))
    session.get_message(last_message_id=0, max_capacity=1)
    jit = client.generate_jit_runner_config(7, "r")
    shown.append(repr(jit))
    admin = github.admin_tokens[-1]
    github.service("GET", "_apis/runtime/runnerscalesets/9").return_value = secret_echo(
        PAT, REG_TOKEN, admin, QUEUE_TOKEN, QUEUE_TOKEN_2, JIT, INSTALLATION_TOKEN
    )
    for call in (
        lambda: client.get_runner_scale_set_by_id(9),
        lambda: session.get_message(last_message_id=1, max_capacity=1),
    ):
        with pytest.raises(ActionsError) as caught:
            call()
        shown.extend([str(caught.value), repr(caught.value), repr(vars(caught.value))])
    session.close()
    shown.append(repr(client))
    return shown


def assert_no_secret(texts: list[str], secrets: list[str]) -> None:
    joined = "\n".join(texts)
    leaked = [secret for secret in secrets if secret in joined]
    assert leaked == []


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "ghalistener"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def test_pat_chain_never_shows_a_secret(
    github: GitHubMock, client: ActionsClient, debug_logs: pytest.LogCaptureFixture
) -> None:
    shown = exercise(github, client)
    assert debug_logs.records, "the client logged nothing: this test would prove nothing"
    assert_no_secret(
        [*shown, debug_logs.text, repr(PatCredentials(token=PAT))],
        [PAT, REG_TOKEN, *github.admin_tokens, QUEUE_TOKEN, QUEUE_TOKEN_2, JIT],
    )


def test_app_chain_never_shows_a_secret(
    github: GitHubMock, debug_logs: pytest.LogCaptureFixture
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    exchange = github.router.post(f"{API}/app/installations/42/access_tokens")
    exchange.return_value = httpx.Response(201, json={"token": INSTALLATION_TOKEN})
    credentials = AppCredentials(app_id="123", installation_id=42, private_key=private_pem)
    with ActionsClient(
        config_url="https://github.com/my-org",
        credentials=credentials,
        retry=RetryPolicy(sleep=lambda _: None),
        clock=github.clock,
    ) as client:
        shown = exercise(github, client)
    app_jwt = exchange.calls.last.request.headers["Authorization"].removeprefix("Bearer ")
    key_body = "".join(private_pem.splitlines()[1:-1])
    assert_no_secret(
        [*shown, debug_logs.text, repr(credentials)],
        [
            app_jwt,
            key_body[:40],
            key_body[-40:],
            INSTALLATION_TOKEN,
            REG_TOKEN,
            *github.admin_tokens,
            QUEUE_TOKEN,
            QUEUE_TOKEN_2,
            JIT,
        ],
    )


@pytest.mark.parametrize(
    ("url", "hidden"),
    [
        pytest.param("https://user:pa55word@h.test/x", "pa55word", id="userinfo"),
        pytest.param("https://h.test/x?token=abc123&a=1", "abc123", id="token query"),
        pytest.param("https://h.test/x?sig=s1g&sv=1", "s1g", id="signature query"),
    ],
)
def test_urls_lose_their_credentials(url: str, hidden: str) -> None:
    assert hidden not in redact_url(url)


def test_error_bodies_are_cut_short(github: GitHubMock, client: ActionsClient) -> None:
    github.service("GET", "_apis/runtime/runnerscalesets/9").return_value = httpx.Response(
        400, text="x" * 5000, headers={"Content-Type": "text/plain"}
    )
    with pytest.raises(ActionsError) as caught:
        client.get_runner_scale_set_by_id(9)
    assert len(str(caught.value)) < 600
    assert json.dumps(vars(caught.value)).count("x") < 600


def test_the_redactor_keeps_credentials_forever_and_tokens_in_a_bounded_window() -> None:
    redactor = Redactor()
    redactor.add(["pinned-credential"], pin=True)
    tokens = [f"token-{i:06d}" for i in range(RECENT_LIMIT + 10)]
    redactor.add(tokens)
    text = redactor(" ".join(["pinned-credential", tokens[0], tokens[-1]]))
    assert "pinned-credential" not in text
    assert tokens[-1] not in text
    assert tokens[0] in text  # evicted: long expired by the time 512 newer ones exist
