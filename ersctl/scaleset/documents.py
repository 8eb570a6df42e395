"""Reading the Secrets and ConfigMaps an object names: getters, decoded data, versions.

Both controllers read them uncached (they are not watched), through getters of the
shape ``get(namespace, name) -> document | None``. Messages name keys and objects,
never values. Pure.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from ersctl.scaleset.ports import CredentialsFieldError

DocumentGetter = Callable[[str, str], "Mapping[str, Any] | None"]
"""``get(namespace, name)``: the live Secret (``data`` base64-encoded) or ConfigMap as
JSON, or None when it does not exist."""


def secret_data(secret: Mapping[str, Any], *, where: str, field: str) -> dict[str, str]:
    """The decoded ``data`` and ``stringData`` of a Secret document.

    CredentialsFieldError naming ``field`` (the object's field that named the Secret)
    and ``where`` (``namespace/name``) when a value is not base64-encoded UTF-8.
    """
    values: dict[str, str] = {}
    data = secret.get("data") or {}
    for key, encoded in data.items() if isinstance(data, dict) else ():
        try:
            values[str(key)] = base64.b64decode(str(encoded), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise CredentialsFieldError(
                field, f"Secret {where}: data.{key} is not base64-encoded UTF-8"
            ) from None
    string_data = secret.get("stringData") or {}
    if isinstance(string_data, dict):
        values.update({str(k): str(v) for k, v in string_data.items()})
    return values


def resource_version(document: Mapping[str, Any]) -> str:
    """``metadata.resourceVersion`` ("" when the document has none)."""
    return str((document.get("metadata") or {}).get("resourceVersion") or "")
