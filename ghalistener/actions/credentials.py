"""GitHub credentials from keys and values: the one parser both programs use.

Sources: the listener's JSON configuration, a credentials Secret's data (ARC's
``githubConfigSecret``), and the environment of ``ersctl scaleset``. The keys are
ARC's: ``github_token`` (a personal access token), or ``github_app_id``,
``github_app_installation_id`` and ``github_app_private_key`` (a GitHub App).

Rules, ARC's (``appconfig.Validate``) plus a length floor:

- a token and a complete App at once are refused (ARC: "should only provide one");
  a token beside an incomplete App is the token, as ARC reads it;
- an App needs all three keys; the app id is its numeric id or its client id;
- the installation id is a positive integer, as Go's ``ParseInt`` reads it (an
  optional sign, ASCII digits; surrounding white space is forgiven);
- the private key is PEM;
- a token shorter than :data:`MIN_TOKEN_LENGTH` is refused: no GitHub token is, and
  redacting so short a value from logs would also hide ordinary words.

An empty value counts as absent. Errors are :class:`CredentialsKeyError` naming the
key, never the value. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from ghalistener.actions.auth import AppCredentials, Credentials, PatCredentials
from ghalistener.actions.errors import CredentialsError

TOKEN_KEY: Final = "github_token"  # noqa: S105 (a key name)
APP_ID_KEY: Final = "github_app_id"
INSTALLATION_ID_KEY: Final = "github_app_installation_id"
PRIVATE_KEY_KEY: Final = "github_app_private_key"
APP_KEYS: Final = (APP_ID_KEY, INSTALLATION_ID_KEY, PRIVATE_KEY_KEY)
CREDENTIAL_KEYS: Final = (TOKEN_KEY, *APP_KEYS)
MIN_TOKEN_LENGTH: Final = 8

_GO_INT: Final = re.compile(r"[+-]?[0-9]+")


class CredentialsKeyError(CredentialsError):
    """One key of the credentials is missing or invalid. ``str()`` is ``"<key>: <problem>"``."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


def parse_credentials(values: Mapping[str, object]) -> Credentials:
    """The one credential ``values`` hold; CredentialsKeyError naming the key otherwise.

    ``values`` maps the keys above to strings (a Secret's decoded data, the
    environment) or to JSON values (the listener's file); other keys are ignored.
    """
    present = {key: values[key] for key in CREDENTIAL_KEYS if _given(values.get(key))}
    app_given = [key for key in APP_KEYS if key in present]
    if TOKEN_KEY in present:
        if len(app_given) == len(APP_KEYS):
            raise CredentialsKeyError(
                TOKEN_KEY, "both a token and GitHub App credentials are set; give only one"
            )
        return PatCredentials(token=_token(present[TOKEN_KEY]))
    if not app_given:
        raise CredentialsKeyError(
            TOKEN_KEY, f"no credentials: set {TOKEN_KEY}, or {', '.join(APP_KEYS)}"
        )
    missing = [key for key in APP_KEYS if key not in present]
    if missing:
        raise CredentialsKeyError(
            missing[0], "is missing (GitHub App credentials need all three keys)"
        )
    return AppCredentials(
        app_id=_app_id(present[APP_ID_KEY]),
        installation_id=_installation_id(present[INSTALLATION_ID_KEY]),
        private_key=_private_key(present[PRIVATE_KEY_KEY]),
    )


def secret_values(credentials: Credentials) -> tuple[str, ...]:
    """The values of ``credentials`` that must never reach a log line."""
    if isinstance(credentials, PatCredentials):
        return (credentials.token,)
    return (credentials.private_key,)


def _given(value: object) -> bool:
    return value is not None and value != ""


def _token(value: object) -> str:
    if not isinstance(value, str):
        raise CredentialsKeyError(TOKEN_KEY, "must be a string")
    if len(value.strip()) < MIN_TOKEN_LENGTH:
        raise CredentialsKeyError(
            TOKEN_KEY,
            f"is {len(value.strip())} characters long, too short for a GitHub token "
            f"(at least {MIN_TOKEN_LENGTH})",
        )
    return value.strip()


def _app_id(value: object) -> str:
    # An App is named by its numeric id or by its client id (a string), as in ARC.
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).strip():
        raise CredentialsKeyError(APP_ID_KEY, "must be an integer or a client id string")
    return str(value).strip()


def _installation_id(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _GO_INT.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        raise CredentialsKeyError(INSTALLATION_ID_KEY, "must be an integer")
    if number <= 0:
        raise CredentialsKeyError(INSTALLATION_ID_KEY, "must be a positive integer")
    return number


def _private_key(value: object) -> str:
    if not isinstance(value, str) or "PRIVATE KEY" not in value:
        raise CredentialsKeyError(PRIVATE_KEY_KEY, "is not a PEM private key")
    return value
