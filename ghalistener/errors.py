"""The exception tree of the listener program (the scale-set client has its own).

::

    ListenerError
    +-- ConfigError          the configuration is unusable; ``field`` names the culprit (exit 2)
    +-- KubernetesError      an API-server request failed after its retries (exit 1)
    +-- SessionHeldError     another listener kept the message session through every retry (exit 1)
    +-- MetricsServerError   the metrics port is in use (exit 1; a bad address is a ConfigError)

``kubernetes.client.ApiException`` and urllib3 errors are translated into
KubernetesError at one boundary (``ghalistener.publisher``). Errors of the scale-set
client (``ghalistener.actions.errors.ActionsError``) pass through unchanged. No message
ever contains a secret.
"""

from __future__ import annotations


class ListenerError(Exception):
    """Base class of the listener's own errors."""


class ConfigError(ListenerError):
    """One configuration field is missing or invalid. ``str()`` is one line naming it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class KubernetesError(ListenerError):
    """A request to the Kubernetes API server failed (after retries, where retried).

    ``status`` is the HTTP status, or None when no response arrived.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class SessionHeldError(ListenerError):
    """The service kept answering 409: another listener holds the scale set's session."""


class MetricsServerError(ListenerError):
    """The metrics server could not listen on a valid address (the port is in use).

    A condition of the host, not of the configuration: a restart may succeed, so it is
    a fatal error (exit 1) rather than an invalid value (exit 2).
    """
