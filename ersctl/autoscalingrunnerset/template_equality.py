"""Semantic equality of runner specs: equal when Kubernetes and ARC read them alike. Pure.

ARC's controller builds an EphemeralRunnerSet's runner spec from typed Go structs, and
Go's JSON encoder writes what a struct holds rather than what a user wrote, so the
same template reaches the API server in another spelling:

- a struct-valued field is written even when empty: ``resources: {}`` on every
  container, the template's ``metadata: {creationTimestamp: null}``;
- an empty string, list or map of an ``omitempty`` field is dropped (a user's
  ``env: []``, an ``env`` entry's ``value: ""``);
- ``false`` and ``0`` of the few non-pointer ``omitempty`` fields are dropped
  (:data:`ZERO_IS_UNSET`); a pointer field keeps them, and there they mean something
  (``automountServiceAccountToken: false``, ``runAsUser: 0``), so they stay;
- a quantity is rewritten in its canonical form (``1000m`` is ``1``, ``1024Mi`` is
  ``1Gi``).

Compared as text, an ERS that ARC made reads as changed on the first reconcile after
a switch, which advances its ``actionableRevision`` and rebuilds every idle runner for
nothing. :func:`normalized` maps every spelling to one document; :func:`equal`
compares two. A difference in any value that is set (a changed image, an added
environment variable, a removed ``false`` of a pointer field) is still a difference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

ZERO_IS_UNSET: Final = frozenset(
    {"hostNetwork", "hostPID", "hostIPC", "stdin", "stdinOnce", "tty", "readOnly", "hostPort"}
)
"""Fields Kubernetes declares as plain (non-pointer) ``omitempty`` values: Go cannot
tell their ``false``/``0`` from unset, so it drops them, and so do we."""

QUANTITY_MAPS: Final = frozenset({"limits", "requests", "overhead"})
"""Maps whose values are quantities (a container's resources, a Pod's overhead)."""
QUANTITY_FIELDS: Final = frozenset({"sizeLimit"})

_UNSET: Final = object()
_QUANTITY: Final = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+)|([a-zA-Z]*))$")
_SUFFIXES: Final[Mapping[str, Fraction]] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def equal(a: object, b: object) -> bool:
    """Do ``a`` and ``b`` (JSON documents, None for absent) mean the same spec?"""
    return normalized(a) == normalized(b)


def normalized(value: object) -> object:
    """``value`` in the one spelling :func:`equal` compares (see the module docstring),
    a JSON document; None when it is, in effect, unset."""
    result = _normalize(value, key="")
    return None if result is _UNSET else result


def quantity(text: str) -> Fraction | None:
    """The value of a Kubernetes quantity (``500m``, ``1Gi``, ``1e3``), or None when
    ``text`` is not one."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    if exponent is not None:
        return Fraction(number) * Fraction(10) ** int(exponent)
    scale = _SUFFIXES.get(suffix or "")
    return None if scale is None else Fraction(number) * scale


def _normalize(value: object, *, key: str) -> object:
    if value is None or value == "" or value == [] or value == {}:
        return _UNSET
    if isinstance(value, Mapping):
        return _normalize_map(value, quantities=key in QUANTITY_MAPS)
    if isinstance(value, list):
        # Positions matter in a list: an element is kept even when it is empty.
        items = [_normalize(item, key="") for item in value]
        return [{} if item is _UNSET else item for item in items]
    if isinstance(value, bool):
        return _UNSET if (value is False and key in ZERO_IS_UNSET) else value
    if isinstance(value, int | float):
        if value == 0 and key in ZERO_IS_UNSET:
            return _UNSET
        return int(value) if float(value).is_integer() else value
    if isinstance(value, str) and key in QUANTITY_FIELDS:
        return _as_quantity(value)
    return value


def _normalize_map(value: Mapping[str, Any], *, quantities: bool) -> object:
    out: dict[str, object] = {}
    for name, item in value.items():
        if quantities and isinstance(item, str | int | float) and not isinstance(item, bool):
            out[name] = _as_quantity(str(item))
            continue
        normal = _normalize(item, key=name)
        if normal is not _UNSET:
            out[name] = normal
    return out or _UNSET


def _as_quantity(text: str) -> object:
    # Its exact value, as JSON (the normalized document is hashed, too).
    parsed = quantity(text)
    return text if parsed is None else {"quantity": str(parsed)}
