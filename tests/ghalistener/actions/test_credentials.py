"""One credentials parser, one set of rules, wherever credentials come from.

The same keys and values are given to the listener's configuration, to a credentials
Secret as the controller reads it, and to ``ersctl scaleset``'s environment: each
front end must accept the same inputs and refuse the same inputs, naming the same key.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from ersctl.api import FieldError
from ersctl.platform.errors import ConfigError
from ersctl.scaleset.clients import credentials_from_secret
from ersctl.scaleset.command import credentials_from_env
from ghalistener.actions.auth import AppCredentials, Credentials, PatCredentials
from ghalistener.actions.credentials import MIN_TOKEN_LENGTH
from ghalistener.config import parse_config

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpQIBAAKCAQEAsecretKEYbody\n-----END RSA PRIVATE KEY-----\n"
TOKEN = "ghp_0123456789abcdef"
APP = {"github_app_id": "123", "github_app_installation_id": "456", "github_app_private_key": PEM}


def from_listener_config(values: Mapping[str, str]) -> Credentials:
    config = {
        "configure_url": "https://github.com/octo-org",
        "ephemeral_runner_set_namespace": "arc",
        "ephemeral_runner_set_name": "runners",
        "runner_scale_set_id": 1,
        **values,
    }
    return parse_config(config).credentials()


def from_secret(values: Mapping[str, str]) -> Credentials:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return credentials_from_secret({"metadata": {}, "data": data}, where="arc/github-config")


def from_environment(values: Mapping[str, str]) -> Credentials:
    return credentials_from_env({key.upper(): value for key, value in values.items()})


FRONT_ENDS: dict[str, Callable[[Mapping[str, str]], Credentials]] = {
    "listener config": from_listener_config,
    "credentials Secret": from_secret,
    "scaleset environment": from_environment,
}


def refusal(front_end: str, values: Mapping[str, str]) -> tuple[str, str]:
    """(the key named, the problem) of each front end's refusal, in one vocabulary."""
    with pytest.raises((ConfigError, FieldError)) as caught:
        FRONT_ENDS[front_end](values)
    text = str(caught.value)
    error: Any = caught.value
    if isinstance(error, ConfigError):
        return error.field.lower(), error.problem
    # The Secret's error is the field that named the Secret: "Secret ns/name: <key>: <problem>"
    key, _, problem = text.split(": ", 2)[2].partition(": ")
    return key, problem


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param({"github_token": TOKEN}, PatCredentials(token=TOKEN), id="a token"),
        pytest.param(
            APP,
            AppCredentials(app_id="123", installation_id=456, private_key=PEM),
            id="a GitHub App",
        ),
        pytest.param(
            {**APP, "github_app_installation_id": "+12"},
            AppCredentials(app_id="123", installation_id=12, private_key=PEM),
            id="an installation id with a sign, as Go's ParseInt reads it",
        ),
        pytest.param(
            {"github_token": TOKEN, "github_app_id": "123"},
            PatCredentials(token=TOKEN),
            id="a token beside an incomplete App is the token, as in ARC",
        ),
    ],
)
@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_every_front_end_accepts_the_same_credentials(
    front_end: str, values: Mapping[str, str], expected: Credentials
) -> None:
    assert FRONT_ENDS[front_end](values) == expected


@pytest.mark.parametrize(
    ("values", "key", "problem"),
    [
        pytest.param({}, "github_token", "no credentials", id="none"),
        pytest.param(
            {"github_token": TOKEN, **APP}, "github_token", "give only one", id="a token and an App"
        ),
        pytest.param(
            {"github_token": "x" * (MIN_TOKEN_LENGTH - 1)},
            "github_token",
            "too short",
            id="a token too short to be one",
        ),
        pytest.param(
            {**APP, "github_app_installation_id": "12x"},
            "github_app_installation_id",
            "must be an integer",
            id="an installation id that is no integer",
        ),
        pytest.param(
            {**APP, "github_app_installation_id": "-3"},
            "github_app_installation_id",
            "must be a positive integer",
            id="a negative installation id",
        ),
        pytest.param(
            {"github_app_id": "123", "github_app_private_key": PEM},
            "github_app_installation_id",
            "is missing",
            id="an incomplete App",
        ),
        pytest.param(
            {**APP, "github_app_private_key": "not a key"},
            "github_app_private_key",
            "is not a PEM private key",
            id="a private key that is no PEM",
        ),
    ],
)
@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_every_front_end_refuses_the_same_credentials_naming_the_same_key(
    front_end: str, values: Mapping[str, str], key: str, problem: str
) -> None:
    named, said = refusal(front_end, values)
    assert named == key
    assert problem in said
    assert "secretKEYbody" not in said and TOKEN not in said
