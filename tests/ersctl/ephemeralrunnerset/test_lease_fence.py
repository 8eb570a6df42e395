"""Losing the leader lease stops GitHub side effects too, not only Kubernetes writes."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ersctl.api import RunnerID
from ersctl.kube.errors import NotLeaderError
from ersctl.kube.leader import LeaderElectionConfig
from ersctl.kube.reconcile import Request
from ersctl.scaleset.clients import SecretRunnerServices
from ersctl.wiring import ControllerOptions, build_controller
from tests.ersctl.ephemeralrunnerset.github import no_sleep_client
from tests.ersctl.ephemeralrunnerset.harness import Cluster


@dataclass
class Lease:
    """A fence that holds for ``checks`` more questions, then reports the lease lost."""

    checks: int

    def __call__(self) -> bool:
        self.checks -= 1
        return self.checks >= 0


def test_a_lease_lost_midway_through_a_scale_down_removes_no_further_runner_from_github(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=0, patch_id=0)
    for runner_id in (5, 6, 7):
        cluster.add_runner(phase="Running", runner_id=runner_id)
    registry = SecretRunnerServices(
        get_secret=cluster.api_reader.get_secret,
        get_configmap=cluster.api_reader.get_configmap,
        client_factory=no_sleep_client,
        fence=Lease(checks=1),
    )
    reconciler = cluster.reconciler_with(services=registry)
    cluster.sync()

    try:
        with pytest.raises(NotLeaderError, match="no longer holds the lease"):
            reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners"))
    finally:
        registry.close()

    assert len(cluster.github.attempts) == 1, "only the call made while still leading"
    assert not cluster.events("ReconcileFailed"), "losing the lease is not a failure to report"


def test_the_controller_built_by_the_cli_fences_runner_removal_with_the_lease(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=0, patch_id=0)
    election = LeaderElectionConfig(namespace=cluster.namespace)
    controller = build_controller(
        cluster.api_client, ControllerOptions(namespace=cluster.namespace, leader_election=election)
    )
    ers = cluster.ers()

    try:
        assert not controller.manager.is_leading(), "never campaigned: not the leader"
        with (
            controller.services.service_for(ers) as service,
            pytest.raises(NotLeaderError),
        ):
            service.remove_runner(RunnerID(41))
    finally:
        controller.close()

    assert cluster.github.attempts == []
