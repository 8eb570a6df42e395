"""A respx-mocked GitHub for the controller: the PAT auth chain and runner removal."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
import respx

from ersctl.scaleset.clients import controller_client
from ersctl.scaleset.network import DEFAULT_NETWORK, NetworkSettings
from ghalistener.actions.auth import AppCredentials, PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.retry import RetryPolicy

CONFIG_URL = "https://github.com/octo-org"
OTHER_CONFIG_URL = "https://github.com/octo-org/hello-world"
API = "https://api.github.com"
SERVICE = "https://pipelines.actions.test/tenant"
PAT = "ghp_controllerSECRETtoken0123456789"
REGISTRATION_TOKEN = "AREGcontrollerSECRET0987654321"
RUNNERS_PATH = re.compile(r"/tenant/_apis/distributedtask/pools/0/agents/(\d+)$")


@dataclass
class FakeGitHub:
    """Answers ``remove_runner``: 204, or 400 JobStillRunning for ``busy`` runner ids,
    or 404 for ``unknown`` ones. ``removed`` lists every id removed, in order."""

    router: respx.MockRouter
    busy: set[int] = field(default_factory=set)
    unknown: set[int] = field(default_factory=set)
    fail_with: int | None = None
    removed: list[int] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)
    auth_calls: int = 0

    def install(self) -> None:
        admin = jwt.encode({"exp": int(time.time()) + 3600}, "k" * 32, algorithm="HS256")
        for owner in ("orgs/octo-org", "repos/octo-org/hello-world"):
            self.router.post(f"{API}/{owner}/actions/runners/registration-token").mock(
                side_effect=self._registration
            )
        self.router.post(f"{API}/actions/runner-registration").mock(
            return_value=httpx.Response(200, json={"url": SERVICE, "token": admin})
        )
        self.router.delete(url__regex=rf"^{SERVICE}/_apis/distributedtask/pools/0/agents/").mock(
            side_effect=self._remove
        )

    def _registration(self, request: httpx.Request) -> httpx.Response:
        self.auth_calls += 1
        assert request.headers["Authorization"] == f"Bearer {PAT}"
        return httpx.Response(
            201, json={"token": REGISTRATION_TOKEN, "expires_at": "2099-01-01T00:00:00Z"}
        )

    def _remove(self, request: httpx.Request) -> httpx.Response:
        match = RUNNERS_PATH.search(request.url.path)
        assert match is not None
        runner_id = int(match.group(1))
        self.attempts.append(runner_id)
        if self.fail_with is not None:
            return httpx.Response(self.fail_with, json={"message": "service trouble"})
        if runner_id in self.busy:
            body = {"typeName": "JobStillRunningException", "message": "job still running"}
            return httpx.Response(400, content=json.dumps(body).encode())
        if runner_id in self.unknown:
            return httpx.Response(404, json={"typeName": "AgentNotFoundException"})
        self.removed.append(runner_id)
        return httpx.Response(204)


def no_sleep_client(
    config_url: str,
    credentials: PatCredentials | AppCredentials,
    network: NetworkSettings = DEFAULT_NETWORK,
) -> ActionsClient:
    """The production client, with retries that do not sleep (tests inject 5xx)."""
    return controller_client(
        config_url, credentials, network, retry=RetryPolicy(sleep=lambda _: None)
    )


def no_configmaps(namespace: str, name: str) -> dict[str, Any] | None:
    """A ConfigMap getter for services whose objects name no CA: there is none."""
    return None
