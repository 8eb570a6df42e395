"""Service clients per runner credentials Secret: shared, rotated, never closed under a
reconcile that still uses them."""

from __future__ import annotations

import base64
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from ersctl.api import EphemeralRunner, FieldError
from ersctl.credentials import Credentials
from ersctl.runner.service import SecretRunnerServices
from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import ActionsError
from ghalistener.actions.retry import RetryPolicy


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
        token = base64.b64encode(b"ghp_x").decode()
        return {"metadata": {"resourceVersion": str(self.version)}, "data": {"github_token": token}}


class Factory:
    def __init__(self, *, delay: float = 0.0) -> None:
        self.delay = delay
        self.built: list[ActionsClient] = []
        self.lock = threading.Lock()

    def __call__(self, config_url: str, credentials: Credentials) -> ActionsClient:
        assert isinstance(credentials, PatCredentials)
        time.sleep(self.delay)  # lets racing threads overtake a build in progress
        client = ActionsClient(
            config_url=config_url,
            credentials=credentials,
            retry=RetryPolicy(max_retries=0),
            # No network: every request fails with a 500, which is all is_closed needs.
            transport=httpx.MockTransport(lambda request: httpx.Response(500)),
        )
        with self.lock:
            self.built.append(client)
        return client


def runner(credentials_ref: str = "creds") -> EphemeralRunner:
    return EphemeralRunner(
        {
            "metadata": {"name": "r", "namespace": "ci"},
            "spec": {
                "githubConfigUrl": "https://github.com/org",
                "githubConfigSecret": credentials_ref,
            },
        }
    )


def is_closed(client: ActionsClient) -> bool:
    """A closed client refuses to send; an open one sends (and gets the mock's 500)."""
    try:
        client.get_runner_by_name("probe")
    except RuntimeError:
        return True
    except ActionsError:
        return False
    raise AssertionError("the mock transport answers 500 to everything")


def test_concurrent_reconciles_share_one_client_and_none_is_closed_under_them() -> None:
    secrets, factory = Secrets(together=8), Factory(delay=0.05)
    services = SecretRunnerServices(get_secret=secrets.get, client_factory=factory)
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda _: services.for_runner(runner()), range(8)))
    assert len(factory.built) == 1
    assert all(client is factory.built[0] for client in got)
    assert not is_closed(factory.built[0])
    services.close()
    assert is_closed(factory.built[0])


def test_a_rotated_secret_gets_a_new_client_and_the_old_one_stays_usable_until_close() -> None:
    secrets, factory = Secrets(), Factory()
    services = SecretRunnerServices(get_secret=secrets.get, client_factory=factory)
    old = services.for_runner(runner())
    secrets.version = 2
    new = services.for_runner(runner())
    assert new is not old
    assert not is_closed(old)  # a reconcile may still be in the middle of a call with it
    services.close()
    assert is_closed(old) and is_closed(new)


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        pytest.param(runner("missing"), "spec.githubConfigSecret", id="absent Secret"),
        pytest.param(runner(""), "spec.githubConfigSecret", id="no Secret named"),
    ],
)
def test_unusable_credentials_name_the_field(doc: EphemeralRunner, field: str) -> None:
    services = SecretRunnerServices(get_secret=Secrets().get, client_factory=Factory())
    with pytest.raises(FieldError) as err:
        services.for_runner(doc)
    assert err.value.path == field
