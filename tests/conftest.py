"""Fixtures shared by every test directory: the embedded API server and a client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ersctl.testing.apiserver import ApiServer


@pytest.fixture
def apiserver() -> Iterator[ApiServer]:
    """A started :class:`ApiServer` (project CRDs loaded, GC on), stopped afterwards."""
    with ApiServer() as server:
        yield server


@pytest.fixture
def kube_client(apiserver: ApiServer) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` configured for ``apiserver``."""
    client = apiserver.api_client()
    try:
        yield client
    finally:
        client.close()
