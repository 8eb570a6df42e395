"""Service clients per runner credentials Secret: shared, rotated, never closed under a
reconcile that still uses them, never left open once replaced."""

from __future__ import annotations

import base64
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import httpx
import pytest

from ersctl.api import EphemeralRunner, FieldError
from ersctl.scaleset.clients import SecretRunnerServices
from ersctl.scaleset.network import NetworkSettings
from ersctl.scaleset.ports import ServiceError
from ghalistener.actions.auth import Credentials, PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import ActionsError
from ghalistener.actions.retry import RetryPolicy
from tests.ersctl.ephemeralrunnerset.github import no_configmaps


class Secrets:
    """The credentials Secret as the API server would return it, by resourceVersion."""

    def __init__(self, *, together: int = 1) -> None:
        self.version = 1
        # Holds readers until `together` of them arrived: they then race for the client.
        self._barrier = threading.Barrier(together)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        if name != "creds":
            return None
        self._barrier.wait(timeout=5)
        token = base64.b64encode(b"ghp_x1234567").decode()
        return {"metadata": {"resourceVersion": str(self.version)}, "data": {"github_token": token}}


class Factory:
    def __init__(self, *, delay: float = 0.0) -> None:
        self.delay = delay
        self.built: list[ActionsClient] = []
        self.sent = 0
        self.lock = threading.Lock()

    def __call__(
        self, config_url: str, credentials: Credentials, network: NetworkSettings
    ) -> ActionsClient:
        assert isinstance(credentials, PatCredentials)
        time.sleep(self.delay)  # lets racing threads overtake a build in progress
        client = ActionsClient(
            config_url=config_url,
            credentials=credentials,
            retry=RetryPolicy(max_retries=0),
            # No network: every request fails with a 500, which is all is_closed needs.
            transport=httpx.MockTransport(self._answer),
        )
        with self.lock:
            self.built.append(client)
        return client

    def _answer(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            self.sent += 1
        return httpx.Response(500)


def runner(credentials_ref: str = "creds", url: str = "https://github.com/org") -> EphemeralRunner:
    return EphemeralRunner(
        {
            "metadata": {"name": "r", "namespace": "ci"},
            "spec": {"githubConfigUrl": url, "githubConfigSecret": credentials_ref},
        }
    )


class LooksUpRunners(Protocol):
    """What both a ``RunnerService`` and the ``ActionsClient`` under it can do."""

    def get_runner_by_name(self, name: str) -> object: ...


def reaches_the_transport(service: LooksUpRunners) -> bool:
    """True when a call is sent (the mock's 500 comes back); False when the client is closed."""
    try:
        service.get_runner_by_name("probe")
    except RuntimeError:
        return False
    except (ActionsError, ServiceError):
        return True
    raise AssertionError("the mock transport answers 500 to everything")


def is_closed(client: ActionsClient) -> bool:
    return not reaches_the_transport(client)


def test_concurrent_reconciles_share_one_client_and_none_is_closed_under_them() -> None:
    secrets, factory = Secrets(together=8), Factory(delay=0.05)
    services = SecretRunnerServices(
        get_secret=secrets.get, get_configmap=no_configmaps, client_factory=factory
    )
    all_inside = threading.Barrier(8, timeout=10)

    def reconcile(_: int) -> bool:
        with services.service_for(runner()) as service:
            all_inside.wait()  # every block holds its client while the others race
            return reaches_the_transport(service)

    with ThreadPoolExecutor(max_workers=8) as pool:
        sent = list(pool.map(reconcile, range(8)))

    assert sent == [True] * 8
    # Racing builders may each build one; all but the cached one were closed unused.
    assert [is_closed(client) for client in factory.built].count(False) == 1
    services.close()
    assert all(is_closed(client) for client in factory.built)


def test_a_rotated_secret_gets_a_new_client_and_the_unused_old_one_is_closed_at_once() -> None:
    secrets, factory = Secrets(), Factory()
    services = SecretRunnerServices(
        get_secret=secrets.get, get_configmap=no_configmaps, client_factory=factory
    )
    with services.service_for(runner()) as service:
        assert reaches_the_transport(service)
    secrets.version = 2
    with services.service_for(runner()) as service:
        assert reaches_the_transport(service)

    old, new = factory.built
    assert is_closed(old), "replaced and unused: not kept open until shutdown"
    assert not is_closed(new)
    services.close()
    assert is_closed(new)


MALFORMED = {"metadata": {"resourceVersion": "1"}, "data": {}}


@pytest.mark.parametrize(
    ("doc", "secret", "field"),
    [
        pytest.param(runner("missing"), None, "spec.githubConfigSecret", id="absent Secret"),
        pytest.param(runner(""), None, "spec.githubConfigSecret", id="no Secret named"),
        pytest.param(runner(url=""), None, "spec.githubConfigUrl", id="no config URL"),
        pytest.param(
            runner(url="ftp://x"), None, "spec.githubConfigUrl", id="a config URL that is none"
        ),
        pytest.param(runner(), MALFORMED, "spec.githubConfigSecret", id="a Secret without keys"),
    ],
)
def test_unusable_credentials_name_the_runners_field(
    doc: EphemeralRunner, secret: dict[str, Any] | None, field: str
) -> None:
    secrets = Secrets()
    get = secrets.get if secret is None else (lambda namespace, name: secret)
    services = SecretRunnerServices(
        get_secret=get, get_configmap=no_configmaps, client_factory=Factory()
    )
    with pytest.raises(FieldError) as err, services.service_for(doc):
        pass
    assert err.value.path == field
    assert "ghp_x1234567" not in str(err.value)
