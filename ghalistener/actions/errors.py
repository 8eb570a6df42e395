"""The one exception tree of the GitHub scale-set client.

::

    ActionsError (an ersctl.platform.errors.Failure: exit 1 at either command line)
    +-- ConfigUrlError               the configuration URL is not an org, repo or enterprise URL
    +-- CredentialsError             a credential is unusable (e.g. a private key that is no PEM)
    +-- ProxySettingsError           a proxy URL is no http(s) URL
    +-- RootCaError                  a CA bundle to trust holds no PEM certificate
    +-- MessageParseError            the service sent a body we cannot understand
    +-- RequestError                 an HTTP exchange failed (status is None: no response at all)
        +-- RateLimitedError         refused for the rate limit (429, or 403 with a limit reset)
        +-- JobStillRunningError     remove-runner refused: the runner is busy
        +-- RunnerNotFoundError      the runner does not exist (any more)
        +-- RunnerExistsError        a runner with that name is already registered
        +-- MessageQueueTokenExpiredError   401 from the message queue or acquire-jobs
        +-- SessionConflictError     409 on session create: another listener holds the scale set
        +-- SessionNotFoundError     404 on session refresh / message queue / ack

httpx errors never escape the client: they are translated at one boundary
(``ghalistener.actions.transport``) with ``raise ... from``. No exception text
ever contains a secret: URLs are redacted and bodies are cut to a short excerpt.
"""

from __future__ import annotations

from ersctl.platform.errors import Failure

BODY_EXCERPT_LIMIT = 256


class ActionsError(Failure):
    """Base class of every error raised by ``ghalistener.actions``."""


class ConfigUrlError(ActionsError):
    """The GitHub configuration URL is not one of the accepted forms."""


class CredentialsError(ActionsError):
    """A credential is unusable (for example a GitHub App private key that is not PEM)."""


class ProxySettingsError(ActionsError):
    """A proxy setting cannot be used (a URL that is no ``http://`` or ``https://`` URL).

    The message says what is wrong with the URL and never quotes its credentials.
    """


class RootCaError(ActionsError):
    """The CA bundle to trust (``server_root_ca``, a set's ``githubServerTLS``) holds no
    PEM certificate; ``reason`` is what the TLS library said."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class MessageParseError(ActionsError):
    """The service answered with a body that does not have the expected shape.

    The message names the field (or the problem) so an operator can tell what was wrong.
    """


class RequestError(ActionsError):
    """An HTTP exchange with GitHub or the actions service failed.

    Attributes are safe to log: ``url`` has credentials and query secrets removed,
    ``body`` is an excerpt of at most ``BODY_EXCERPT_LIMIT`` characters.
    ``status`` is None when no response arrived (connection or read failure).
    """

    def __init__(
        self,
        message: str,
        *,
        method: str,
        url: str,
        status: int | None = None,
        activity_id: str | None = None,
        github_request_id: str | None = None,
        type_name: str | None = None,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.message = message
        self.method = method
        self.url = url
        self.status = status
        self.activity_id = activity_id
        self.github_request_id = github_request_id
        self.type_name = type_name
        self.body = body

    def __str__(self) -> str:
        parts = [f"{self.method} {self.url}"]
        parts.append(f"status {self.status}" if self.status is not None else "no response")
        if self.activity_id:
            parts.append(f"ActivityId {self.activity_id}")
        if self.github_request_id:
            parts.append(f"X-GitHub-Request-Id {self.github_request_id}")
        return f"{self.message} ({', '.join(parts)})"


class RateLimitedError(RequestError):
    """The service refused the call for its rate limit. ``retry_after``: seconds until
    it says the limit resets (``Retry-After``, ``X-RateLimit-Reset``), None when it
    does not say."""


class JobStillRunningError(RequestError):
    """The service refused to remove a runner because it is running a job."""


class RunnerNotFoundError(RequestError):
    """The runner is not registered with the service."""


class RunnerExistsError(RequestError):
    """A runner with the requested name is already registered."""


class MessageQueueTokenExpiredError(RequestError):
    """The message-queue access token was rejected (401): refresh the session."""


class SessionConflictError(RequestError):
    """Another message session is active for the scale set (409 on create)."""


class SessionNotFoundError(RequestError):
    """The message session no longer exists (404): create a new one."""
