"""The EphemeralRunner controller's GitHub clients come from the shared client cache:
one per (Secret, config URL), a rotated Secret's old client closed after its last
use, and no GitHub call once the leader lease is lost (as built by the CLI)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from ersctl.api import ER_FINALIZER, ER_REGISTRATION_FINALIZER
from ersctl.arcclient.reader import ApiReader
from ersctl.ephemeralrunner.stores import KubeRunnerResources
from ersctl.kube.client import Reader
from ersctl.kube.errors import NotLeaderError
from ersctl.kube.leader import LeaderElectionConfig
from ersctl.kube.reconcile import Request
from ersctl.scaleset.clients import SecretRunnerServices
from ersctl.wiring import ControllerOptions, build_controller
from ghalistener.actions.client import ActionsClient
from tests.ersctl.ephemeralrunner.conftest import (
    CREDENTIALS,
    TOKEN,
    Harness,
    RecordingFactory,
    b64,
)

RUNNER = "arc-runner-abcde"
ROTATED = "ghp_rotated_token_never_logged"


def authentications(h: Harness) -> int:
    """Registration tokens GitHub issued: one per client that authenticated."""
    return sum(
        1 for e in h.sim.events if e["kind"] == "token.issued" and e["purpose"] == "registration"
    )


def rotate(h: Harness) -> None:
    """Replace the credentials Secret's token (a new resourceVersion)."""
    h.kube.patch_object(
        "secrets", h.namespace, CREDENTIALS, {"data": {"github_token": b64(ROTATED)}}
    )


def is_closed(client: ActionsClient) -> bool:
    try:
        client.get_runner_by_name("nobody")
    except RuntimeError as exc:
        return "closed" in str(exc)
    return False


def test_runners_of_sets_sharing_a_secret_with_different_config_urls_keep_their_clients(
    h: Harness,
) -> None:
    """Keyed by Secret alone, each runner of the other set replaced the client: a new
    authentication with GitHub for every registration."""
    repo_url = f"{h.config_url}/my-repo"
    names = [f"arc-runner-{i}" for i in range(6)]
    for i, name in enumerate(names):
        h.create_runner(name, **({"githubConfigUrl": repo_url} if i % 2 else {}))
        h.settle(name)

    assert sorted(h.sim_runners()) == names
    assert authentications(h) == 2, "one authentication per configuration URL"
    assert len(h.clients) == 2


def test_a_rotated_secrets_old_client_is_closed_once_no_reconcile_uses_it(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    h.create_runner("arc-runner-1")
    h.settle("arc-runner-1")
    rotate(h)
    h.create_runner("arc-runner-2")
    h.settle("arc-runner-2")

    old, new = h.clients
    assert is_closed(old), "replaced and unused: closed now, not at shutdown"
    assert not is_closed(new)
    assert authentications(h) == 2
    assert TOKEN not in caplog.text and ROTATED not in caplog.text


def test_a_client_in_use_when_its_secret_rotates_is_closed_when_that_block_ends(
    h: Harness,
) -> None:
    runner = h.create_runner()
    factory = RecordingFactory()
    with h.kube.api_client() as api_client:
        resources = KubeRunnerResources(api_client)
        services = SecretRunnerServices(
            get_secret=resources.get_secret,
            get_configmap=ApiReader(Reader(api_client)).get_configmap,
            client_factory=factory,
        )
        try:
            with services.service_for(runner) as in_flight:
                rotate(h)
                with services.service_for(runner) as fresh:
                    assert fresh.get_runner_by_name(RUNNER) is None
                assert in_flight.get_runner_by_name(RUNNER) is None, "usable to the block's end"
                assert not is_closed(factory.built[0])
            old, new = factory.built
            assert is_closed(old), "closed when its last user left"
            assert not is_closed(new)
        finally:
            services.close()


def finalizers(h: Harness) -> None:
    h.kube.patch_object(
        "ephemeralrunners",
        h.namespace,
        RUNNER,
        {"metadata": {"finalizers": [ER_FINALIZER, ER_REGISTRATION_FINALIZER]}},
    )


def registered_then_deleted(h: Harness) -> None:
    h.settle()  # registered by a leading controller (the harness's is not fenced)
    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)  # held by its finalizers


@pytest.mark.parametrize(
    ("prepare", "call"),
    [
        pytest.param(finalizers, "registering runner", id="a registration"),
        pytest.param(registered_then_deleted, "removing runner", id="a removal"),
    ],
)
def test_the_cli_built_runner_controller_makes_no_github_call_without_the_lease(
    h: Harness, prepare: Callable[[Harness], None], call: str
) -> None:
    h.create_runner()
    prepare(h)
    before = (h.sim_runners(), authentications(h))
    options = ControllerOptions(
        namespace=h.namespace,
        leader_election=LeaderElectionConfig(namespace=h.namespace),
        runner_controller=True,
    )
    with h.kube.api_client() as api_client:
        controller = build_controller(api_client, options)
        try:
            assert not controller.manager.is_leading(), "never campaigned: not the leader"
            assert controller.runner is not None
            # The runner controller reads runners from the informer cache: fill it (the
            # informers only, no campaign, no workers).
            with controller.manager.caches(), pytest.raises(NotLeaderError) as refused:
                controller.runner.reconcile(Request(h.namespace, RUNNER))
        finally:
            controller.close()

    assert (h.sim_runners(), authentications(h)) == before, "GitHub saw nothing"
    assert call in str(refused.value), "refused before the GitHub call, naming it"
