"""The one exception tree of Kubernetes access, shared by both programs. Pure: no client
library is imported here (``ersctl.kube.calls`` builds these errors from the client's).

::

    ersctl.platform.errors.Failure
     +-- KubeError              an API server call failed (what we tried, status, reason)
     |    +-- ForbiddenError    403 (RBAC refused it)
     |    +-- NotFoundError     404
     |    +-- ConflictError     409 (stale resourceVersion precondition, or already exists)
     |    +-- GoneError         410 (a watch resumed from a resourceVersion the server compacted)
     +-- NotLeaderError         a write was attempted after this process lost its leader lease
     +-- PrunedFieldsError      the served CRDs drop fields the guard writes (exit 2)

"No response" (refused, reset, timed out) is ``status is None``, as in the GitHub
client's ``RequestError``; its message names the server. Messages carry the action,
the HTTP status and the server's reason, and a response body cut to a few hundred
characters; nothing the client sends (headers, tokens) is included.
"""

from __future__ import annotations

from collections.abc import Callable

from ersctl.platform.errors import Failure


class KubeError(Failure):
    """A Kubernetes API call failed.

    ``status`` is the HTTP status, or None when no response arrived; ``reason`` is the
    server's ``Status.reason`` (``NotFound``, ``Conflict``...) or, without a response,
    what went wrong (``connection refused``); ``action`` says what was attempted, e.g.
    ``"patch pods/ns/name/status"``.
    """

    def __init__(self, action: str, *, status: int | None, reason: str, message: str = "") -> None:
        text = f"{action}: HTTP {status} {reason}" if status is not None else f"{action}: {reason}"
        super().__init__(f"{text}: {message}" if message else text)
        self.action = action
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def transient(self) -> bool:
        """Worth retrying: no response, 409, 429 or a 5xx."""
        return self.status is None or self.status in (409, 429) or self.status >= 500


class ForbiddenError(KubeError):
    """403: the controller's RBAC does not allow the call."""


class NotFoundError(KubeError):
    """404: the object (or its namespace) does not exist."""


class ConflictError(KubeError):
    """409: a resourceVersion precondition failed, or the name is taken."""


class GoneError(KubeError):
    """410: the requested resourceVersion is too old; relist."""


class NotLeaderError(Failure):
    """This process no longer holds the leader lease, so it must not write."""


def check_fence(fence: Callable[[], bool] | None, action: str) -> None:
    """Raise :class:`NotLeaderError` naming ``action`` when ``fence`` answers False
    (None: no fence, always pass). Asked before every fenced write."""
    if fence is not None and not fence():
        raise NotLeaderError(f"{action}: refused, this process no longer holds the lease")
