"""Which controller replica leads: the Lease's holder, matched to the identity each
replica's current process acquired the Lease as (its log after its latest start)."""

from __future__ import annotations

from pathlib import Path

import pytest
from simulation.replicas import LEASE_NAME, LeaseTiming, Replicas

from ersctl.testing.apiserver import ApiServer

pytestmark = pytest.mark.embedded_only("the simulation reads the Lease by direct access")

NS = "soak"


def _replicas(tmp_path: Path) -> Replicas:
    return Replicas(
        args=["ersctl", "reconcile"], env={}, workdir=tmp_path, count=2, lease=LeaseTiming(),
        namespace=NS,
    )  # fmt: skip


def _hold(api: ApiServer, holder: str) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": LEASE_NAME, "namespace": NS},
             "spec": {"holderIdentity": holder}}  # fmt: skip
    if api.get_object("leases", NS, LEASE_NAME) is None:
        api.create_object("leases", lease)
    else:
        api.patch_object("leases", NS, LEASE_NAME, {"spec": {"holderIdentity": holder}})


def test_the_leader_is_the_replica_whose_current_process_acquired_the_lease(
    apiserver: ApiServer, tmp_path: Path
) -> None:
    apiserver.create_object("namespaces", {"metadata": {"name": NS}})
    replicas = _replicas(tmp_path)
    acquired = "INFO ersctl.kube.leader acquired lease soak/ersctl-leader as {}\n"
    (tmp_path / "controller-1.log").write_text(
        "--- start 1: ersctl\n" + acquired.format("host_a") + "--- start 2: ersctl\n"
    )
    (tmp_path / "controller-2.log").write_text("--- start 1: ersctl\n" + acquired.format("host_b"))

    _hold(apiserver, "host_b")
    found = replicas.leader(apiserver)
    assert found is not None and (found[0].name, found[1]) == ("controller-2", "host_b")

    _hold(apiserver, "host_a")  # a killed process's identity: its replica restarted since
    assert replicas.leader(apiserver) is None


def test_more_than_one_replica_needs_leader_election(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="leader election"):
        Replicas(args=[], env={}, workdir=tmp_path, count=2, lease=None, namespace=NS)
