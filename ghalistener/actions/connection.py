"""The authentication chain that yields the actions-service admin connection.

credential -> REST bearer (PAT as is, or App JWT -> installation token)
-> runner registration token (by scope) -> admin connection (``RemoteAuth``)
-> actions service URL + admin JWT. The whole chain is re-run when fewer than
``REFRESH_MARGIN_SECONDS`` remain on the admin token (or when the service rejects it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from ghalistener.actions.auth import (
    AppCredentials,
    BearerToken,
    PatCredentials,
    parse_expires_at,
)
from ghalistener.actions.configurl import GitHubConfig
from ghalistener.actions.errors import MessageParseError
from ghalistener.actions.jwts import app_jwt, jwt_expiry
from ghalistener.actions.messages import as_object, decode_json
from ghalistener.actions.transport import HttpSender, error_from_response, is_valid_url

log = logging.getLogger(__name__)

REFRESH_MARGIN_SECONDS = 60.0
GITHUB_JSON = "application/vnd.github+json"


@dataclass(frozen=True, kw_only=True)
class AdminConnection:
    """Where the actions service is and the admin token for it (expiry in epoch seconds)."""

    url: str
    token: str = field(repr=False)
    expires_at: float


class AdminConnector:
    """Caches the admin connection and re-runs the chain before it expires (thread-safe)."""

    def __init__(
        self,
        *,
        config: GitHubConfig,
        credentials: PatCredentials | AppCredentials,
        sender: HttpSender,
        clock: Callable[[], float],
    ) -> None:
        self._config = config
        self._credentials = credentials
        self._sender = sender
        self._clock = clock
        self._lock = threading.Lock()
        self._connection: AdminConnection | None = None
        self._installation_token: BearerToken | None = None
        secret = (
            credentials.token
            if isinstance(credentials, PatCredentials)
            else credentials.private_key
        )
        # A PEM key is registered line by line too: a fragment is as bad as the whole key.
        sender.redactor.add([secret], pin=True)

    def connection(self) -> AdminConnection:
        """The current admin connection, refreshed first when it expires within 60 s."""
        with self._lock:
            current = self._connection
            if current is None or current.expires_at - self._clock() < REFRESH_MARGIN_SECONDS:
                current = self._connection = self._connect()
            return current

    def invalidate(self, rejected: AdminConnection) -> None:
        """Forget ``rejected`` (the service refused its token); the next call reconnects."""
        with self._lock:
            if self._connection is rejected:
                self._connection = None

    def _connect(self) -> AdminConnection:
        log.info("refreshing the actions service admin connection for %s", self._config.config_url)
        registration_token = self._registration_token(self._rest_bearer())
        response = self._sender.send(
            "POST",
            f"{self._config.api_url}/actions/runner-registration",
            headers={"Authorization": f"RemoteAuth {registration_token}"},
            json_body={"url": self._config.config_url, "runner_event": "register"},
            # A fresh registration token can take a moment to become valid.
            also_retry=(401, 403),
        )
        if not response.is_success:
            raise error_from_response(
                response, message="admin connection refused", redactor=self._sender.redactor
            )
        body = as_object(
            decode_json(response.content, what="admin connection"), what="admin connection"
        )
        url, token = body.get("url"), body.get("token")
        if not isinstance(url, str) or not url:
            raise MessageParseError("admin connection: field 'url' is missing or empty")
        if not is_valid_url(url):
            raise MessageParseError("admin connection: field 'url' is not a valid URL")
        if not isinstance(token, str) or not token:
            raise MessageParseError("admin connection: field 'token' is missing or empty")
        self._sender.redactor.add([token])
        return AdminConnection(url=url, token=token, expires_at=jwt_expiry(token))

    def _registration_token(self, bearer: str) -> str:
        response = self._sender.send(
            "POST",
            self._config.api_url + self._config.registration_token_path,
            headers={"Authorization": f"Bearer {bearer}", "Accept": GITHUB_JSON},
        )
        return self._token_from(response, what="registration token").token

    def _rest_bearer(self) -> str:
        if isinstance(self._credentials, PatCredentials):
            return self._credentials.token
        cached = self._installation_token
        now = self._clock()
        if cached and (
            cached.expires_at is None or cached.expires_at - now > REFRESH_MARGIN_SECONDS
        ):
            return cached.token
        app_token = app_jwt(self._credentials, now=now)
        self._sender.redactor.add([app_token])
        response = self._sender.send(
            "POST",
            f"{self._config.api_url}/app/installations/"
            f"{self._credentials.installation_id}/access_tokens",
            headers={"Authorization": f"Bearer {app_token}", "Accept": GITHUB_JSON},
        )
        self._installation_token = self._token_from(response, what="installation access token")
        return self._installation_token.token

    def _token_from(self, response: httpx.Response, *, what: str) -> BearerToken:
        if response.status_code != 201:
            raise error_from_response(
                response, message=f"{what} request failed", redactor=self._sender.redactor
            )
        body = as_object(decode_json(response.content, what=what), what=what)
        token = body.get("token")
        if not isinstance(token, str) or not token:
            raise MessageParseError(f"{what}: field 'token' is missing or empty")
        self._sender.redactor.add([token])
        return BearerToken(token=token, expires_at=parse_expires_at(body.get("expires_at")))
