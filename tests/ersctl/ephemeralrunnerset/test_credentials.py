"""Credentials from the ERS's Secret, and runner removal through the scale-set client."""

from __future__ import annotations

import base64
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from ersctl.api import EphemeralRunner, EphemeralRunnerSet, RunnerID
from ersctl.scaleset.clients import SecretRunnerServices, credentials_from_secret
from ersctl.scaleset.network import NetworkSettings
from ersctl.scaleset.ports import CredentialsFieldError, ServiceError
from ghalistener.actions.auth import AppCredentials, PatCredentials
from ghalistener.actions.client import ActionsClient
from tests.ersctl.ephemeralrunnerset.github import (
    CONFIG_URL,
    OTHER_CONFIG_URL,
    PAT,
    FakeGitHub,
    no_configmaps,
    no_sleep_client,
)
from tests.ersctl.ephemeralrunnerset.objects import RUNNER_SPEC, ers_doc
from tests.polling import eventually

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretKEYmaterial\n-----END RSA PRIVATE KEY-----\n"


def b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def secret(version: str = "1", **data: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "github-config", "namespace": "arc", "resourceVersion": version},
        "data": {key: b64(value) for key, value in data.items()},
    }


@dataclass
class Secrets:
    """An ``ApiReader`` holding only Secrets (the services needs nothing else)."""

    items: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    reads: int = 0

    def get_ers(self, namespace: str, name: str) -> EphemeralRunnerSet | None:
        raise AssertionError("the services reads no ERS")

    def list_owned_runners(self, ers: EphemeralRunnerSet) -> list[EphemeralRunner]:
        raise AssertionError("the services lists no runners")

    def get_runner(self, namespace: str, name: str) -> EphemeralRunner | None:
        raise AssertionError("the services reads no runner")

    def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads += 1
        return self.items.get((namespace, name))


def scale_set(config_url: str = CONFIG_URL) -> EphemeralRunnerSet:
    return EphemeralRunnerSet(ers_doc(runner_spec={**RUNNER_SPEC, "githubConfigUrl": config_url}))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({"github_token": "ghp_x1234567"}, PatCredentials, id="a token"),
        pytest.param(
            {
                "github_app_id": "123",
                "github_app_installation_id": "456",
                "github_app_private_key": PEM,
            },
            AppCredentials,
            id="a GitHub App",
        ),
    ],
)
def test_the_secret_yields_the_credentials_it_holds(data: dict[str, str], expected: type) -> None:
    assert isinstance(credentials_from_secret(secret(**data), where="arc/s"), expected)


@pytest.mark.parametrize(
    ("doc", "complaint"),
    [
        pytest.param(secret(), "no credentials", id="no usable key"),
        pytest.param(
            secret(github_app_id="1", github_app_private_key=PEM),
            "github_app_installation_id: is missing",
            id="a partial GitHub App",
        ),
        pytest.param(
            secret(github_app_id="1", github_app_installation_id="x", github_app_private_key=PEM),
            "github_app_installation_id: must be an integer",
            id="a non-numeric installation id",
        ),
        pytest.param(
            secret(github_app_id="1", github_app_installation_id="2", github_app_private_key="k"),
            "PEM",
            id="a private key that is no PEM",
        ),
        pytest.param(
            {"metadata": {}, "data": {"github_token": "%%%not-base64"}},
            "not base64",
            id="data that is not base64",
        ),
    ],
)
def test_a_malformed_secret_names_the_field_and_never_the_value(
    doc: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(CredentialsFieldError) as caught:
        credentials_from_secret(doc, where="arc/github-config")

    assert caught.value.path == "spec.ephemeralRunnerSpec.githubConfigSecret"
    assert complaint in str(caught.value)
    assert "MIIEsecretKEYmaterial" not in str(caught.value)


def remove(services: SecretRunnerServices, ers: EphemeralRunnerSet, runner_id: int) -> bool:
    """One removal in a block of its own (one Secret read)."""
    with services.service_for(ers) as service:
        return service.remove_runner(RunnerID(runner_id))


def test_removing_a_runner_authenticates_with_the_secret_and_deletes_it_from_the_service(
    github: FakeGitHub,
) -> None:
    services = SecretRunnerServices(
        client_factory=no_sleep_client,
        get_secret=Secrets({("arc", "github-config"): secret(github_token=PAT)}).get_secret,
        get_configmap=no_configmaps,
    )

    assert remove(services, scale_set(), 41) is True
    assert github.removed == [41]


@pytest.mark.parametrize(
    ("busy", "unknown", "expected"),
    [
        pytest.param({41}, set(), False, id="JobStillRunning means keep the runner"),
        pytest.param(set(), {41}, True, id="an unknown runner counts as removed"),
    ],
)
def test_service_answers_that_are_not_failures(
    github: FakeGitHub, busy: set[int], unknown: set[int], expected: bool
) -> None:
    github.busy, github.unknown = busy, unknown
    services = SecretRunnerServices(
        client_factory=no_sleep_client,
        get_secret=Secrets({("arc", "github-config"): secret(github_token=PAT)}).get_secret,
        get_configmap=no_configmaps,
    )

    assert remove(services, scale_set(), 41) is expected
    assert github.removed == []


def test_other_service_errors_are_runner_service_errors_without_the_token(
    github: FakeGitHub,
) -> None:
    github.fail_with = 403
    services = SecretRunnerServices(
        client_factory=no_sleep_client,
        get_secret=Secrets({("arc", "github-config"): secret(github_token=PAT)}).get_secret,
        get_configmap=no_configmaps,
    )

    with pytest.raises(ServiceError) as caught:
        remove(services, scale_set(), 41)

    assert PAT not in str(caught.value)


def test_a_missing_secret_names_the_field_on_entering_the_block(github: FakeGitHub) -> None:
    services = SecretRunnerServices(
        get_secret=Secrets().get_secret, get_configmap=no_configmaps, client_factory=no_sleep_client
    )

    with pytest.raises(CredentialsFieldError, match="Secret arc/github-config not found"):
        services.service_for(scale_set()).__enter__()
    assert github.attempts == []


def test_one_client_per_secret_version(github: FakeGitHub) -> None:
    secrets = Secrets({("arc", "github-config"): secret("1", github_token=PAT)})
    services = SecretRunnerServices(
        get_secret=secrets.get_secret, get_configmap=no_configmaps, client_factory=no_sleep_client
    )

    remove(services, scale_set(), 1)
    remove(services, scale_set(), 2)
    assert github.auth_calls == 1, "an unchanged Secret reuses the client and its tokens"

    secrets.items[("arc", "github-config")] = secret("2", github_token=PAT)
    remove(services, scale_set(), 3)
    assert github.auth_calls == 2, "a new Secret version builds a new client"
    assert github.removed == [1, 2, 3]


def test_one_block_reads_the_secret_once_for_all_its_removals(github: FakeGitHub) -> None:
    secrets = Secrets({("arc", "github-config"): secret(github_token=PAT)})
    services = SecretRunnerServices(
        get_secret=secrets.get_secret, get_configmap=no_configmaps, client_factory=no_sleep_client
    )

    with services.service_for(scale_set()) as service:
        for runner_id in (1, 2, 3):
            service.remove_runner(RunnerID(runner_id))

    assert secrets.reads == 1
    assert github.removed == [1, 2, 3]


def test_sets_sharing_a_secret_with_different_config_urls_each_keep_their_client(
    github: FakeGitHub,
) -> None:
    """Keyed by Secret alone, the two sets replaced each other's client on every call:
    a fresh admin token from GitHub each time, and a retired client per call."""
    secrets = Secrets({("arc", "github-config"): secret(github_token=PAT)})
    services = SecretRunnerServices(
        get_secret=secrets.get_secret, get_configmap=no_configmaps, client_factory=no_sleep_client
    )
    org, other = scale_set(), scale_set(config_url=OTHER_CONFIG_URL)

    for runner_id in range(1, 7):
        remove(services, org if runner_id % 2 else other, runner_id)

    assert github.auth_calls == 2, "one authentication per configuration URL"
    assert github.removed == [1, 2, 3, 4, 5, 6]


@dataclass
class RecordingFactory:
    """Builds production clients (retries without sleeping) and keeps a list of them."""

    built: list[ActionsClient] = field(default_factory=list)

    def __call__(
        self,
        config_url: str,
        credentials: PatCredentials | AppCredentials,
        network: NetworkSettings,
    ) -> Any:
        client = no_sleep_client(config_url, credentials, network)
        self.built.append(client)
        return client


def is_closed(client: ActionsClient) -> bool:
    try:
        client.remove_runner(RunnerID(99))
    except RuntimeError as exc:
        return "closed" in str(exc)
    return False


def test_a_client_replaced_by_a_rotated_secret_is_closed_when_its_last_block_ends(
    github: FakeGitHub,
) -> None:
    secrets = Secrets({("arc", "github-config"): secret("1", github_token=PAT)})
    factory = RecordingFactory()
    services = SecretRunnerServices(
        get_secret=secrets.get_secret, get_configmap=no_configmaps, client_factory=factory
    )

    with services.service_for(scale_set()) as in_flight:
        secrets.items[("arc", "github-config")] = secret("2", github_token=PAT)
        remove(services, scale_set(), 1)  # the rotation replaces the cached client
        assert in_flight.remove_runner(RunnerID(2)) is True, "still usable mid-block"
        assert not is_closed(factory.built[0])
    assert is_closed(factory.built[0]), "closed once its last user left"

    secrets.items[("arc", "github-config")] = secret("3", github_token=PAT)
    remove(services, scale_set(), 3)  # nobody uses version 2's client: closed at once

    assert is_closed(factory.built[1])
    assert not is_closed(factory.built[2])
    assert [runner_id for runner_id in github.removed if runner_id != 99] == [1, 2, 3]


def test_no_secret_value_reaches_the_logs(
    github: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    github.fail_with = 500
    services = SecretRunnerServices(
        client_factory=no_sleep_client,
        get_secret=Secrets({("arc", "github-config"): secret(github_token=PAT)}).get_secret,
        get_configmap=no_configmaps,
    )

    with pytest.raises(ServiceError):
        remove(services, scale_set(), 41)

    assert PAT not in caplog.text
    assert "AREGcontrollerSECRET" not in caplog.text


def test_a_client_in_use_is_never_closed_by_a_rotation(github: FakeGitHub) -> None:
    """Two workers hold the client of one Secret version, and a third rotates it.

    Every client a worker was handed must stay usable while its block runs: closing one
    under a worker failed its next call with "the client has been closed" and stalled runs.
    """
    secrets = Secrets({("arc", "github-config"): secret("1", github_token=PAT)})
    rotated = threading.Event()
    inside = threading.Barrier(3, timeout=10)
    services = SecretRunnerServices(
        get_secret=secrets.get_secret, get_configmap=no_configmaps, client_factory=no_sleep_client
    )
    held: list[bool] = []

    def worker() -> None:
        with services.service_for(scale_set()) as service:
            inside.wait()
            rotated.wait(timeout=10)
            held.append(service.remove_runner(RunnerID(8)))  # raises if it was closed

    workers = [threading.Thread(target=worker) for _ in range(2)]
    for thread in workers:
        thread.start()
    inside.wait()
    secrets.items[("arc", "github-config")] = secret("2", github_token=PAT)
    remove(services, scale_set(), 7)  # rotation replaces the client both workers hold
    rotated.set()
    for thread in workers:
        thread.join(timeout=10)

    assert held == [True, True]
    assert github.removed == [7, 8, 8]


def test_workers_asking_at_once_for_a_new_secrets_client_share_one_build(
    github: FakeGitHub,
) -> None:
    """A burst's runner workers all need the client of a Secret not seen before: one
    builds it, the others wait for it (each building its own, an SSL context apiece,
    and throwing all but one away cost a sixth of a burst's controller CPU)."""
    secrets = Secrets({("arc", "github-config"): secret("1", github_token=PAT)})
    release = threading.Event()
    builds: list[str] = []

    def slow_factory(
        config_url: str, credentials: PatCredentials | AppCredentials, network: NetworkSettings
    ) -> Any:
        builds.append(config_url)
        release.wait(timeout=10)
        return no_sleep_client(config_url, credentials, network)

    services = SecretRunnerServices(
        get_secret=secrets.get_secret, get_configmap=no_configmaps, client_factory=slow_factory
    )
    workers = [threading.Thread(target=remove, args=(services, scale_set(), 7)) for _ in range(3)]
    for thread in workers:
        thread.start()
    # All three have read the Secret while the first build is held.
    eventually(lambda: secrets.reads == 3 and builds, timeout=10)
    release.set()
    for thread in workers:
        thread.join(timeout=10)

    assert (len(builds), github.removed) == (1, [7, 7, 7])
