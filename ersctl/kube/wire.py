"""Small facts about talking to the API server, shared by reader, writer and events."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from ersctl.errors import KubeError

MERGE_PATCH: Final = "application/merge-patch+json"
"""Always named explicitly: older clients picked JSON patch for custom objects, and
this client rewrites a JSON-patch content type with a dict body to strategic merge,
which custom resources reject."""


def json_body(
    resp: Any,
    *,
    action: str,
    object_hook: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON object in a raw (``_preload_content=False``) response; ``object_hook``
    as in ``json.loads``. Raises :class:`KubeError` when the body is not a JSON object.
    """
    try:
        doc = json.loads(resp.data, object_hook=object_hook)
    except ValueError as exc:
        raise KubeError(action, status=int(resp.status), reason="BadResponse") from exc
    if not isinstance(doc, dict):
        raise KubeError(action, status=int(resp.status), reason="BadResponse")
    return doc
