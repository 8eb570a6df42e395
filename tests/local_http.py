"""HTTP to the servers a test runs on loopback: probes, ``/metrics``, the GitHub
simulator's control API.

httpx's module functions (``httpx.get``) build a client per call, and each client loads
a CA bundle (~20 ms of CPU), even for plain ``http://``: the polls that call them every
few milliseconds spent seconds of the suite's CPU on it. These take httpx's arguments
and verify with the one context the product's clients share.
"""

from __future__ import annotations

from typing import Any

import httpx

from ghalistener.actions.transport import default_tls_context


def request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """``httpx.request`` without loading a CA bundle."""
    return httpx.request(method, url, verify=default_tls_context(), **kwargs)


def get(url: str, **kwargs: Any) -> httpx.Response:
    """``httpx.get`` without loading a CA bundle."""
    return request("GET", url, **kwargs)


def client(**kwargs: Any) -> httpx.Client:
    """An ``httpx.Client`` without loading a CA bundle."""
    return httpx.Client(verify=default_tls_context(), **kwargs)
