"""``/openapi/v2`` as protobuf: the form kubectl asks for (``Accept:
application/com.github.proto-openapi.spec.v2@v1.0+protobuf``, gnostic's
``openapi.v2.Document``) when it validates what the OpenAPI v3 documents do not cover,
such as the items of a ``kind: List``. Its client takes a 406 for "no such endpoint"
and then fails, so the real server, which serves this form, never answers it so.

The document carries what kubectl reads from it: ``swagger``, ``info`` and every
definition (type, properties, items, ``additionalProperties``, ``$ref``, ``allOf``,
``required``, ``enum``, bounds, descriptions and the ``x-kubernetes-*`` extensions as
YAML); its paths are left out (kubectl's schema readers never look at them). Field
numbers are gnostic's ``OpenAPIv2.proto``. Pure.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

JsonObject = dict[str, Any]

MEDIA_TYPES = (
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
)
CONTENT_TYPE = MEDIA_TYPES[1]
"""What the answer says it is, whichever was asked for: "@" is no valid media type
character (Go's mime parser, kubectl's, refuses it)."""


def negotiate(accept: str) -> str | None:
    """The media type to answer ``/openapi/v2`` in for an ``Accept`` header, as
    kube-openapi chooses: the first acceptable clause by preference (``q``), JSON for a
    wildcard or none; None when nothing offered is acceptable (406)."""
    clauses: list[tuple[float, int, str]] = []
    for index, clause in enumerate((accept or "*/*").split(",")):
        media, *parameters = (part.strip() for part in clause.split(";"))
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        clauses.append((-weight, index, media.lower()))
    for _, _, media in sorted(clauses):
        if media in ("*/*", "application/*", "application/json"):
            return "application/json"
        if media in MEDIA_TYPES:
            return CONTENT_TYPE
    return None


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s take ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _string(number: int, text: str) -> bytes:
    return _field(number, text.encode())


def _integer(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(int(value))


def _double(number: int, value: float) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", float(value))


def _any(value: Any) -> bytes:
    """gnostic's ``Any``: the value as YAML (JSON is YAML)."""
    return _string(2, json.dumps(value))


def _named(name: str, payload: bytes) -> bytes:
    return _string(1, name) + _field(2, payload)


_Encode = Callable[[int, Any], bytes]
_SCALARS: dict[str, tuple[int, _Encode]] = {
    "$ref": (1, _string),
    "format": (2, _string),
    "title": (3, _string),
    "description": (4, _string),
    "multipleOf": (6, _double),
    "maximum": (7, _double),
    "exclusiveMaximum": (8, _integer),
    "minimum": (9, _double),
    "exclusiveMinimum": (10, _integer),
    "maxLength": (11, _integer),
    "minLength": (12, _integer),
    "pattern": (13, _string),
    "maxItems": (14, _integer),
    "minItems": (15, _integer),
    "uniqueItems": (16, _integer),
    "maxProperties": (17, _integer),
    "minProperties": (18, _integer),
    "discriminator": (26, _string),
    "readOnly": (27, _integer),
}


def schema(node: JsonObject) -> bytes:
    """One ``openapi.v2.Schema``."""
    out = bytearray()
    for key, value in node.items():
        if key in _SCALARS:
            number, encode = _SCALARS[key]
            out += encode(number, value)
        elif key in ("default", "example"):
            out += _field(5 if key == "default" else 30, _any(value))
        elif key == "required":
            out += b"".join(_string(19, name) for name in value)
        elif key == "enum":
            out += b"".join(_field(20, _any(item)) for item in value)
        elif key == "additionalProperties":
            inner = _integer(2, value) if isinstance(value, bool) else _field(1, schema(value))
            out += _field(21, inner)
        elif key == "type":
            types = value if isinstance(value, list) else [value]
            out += _field(22, b"".join(_string(1, t) for t in types))
        elif key == "items":
            items = value if isinstance(value, list) else [value]
            out += _field(23, b"".join(_field(1, schema(item)) for item in items))
        elif key == "allOf":
            out += b"".join(_field(24, schema(item)) for item in value)
        elif key == "properties":
            named = b"".join(_field(1, _named(k, schema(v))) for k, v in value.items())
            out += _field(25, named)
        elif key.startswith("x-"):
            out += _field(31, _named(key, _any(value)))
    return bytes(out)


def document(doc: JsonObject) -> bytes:
    """The ``openapi.v2.Document`` of a Swagger 2.0 document (its paths left out)."""
    info = doc.get("info") or {}
    definitions = b"".join(
        _field(1, _named(name, schema(node)))
        for name, node in (doc.get("definitions") or {}).items()
    )
    return (
        _string(1, str(doc.get("swagger", "2.0")))
        + _field(
            2, _string(1, str(info.get("title", ""))) + _string(2, str(info.get("version", "")))
        )
        + _field(9, definitions)
    )
