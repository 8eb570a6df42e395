"""Parsing of the GitHub configuration URL (org, repo or enterprise scope).

Accepted forms: ``<scheme>://<host>/<org>``, ``<scheme>://<host>/<owner>/<repo>``,
``<scheme>://<host>/enterprises/<enterprise>`` (``enterprises`` in any case), with
trailing slashes ignored, and no credentials in the URL (``user:token@`` is refused:
the URL is logged and shown in reprs). Hosted GitHub (github.com, www.github.com, github.localhost,
``*.ghe.com``) has its REST API at ``<scheme>://api.<host>``; any other host is GitHub
Enterprise Server with the API under ``/api/v3``. Env ``GITHUB_ACTIONS_FORCE_GHES``
(any value) forces the GHES form. Pure: no I/O.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import SplitResult, quote, urlsplit

from ghalistener.actions.errors import ConfigUrlError

FORCE_GHES_ENV = "GITHUB_ACTIONS_FORCE_GHES"
_HOSTED_HOSTS = frozenset({"github.com", "www.github.com", "github.localhost"})


class Scope(enum.Enum):
    """What the runners are registered to."""

    ORGANIZATION = "organization"
    REPOSITORY = "repository"
    ENTERPRISE = "enterprise"


@dataclass(frozen=True, kw_only=True)
class GitHubConfig:
    """A parsed configuration URL.

    ``config_url`` is the URL as given (trailing slashes removed); it is what the
    admin-connection call sends. ``api_url`` is the REST API base without a trailing slash.
    """

    config_url: str
    scope: Scope
    enterprise: str = ""
    organization: str = ""
    repository: str = ""
    is_hosted: bool = True
    api_url: str = ""

    @property
    def registration_token_path(self) -> str:
        """The REST path (relative to ``api_url``) that mints a runner registration token."""
        if self.scope is Scope.ENTERPRISE:
            return f"/enterprises/{quote(self.enterprise)}/actions/runners/registration-token"
        if self.scope is Scope.REPOSITORY:
            owner, repo = quote(self.organization), quote(self.repository)
            return f"/repos/{owner}/{repo}/actions/runners/registration-token"
        return f"/orgs/{quote(self.organization)}/actions/runners/registration-token"


def is_hosted_host(host: str) -> bool:
    """True for github.com, www.github.com, github.localhost and ``*.ghe.com``."""
    host = host.lower()
    return host in _HOSTED_HOSTS or host.endswith(".ghe.com")


def parse_config_url(url: str, *, env: Mapping[str, str] | None = None) -> GitHubConfig:
    """Parse a configuration URL; raise ConfigUrlError naming what is wrong."""
    environ = os.environ if env is None else env
    parts = urlsplit(url.strip())
    if _has_userinfo(url, parts):
        # A token in user:password@ would be logged (the admin connection names the
        # URL) and shown in reprs: refuse it, and do not echo it back.
        raise ConfigUrlError(
            "config URL must not carry credentials (user:password@host); "
            "give the token as github_token"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigUrlError(f"config URL {url!r} is not an http(s) URL with a host")
    try:
        parts.port  # noqa: B018  (the property validates: digits, 0-65535)
    except ValueError:
        raise ConfigUrlError("config URL has an invalid port (expected 0-65535)") from None
    segments = [s for s in parts.path.split("/") if s]
    hosted = is_hosted_host(parts.hostname) and FORCE_GHES_ENV not in environ
    config_url = f"{parts.scheme}://{parts.netloc}/{'/'.join(segments)}"
    api_url = _api_url(parts, hosted=hosted)
    if len(segments) == 1:
        scope, names = Scope.ORGANIZATION, {"organization": segments[0]}
    elif len(segments) == 2 and segments[0].lower() == "enterprises":
        scope, names = Scope.ENTERPRISE, {"enterprise": segments[1]}
    elif len(segments) == 2:
        scope, names = Scope.REPOSITORY, {"organization": segments[0], "repository": segments[1]}
    else:
        raise ConfigUrlError(
            f"config URL {url!r} must name an organization (/<org>), a repository "
            "(/<owner>/<repo>) or an enterprise (/enterprises/<enterprise>)"
        )
    return GitHubConfig(
        config_url=config_url,
        scope=scope,
        enterprise=names.get("enterprise", ""),
        organization=names.get("organization", ""),
        repository=names.get("repository", ""),
        is_hosted=hosted,
        api_url=api_url,
    )


def _has_userinfo(url: str, parts: SplitResult) -> bool:
    # Without "//" urlsplit sees no authority: "TOKEN@github.com/org" is all path.
    authority = parts.netloc or url.strip().split("/", 1)[0]
    return "@" in authority


def _api_url(parts: SplitResult, *, hosted: bool) -> str:
    if hosted:
        # The scheme is kept (as ARC does) so http://github.localhost reaches a local stack.
        host = parts.netloc.lower()
        return f"{parts.scheme}://api.{host.removeprefix('www.')}"
    return f"{parts.scheme}://{parts.netloc}/api/v3"
