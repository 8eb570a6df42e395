"""Private copies of cached documents: a fast deep copy.

The cache's documents are shared by every worker and never mutated; readers get
objects that behave as private copies (copy-on-write views of a kind's hot fields live
with the kind's typed views, e.g. ``ersctl.arcclient.cache``).
"""

from __future__ import annotations

from typing import Any, Final, TypeVar, cast

_Json = TypeVar("_Json")


def json_copy(value: _Json) -> _Json:
    """A deep copy of a JSON document (dicts, lists, scalars).

    About 1.5x faster than a naive recursive copy and 2x faster than copy.deepcopy: it
    needs no memo (JSON has no shared references) and makes no call for scalar leaves,
    which are most of a document. Copying is most of a reconcile's CPU with thousands of
    runners per set, so this matters; a C round trip (marshal) is no faster and would
    hold the GIL for the whole list, stalling the informers and lease renewals.
    """
    return cast(_Json, _copy(value))


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: (_copy(v) if type(v) in _CONTAINERS else v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) if type(v) in _CONTAINERS else v for v in value]
    return value


_CONTAINERS: Final = frozenset((dict, list))
