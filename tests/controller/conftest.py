"""Fixtures of the controller tests: the real reconciler against the embedded API server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import respx

from ersctl.testing.apiserver import ApiServer
from tests.controller.github import FakeGitHub
from tests.controller.harness import Cluster


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """GitHub's auth chain and runner removal, mocked with respx."""
    with respx.mock(assert_all_called=False) as router:
        fake = FakeGitHub(router)
        fake.install()
        yield fake


@pytest.fixture
def cluster(apiserver: ApiServer, github: FakeGitHub) -> Iterator[Cluster]:
    """The shared API server, informers synced, and the reconciler wired to them."""
    harness = Cluster(apiserver, github)
    try:
        yield harness
    finally:
        harness.close()
