"""The one exception tree of ``ersctl``, and the one boundary that builds it.

::

    ErsctlError
     +-- KubeError              an API server call failed (status, reason, what we tried)
     |    +-- NotFoundError     404
     |    +-- ConflictError     409 (stale resourceVersion precondition, or already exists)
     |    +-- GoneError         410 (a watch resumed from a resourceVersion the server compacted)
     +-- NotLeaderError         a write was attempted after this process lost its leader lease

``kubernetes.client.ApiException`` and the transport errors underneath it (urllib3)
never leave ``ersctl.kube``: every call to the API server runs inside :func:`kube_call`,
which translates them with ``raise ... from exc``. Messages carry the action, the HTTP
status and the server's reason, and a response body cut to a few hundred characters;
nothing the client sends (headers, tokens) is included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

_BODY_LIMIT: Final = 256


class ErsctlError(Exception):
    """Base of every error ``ersctl`` raises on purpose."""


class KubeError(ErsctlError):
    """A Kubernetes API call failed.

    ``status`` is the HTTP status (0 when no response arrived: refused, reset, timed
    out); ``reason`` is the server's ``Status.reason`` (``NotFound``, ``Conflict``...)
    or the transport's error class; ``action`` says what was attempted, e.g.
    ``"patch ephemeralrunnersets/ns/name/status"``.
    """

    def __init__(self, action: str, *, status: int, reason: str, message: str = "") -> None:
        text = f"{action}: HTTP {status} {reason}" if status else f"{action}: {reason}"
        super().__init__(f"{text}: {message}" if message else text)
        self.action = action
        self.status = status
        self.reason = reason
        self.message = message


class NotFoundError(KubeError):
    """404: the object (or its namespace) does not exist."""


class ConflictError(KubeError):
    """409: a resourceVersion precondition failed, or the name is taken."""


class GoneError(KubeError):
    """410: the requested resourceVersion is too old; relist."""


class NotLeaderError(ErsctlError):
    """This process no longer holds the leader lease, so it must not write."""


def check_fence(fence: Callable[[], bool] | None, action: str) -> None:
    """Raise :class:`NotLeaderError` naming ``action`` when ``fence`` answers False
    (None: no fence, always pass). Asked before every fenced write."""
    if fence is not None and not fence():
        raise NotLeaderError(f"{action}: refused, this process no longer holds the lease")


_BY_STATUS: Final[dict[int, type[KubeError]]] = {
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
}


def translate(exc: ApiException | urllib3.exceptions.HTTPError, *, action: str) -> KubeError:
    """The :class:`KubeError` for a client-library error (the one translation point)."""
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        reason, message = _status_details(exc)
        return _BY_STATUS.get(status, KubeError)(
            action, status=status, reason=reason, message=message
        )
    return KubeError(action, status=0, reason=type(exc).__name__, message=_cut(str(exc)))


@contextmanager
def kube_call(action: str) -> Iterator[None]:
    """Run an API call, re-raising client-library errors as :class:`KubeError`."""
    try:
        yield
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        raise translate(exc, action=action) from exc


def _status_details(exc: ApiException) -> tuple[str, str]:
    """(reason, message) from a ``metav1.Status`` body, falling back to the HTTP reason."""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    reason = str(exc.reason or "")
    if not body:
        return reason, ""
    try:
        doc = json.loads(body)
    except ValueError:
        return reason, _cut(body)
    if not isinstance(doc, dict):
        return reason, _cut(body)
    return str(doc.get("reason") or reason), _cut(str(doc.get("message") or ""))


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _BODY_LIMIT else text[: _BODY_LIMIT - 3] + "..."
