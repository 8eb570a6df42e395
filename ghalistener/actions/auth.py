"""Credentials for GitHub, and the pure parts of the authentication chain.

Two credential kinds: a personal access token (``PatCredentials``) and a GitHub App
installation (``AppCredentials``). Both keep their secret out of ``repr``/``str``.
This module does no I/O: it builds the App JWT and reads expiry times from tokens;
``ghalistener.actions.connection`` runs the HTTP chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import jwt

from ghalistener.actions.errors import CredentialsError

# GitHub rejects an App JWT that lives longer than 10 minutes; backdating iat by 60 s
# absorbs clock skew between us and GitHub.
APP_JWT_BACKDATE_SECONDS = 60
APP_JWT_LIFETIME_SECONDS = 9 * 60


@dataclass(frozen=True, kw_only=True)
class PatCredentials:
    """A personal access token (classic or fine-grained)."""

    token: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.token:
            raise CredentialsError("the personal access token is empty")


@dataclass(frozen=True, kw_only=True)
class AppCredentials:
    """A GitHub App installation: app id (or client id), installation id, PEM private key."""

    app_id: str
    installation_id: int
    private_key: str = field(repr=False)

    def __post_init__(self) -> None:
        if not str(self.app_id):
            raise CredentialsError("the GitHub App id is empty")
        if self.installation_id <= 0:
            raise CredentialsError("the GitHub App installation id must be a positive integer")
        if "PRIVATE KEY" not in self.private_key:
            raise CredentialsError("the GitHub App private key is not a PEM private key")


Credentials = PatCredentials | AppCredentials


@dataclass(frozen=True, kw_only=True)
class BearerToken:
    """A token and when it stops working (epoch seconds; None = unknown)."""

    token: str = field(repr=False)
    expires_at: float | None = None


def app_jwt(credentials: AppCredentials, *, now: float) -> str:
    """Return the RS256 JWT that authenticates the App itself.

    ``iat = now - 60``, ``exp = iat + 9 min`` (GitHub's limit is 10), ``iss = app id``.
    Raises CredentialsError (without the key) when the key cannot sign.
    """
    issued_at = int(now) - APP_JWT_BACKDATE_SECONDS
    claims = {
        "iat": issued_at,
        "exp": issued_at + APP_JWT_LIFETIME_SECONDS,
        "iss": str(credentials.app_id),
    }
    try:
        return jwt.encode(claims, credentials.private_key, algorithm="RS256")
    except (ValueError, TypeError, jwt.PyJWTError) as exc:
        # The library's message may quote key material: do not chain its text.
        raise CredentialsError(
            f"the GitHub App private key cannot sign a JWT ({type(exc).__name__})"
        ) from None


def jwt_expiry(token: str) -> float:
    """Return the ``exp`` claim of a JWT (signature not verified: we are not its audience).

    Raises CredentialsError when the token is not a JWT or has no numeric ``exp``.
    """
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise CredentialsError("the admin token is not a JWT") from None
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise CredentialsError("the admin token has no numeric 'exp' claim")
    return float(exp)


def parse_expires_at(value: object) -> float | None:
    """Parse GitHub's ``expires_at`` (RFC 3339) into epoch seconds; None if absent/invalid."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
