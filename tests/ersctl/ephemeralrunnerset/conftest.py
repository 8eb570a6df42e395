"""Fixtures of the controller tests: the real reconciler against the test's Kubernetes API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import respx

from tests.ersctl.ephemeralrunnerset.github import FakeGitHub
from tests.ersctl.ephemeralrunnerset.harness import Cluster
from tests.kubeapi import KubeApi


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """GitHub's auth chain and runner removal, mocked with respx."""
    with respx.mock(assert_all_called=False) as router:
        fake = FakeGitHub(router)
        fake.install()
        yield fake


@pytest.fixture
def cluster(kube: KubeApi, github: FakeGitHub) -> Iterator[Cluster]:
    """The test's Kubernetes API, informers synced, and the reconciler wired to them."""
    harness = Cluster(kube, github)
    try:
        yield harness
    finally:
        harness.close()
