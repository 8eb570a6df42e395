"""What a verb takes and answers: the :class:`Call` (a parsed request), a
:class:`Response` or a :class:`WatchResponse`, and the request body decoders."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn

import yaml

from ersctl.crds import SAFE_LOADER
from ersctl.testing.apiserver import errors, protobuf
from ersctl.testing.apiserver.routing import ResourceRequest
from ersctl.testing.apiserver.watching import Bookmarks, Watcher

Query = dict[str, list[str]]


@dataclass(frozen=True, kw_only=True)
class Call:
    """One resource request: what it asks for, its query, body and headers."""

    req: ResourceRequest
    query: Query
    content_type: str = ""
    body: bytes = b""
    accept: str = ""
    user_agent: str = ""

    def one(self, key: str) -> str | None:
        """The first value of query parameter ``key``, or None."""
        values = self.query.get(key)
        return values[0] if values else None

    @property
    def namespace(self) -> str:
        return self.req.namespace or ""

    @property
    def media_type(self) -> str:
        return self.content_type.split(";")[0].strip().lower()


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    warnings: tuple[str, ...] = ()
    """``Warning`` headers (RFC 7234 ``299 - "text"``), as for fields a write dropped."""


@dataclass(frozen=True)
class WatchResponse:
    """A watch stream: ``first`` lines (e.g. an ERROR event) then the watcher's."""

    watcher: Watcher | None
    deadline: float
    first: bytes = b""
    bookmarks: Bookmarks | None = None


def decode_body(body: bytes, content_type: str) -> Any:
    """The request body: JSON, YAML, or protobuf for the few types kubectl's typed
    clients send that way (Secret, ConfigMap, Namespace, ServiceAccount); 415 for
    other protobuf, 400 for a body that does not parse."""
    media = content_type.split(";")[0].strip().lower()
    if media == protobuf.MEDIA_TYPE:
        try:
            return protobuf.decode(body)
        except (protobuf.UnsupportedProtobuf, UnicodeDecodeError) as exc:
            raise errors.unsupported_media_type(
                protobuf.MEDIA_TYPE, ["application/json", "application/yaml"], detail=str(exc)
            ) from None
    if media == "application/yaml":
        return decode_yaml(body)
    return decode_json(body)


def decode_yaml(body: bytes) -> Any:
    """A YAML body (an ``application/apply-patch+yaml`` one among them).

    JSON is YAML, and it is what kubectl sends as ``apply-patch+yaml``: read as JSON
    first, the four CRDs' applies (1.5 MB) cost 8 ms of CPU instead of 290 through
    PyYAML (even with libyaml's parser, PyYAML builds every value in Python). A JSON
    body's numbers are read as kube-apiserver reads them: ``1e3`` is 1000, where PyYAML's
    YAML 1.1 rules would make it the string "1e3" (a YAML body's still are). Anything
    that is not JSON goes to PyYAML."""
    try:
        return _json_loads(body)
    except ValueError:  # UnicodeDecodeError among them
        pass
    try:
        return yaml.load(body, Loader=SAFE_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"the request body is not valid YAML: {exc}") from None


def decode_json(body: bytes) -> Any:
    if not body.strip():
        raise errors.bad_request("the request body is empty")
    try:
        return _json_loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from None


def _json_loads(body: bytes) -> Any:
    """JSON as Go's decoder reads it: Python's extensions ``NaN`` and ``Infinity`` are
    refused (as YAML they are strings)."""
    return json.loads(body, parse_constant=_refuse_nan_and_infinity)


def _refuse_nan_and_infinity(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not JSON")
