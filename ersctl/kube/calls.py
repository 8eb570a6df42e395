"""The one boundary between the Kubernetes client library and the rest of both programs.

Every call to the API server runs inside :func:`kube_call`, which translates
``kubernetes.client.ApiException`` and the transport errors underneath it (urllib3,
sockets) into ``ersctl.kube.errors.KubeError`` with ``raise ... from exc``; nothing
else imports those exception types. Also here: the small facts of the wire that the
generic client (``ersctl.kube.client``), the informers, the events and the leader
election share.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import urllib3.exceptions
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ersctl.kube.errors import ConflictError, ForbiddenError, GoneError, KubeError, NotFoundError

MERGE_PATCH: Final = "application/merge-patch+json"
"""Always named explicitly: older clients picked JSON patch for custom objects, and
this client rewrites a JSON-patch content type with a dict body to strategic merge,
which custom resources reject."""
JSON_PATCH: Final = "application/json-patch+json"
"""A list of operations (``test`` among them): the body must be a list."""

_BODY_LIMIT: Final = 256
_BY_STATUS: Final[dict[int, type[KubeError]]] = {
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
}
# urllib3 prefixes its messages with object reprs ("<...HTTPConnection object at 0x..>: ",
# "HTTPConnectionPool(host='h', port=1): ", "HTTPConnection(host='h', port=1): "). The
# server is named on its own.
_REPR_PREFIX: Final = re.compile(r"^(?:<[^>]*>|\w+\([^)]*\)):\s*")


def server_of(api_client: client.ApiClient) -> str:
    """The API server's URL an ``ApiClient`` talks to, for messages."""
    return str(api_client.configuration.host or "")


def translate(exc: BaseException, *, action: str, server: str = "") -> KubeError:
    """The :class:`KubeError` for a client-library error (the one translation point).

    ``server`` (a URL) is named when no response arrived.
    """
    if isinstance(exc, ApiException) and exc.status:
        status = int(exc.status)
        reason, message = _status_details(exc)
        return _BY_STATUS.get(status, KubeError)(
            action, status=status, reason=reason, message=message
        )
    # No response: a refused or reset connection, a timeout, a TLS failure (which the
    # client reports as an ApiException with status 0).
    where = f"no response from {server}" if server else "no response"
    return KubeError(action, status=None, reason=where, message=_cause(exc))


@contextmanager
def kube_call(action: str, *, server: str = "") -> Iterator[None]:
    """Run an API call, re-raising client-library errors as :class:`KubeError`."""
    try:
        yield
    except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
        raise translate(exc, action=action, server=server) from exc


def json_body(
    resp: Any,
    *,
    action: str,
    object_hook: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    server: str = "",
) -> dict[str, Any]:
    """The JSON object in a raw (``_preload_content=False``) response; ``object_hook``
    as in ``json.loads``. Raises :class:`KubeError` when the body is not a JSON object,
    or when the connection breaks while it is read (the body arrives after the call
    returned, outside its :func:`kube_call`)."""
    with kube_call(action, server=server):
        data = resp.data
    try:
        doc = json.loads(data, object_hook=object_hook)
    except ValueError as exc:
        raise KubeError(action, status=int(resp.status), reason="BadResponse") from exc
    if not isinstance(doc, dict):
        raise KubeError(action, status=int(resp.status), reason="BadResponse")
    return doc


def _cause(exc: BaseException) -> str:
    """The innermost useful words of a transport error: ``[Errno 111] Connection refused``."""
    if isinstance(exc, ApiException):
        return _cut(str(exc.reason or type(exc).__name__))
    inner: BaseException = exc
    while isinstance(inner, urllib3.exceptions.MaxRetryError) and inner.reason is not None:
        inner = inner.reason
    # Some carry (connection, message) or (message, cause) as their args: the message
    # is what to show.
    words = next((arg for arg in inner.args if isinstance(arg, str)), str(inner))
    text = _REPR_PREFIX.sub("", words).removeprefix("Failed to establish a new connection: ")
    return _cut(text or type(inner).__name__)


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
