"""ARC's short hashes and the names it generates with them.

:func:`fnv_hash` is FNV-1a (32 bit), its decimal digits spelled in Kubernetes' safe
alphabet (``k8s.io/apimachinery``'s ``rand.SafeEncodeString``), as ARC's
``hash.FNVHashString`` spells them in generated names and ``pod-template-hash``
values. Equal inputs give equal hashes in every process. Pure.
"""

from __future__ import annotations

import json
from typing import Final

_SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
"""Kubernetes' alphabet for generated label values (no vowels: no accidental words)."""


def fnv_hash(data: bytes) -> str:
    """FNV-1a (32 bit) of ``data`` in the safe alphabet (up to 10 characters)."""
    digest = 0x811C9DC5
    for byte in data:
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(char) % len(_SAFE_ALPHABET)] for char in str(digest))


def proxy_secret_name(namespace: str, set_name: str) -> str:
    """ARC's name of an EphemeralRunnerSet's proxy Secret:
    ``<set>-<first 8 of the namespace's hash>-runner-proxy``."""
    return f"{set_name}-{fnv_hash(namespace.encode())[:8]}-runner-proxy"


def listener_name(namespace: str, runner_group: str, config_url: str, scale_set_name: str) -> str:
    """ARC's name of an AutoscalingRunnerSet's AutoscalingListener (ARC >= 0.13.1, its
    ``scaleSetListenerName``): ``<set>-<first 8 of the hash of
    "<namespace>@<spec.runnerGroup>@<spec.githubConfigUrl>">-listener``, the group and URL
    as written in the spec (an unset group is ""). Two scale sets of one name in one
    namespace for another group or organization get two names (ARC puts every listener
    in the controller's namespace, where the namespace-only hash collided)."""
    suffix = fnv_hash(f"{namespace}@{runner_group}@{config_url}".encode())[:8]
    return f"{scale_set_name}-{suffix}-listener"


def legacy_listener_name(namespace: str, scale_set_name: str) -> str:
    """``<set>-<first 8 of the namespace's hash>-listener``: the listener's name before
    ARC 0.13.1, and the name of its ServiceAccount, Role and RoleBinding until ARC 0.15
    named those after the listener itself."""
    return f"{scale_set_name}-{fnv_hash(namespace.encode())[:8]}-listener"


def content_hash(value: object) -> str:
    """:func:`fnv_hash` of ``value``'s canonical JSON (sorted keys, no spaces): equal
    JSON gives equal hashes whatever the key order. ARC hashes Go's rendering of its
    structs instead, so the two never match: a hash is only compared with one this
    project wrote."""
    return fnv_hash(json.dumps(value, sort_keys=True, separators=(",", ":")).encode())
