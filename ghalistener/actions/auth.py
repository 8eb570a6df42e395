"""Credentials for GitHub, and the pure parts of the authentication chain.

Two credential kinds: a personal access token (``PatCredentials``) and a GitHub App
installation (``AppCredentials``). Both keep their secret out of ``repr``/``str``.
This module does no I/O and loads no JWT library, so a configuration is read and checked
without one (``ghalistener.actions.jwts`` signs and reads the JWTs;
``ghalistener.actions.connection`` runs the HTTP chain).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ghalistener.actions.errors import CredentialsError


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


def parse_expires_at(value: object) -> float | None:
    """Parse GitHub's ``expires_at`` (RFC 3339) into epoch seconds; None if absent/invalid."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
