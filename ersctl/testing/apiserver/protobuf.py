"""Decoding the protobuf request bodies kubectl sends for a few built-in types.

``kubectl create namespace|secret|configmap|serviceaccount`` (typed clients) send
``application/vnd.kubernetes.protobuf``: the magic ``k8s\\x00`` then a
``runtime.Unknown`` envelope (typeMeta, raw object bytes). Without the generated
schemas only a handful of messages can be mapped to JSON; they are listed here by
field number (k8s.io/api core/v1 and apimachinery meta/v1 ``generated.proto``).
Anything else raises :class:`UnsupportedProtobuf` (the caller answers 415).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

JsonObject = dict[str, Any]
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"


class UnsupportedProtobuf(ValueError):
    """The body is not protobuf this server can map to JSON."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise UnsupportedProtobuf("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise UnsupportedProtobuf("truncated field")
            yield number, data[pos : pos + length]
            pos += length
        else:
            raise UnsupportedProtobuf(f"unexpected wire type {wire}")


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise UnsupportedProtobuf("expected a string field")
    return value.decode("utf-8")


def _message(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise UnsupportedProtobuf("expected a message field")
    return value


def _map_entry(value: int | bytes) -> tuple[str, bytes]:
    entry = dict(fields(_message(value)))
    return _text(entry.get(1, b"")), _message(entry.get(2, b""))


def _owner_reference(data: bytes) -> JsonObject:
    names = {1: "kind", 3: "name", 4: "uid", 5: "apiVersion"}
    flags = {6: "controller", 7: "blockOwnerDeletion"}
    ref: JsonObject = {}
    for number, value in fields(data):
        if number in names:
            ref[names[number]] = _text(value)
        elif number in flags:
            ref[flags[number]] = bool(value)
    return ref


def _object_meta(data: bytes) -> JsonObject:
    strings = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    meta: JsonObject = {}
    for number, value in fields(data):
        if number in strings and _text(value):
            meta[strings[number]] = _text(value)
        elif number in (11, 12):
            key, raw = _map_entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = raw.decode()
        elif number == 13:
            meta.setdefault("ownerReferences", []).append(_owner_reference(_message(value)))
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(value))
    return meta


def _secret(data: bytes) -> JsonObject:
    obj: JsonObject = {}
    for number, value in fields(data):
        if number == 1:
            obj["metadata"] = _object_meta(_message(value))
        elif number in (2, 4):
            key, raw = _map_entry(value)
            if number == 2:
                obj.setdefault("data", {})[key] = base64.b64encode(raw).decode()
            else:
                obj.setdefault("stringData", {})[key] = raw.decode()
        elif number == 3 and _text(value):
            obj["type"] = _text(value)
        elif number == 5:
            obj["immutable"] = bool(value)
    return obj


def _config_map(data: bytes) -> JsonObject:
    obj: JsonObject = {}
    for number, value in fields(data):
        if number == 1:
            obj["metadata"] = _object_meta(_message(value))
        elif number in (2, 3):
            key, raw = _map_entry(value)
            section, text = (
                ("data", raw.decode())
                if number == 2
                else ("binaryData", base64.b64encode(raw).decode())
            )
            obj.setdefault(section, {})[key] = text
        elif number == 4:
            obj["immutable"] = bool(value)
    return obj


def _namespace(data: bytes) -> JsonObject:
    obj: JsonObject = {}
    for number, value in fields(data):
        if number == 1:
            obj["metadata"] = _object_meta(_message(value))
        elif number == 2:
            finalizers = [_text(v) for n, v in fields(_message(value)) if n == 1]
            if finalizers:
                obj["spec"] = {"finalizers": finalizers}
    return obj


def _service_account(data: bytes) -> JsonObject:
    obj: JsonObject = {}
    for number, value in fields(data):
        if number == 1:
            obj["metadata"] = _object_meta(_message(value))
        elif number == 4:
            obj["automountServiceAccountToken"] = bool(value)
    return obj


_DECODERS: dict[tuple[str, str], Callable[[bytes], JsonObject]] = {
    ("v1", "ServiceAccount"): _service_account,
    ("v1", "Secret"): _secret,
    ("v1", "ConfigMap"): _config_map,
    ("v1", "Namespace"): _namespace,
}


def decode(body: bytes) -> JsonObject:
    """The JSON form of a protobuf-encoded Secret, ConfigMap, Namespace or
    ServiceAccount.

    Raises :class:`UnsupportedProtobuf` for anything else or a malformed body."""
    if not body.startswith(_MAGIC):
        raise UnsupportedProtobuf("missing the k8s protobuf prefix")
    envelope = dict(fields(body[len(_MAGIC) :]))
    type_meta = dict(fields(_message(envelope.get(1, b""))))
    api_version, kind = _text(type_meta.get(1, b"")), _text(type_meta.get(2, b""))
    decoder = _DECODERS.get((api_version, kind))
    if decoder is None:
        raise UnsupportedProtobuf(f"protobuf bodies are not supported for {kind or 'this kind'}")
    return {"apiVersion": api_version, "kind": kind, **decoder(_message(envelope.get(2, b"")))}
