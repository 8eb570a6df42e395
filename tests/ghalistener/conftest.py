"""Fixtures for driving the real listener: a respx scale-set service and a builder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import respx

from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.retry import RetryPolicy
from tests.ghalistener.github import CONFIG_URL, PAT, ScaleSetService


@pytest.fixture
def service() -> Iterator[ScaleSetService]:
    """The scale-set service, mounted on respx for the duration of the test."""
    state = ScaleSetService()
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        state.mount(router)
        yield state
        state.release()


@pytest.fixture
def actions(service: ScaleSetService) -> Iterator[ActionsClient]:
    """The real scale-set client (instant retries) talking to ``service``."""
    with ActionsClient(
        config_url=CONFIG_URL,
        credentials=PatCredentials(token=PAT),
        retry=RetryPolicy(sleep=lambda _: None),
    ) as client:
        yield client
