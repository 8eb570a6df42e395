"""Leader election: two managers (own clients, own identities) against one server."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import pairwise
from typing import Any

import pytest
from kubernetes import client

from ersctl.api import ERS_PLURAL, EphemeralRunnerSet
from ersctl.arcclient.cache import cached_reader
from ersctl.arcclient.kinds import RUNNERS, SETS
from ersctl.arcclient.writer import Writer
from ersctl.ephemeralrunnerset.controller import ERS_CONTROLLER_PREDICATES
from ersctl.kube.errors import NotLeaderError
from ersctl.kube.leader import LeaderElectionConfig, LeaderElector
from ersctl.kube.manager import LeadershipLost, Manager
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.ports import unused_port
from tests.ersctl.kube.conftest import ers_body
from tests.ersctl.kube.test_manager import Recording, Running
from tests.kubeapi import KubeApi
from tests.kubeclient import SentRequests
from tests.leases import last_renewal, lease_time, refused_campaigns, renewals
from tests.polling import eventually

LEASE = "ersctl-test-leader"


def election(
    identity: str, *, namespace: str = "default", lease: int = 2, renew: float = 1.5
) -> LeaderElectionConfig:
    # The library's minimums: retry >= 1 s, renew > 1.2 x retry, lease > renew.
    return LeaderElectionConfig(
        namespace=namespace, name=LEASE, identity=identity,
        lease_duration=lease, renew_deadline=renew, retry_period=1.0,
    )  # fmt: skip


@pytest.fixture
def sent() -> dict[str, SentRequests]:
    """What each candidate's client sent, by identity."""
    return {}


@pytest.fixture
def candidates(
    kube: KubeApi, sent: dict[str, SentRequests]
) -> Iterator[Callable[..., tuple[Running, Recording]]]:
    started: list[Running] = []

    def start(
        identity: str, *, patient: bool = False, lease: int = 4, renew: float = 3.0
    ) -> tuple[Running, Recording]:
        # Two candidates get a 4 s lease: on 2 shared cores a loaded leader can stall
        # for 2 s, and a shorter lease would then (rightly) pass to the follower.
        ns = kube.namespace
        config = (
            election(identity, namespace=ns, lease=lease, renew=renew)
            if patient
            else election(identity, namespace=ns)
        )
        api_client = kube.api_client()
        sent[identity] = SentRequests(api_client)
        manager = Manager(api_client, namespace=ns, leader_election=config)
        reconciler = Recording()
        manager.add_controller(
            "test", reconciler, for_=SETS, owns=[RUNNERS],
            predicates=ERS_CONTROLLER_PREDICATES,
        )  # fmt: skip
        running = Running(manager).start()
        started.append(running)
        return running, reconciler

    yield start
    for running in started:
        running.halt()


def cached_replicas(running: Running, namespace: str) -> int | None:
    """``spec.replicas`` of the set in the manager's cache."""
    ers = cached_reader(running.manager).get_ers(namespace, "set")
    return None if ers is None else ers.replicas


def holder(kube: KubeApi) -> str | None:
    lease = kube.get_object("leases", kube.namespace, LEASE)
    return None if lease is None else lease["spec"].get("holderIdentity")


def test_only_the_lease_holder_reconciles_and_a_clean_stop_hands_over_at_once(
    kube: KubeApi,
    candidates: Callable[..., tuple[Running, Recording]],
    sent: dict[str, SentRequests],
) -> None:
    kube.create_object(ERS_PLURAL, ers_body("set"))
    first, first_calls = candidates("first", patient=True)
    eventually(lambda: holder(kube) == "first")
    second, second_calls = candidates("second", patient=True)
    eventually(lambda: first_calls.count() == 1)

    kube.patch_object(ERS_PLURAL, kube.namespace, "set", {"spec": {"replicas": 3}})
    eventually(lambda: first_calls.count() == 2)
    # The follower has the change in its cache (and queue), and has campaigned since and
    # been refused: were it reconciling without the lease, it would have by then.
    eventually(
        lambda: cached_replicas(second, kube.namespace) == 3,
        what="the change in the follower's cache",
    )
    since = len(sent["second"].records())
    eventually(
        lambda: refused_campaigns(sent["second"], LEASE, since=since),
        what="a refused campaign of the follower",
    )

    assert second_calls.count() == 0
    assert first.manager.is_leading() and not second.manager.is_leading()

    first.halt()  # releases the Lease instead of letting it expire
    assert first.error is None
    eventually(lambda: second_calls.count() >= 1, timeout=10)
    lease = kube.get_object("leases", kube.namespace, LEASE)
    assert lease is not None and lease["spec"]["holderIdentity"] == "second"
    # Taken over before the first's Lease could have run out, which only a released Lease
    # allows (a follower waits out an unreleased one: leaseDuration after its last renewal
    # at the earliest). Read from the Lease, not a clock: a loaded machine only delays both.
    expiry = last_renewal(sent["first"], LEASE, "first") + timedelta(
        seconds=lease["spec"]["leaseDurationSeconds"]
    )
    assert lease_time(lease["spec"]["acquireTime"]) < expiry


def test_the_lease_is_written_once_when_acquired_then_once_a_retry_period(
    kube: KubeApi,
    candidates: Callable[..., tuple[Running, Recording]],
    sent: dict[str, SentRequests],
) -> None:
    leader, _ = candidates("leader", patient=True)  # a 4 s lease: loaded cores stall
    written = partial(renewals, sent["leader"], LEASE, "leader")
    eventually(lambda: len(written()) >= 3, timeout=15, what="two renewals")

    acquired, first, second = written()[:3]
    # The library would renew the moment it acquired the Lease, repeating that write;
    # renewals come a retry period apart (1 s here), the first one included.
    assert first - acquired >= timedelta(seconds=1.0)
    assert second - first >= timedelta(seconds=1.0)
    assert leader.manager.is_leading()


def test_the_holder_writes_the_lease_once_its_renew_interval_has_passed_and_reads_it_then_only(
    kube: KubeApi,
    candidates: Callable[..., tuple[Running, Recording]],
    sent: dict[str, SentRequests],
) -> None:
    # Retries 1 s apart and a 5 s renew deadline: a write every 2 s, not every 1 s.
    assert election("leader", lease=6, renew=5.0).renew_interval == 2.0
    leader, _ = candidates("leader", patient=True, lease=6, renew=5.0)
    written = partial(renewals, sent["leader"], LEASE, "leader")
    eventually(lambda: len(written()) >= 4, timeout=15, what="three renewals")
    assert leader.manager.is_leading()

    times = written()[:4]
    gaps = [later - earlier for earlier, later in pairwise(times)]
    assert all(gap >= timedelta(seconds=2.0) for gap in gaps), gaps
    # An attempt between two writes is answered from the record written: the holder
    # reads the Lease once per write it makes, just before it (the first read found
    # no Lease and the create followed).
    requests = [
        record.verb
        for record in sent["leader"].records()
        if record.resource == "leases" and record.verb in ("get", "create", "update")
    ]
    writes = requests.count("create") + requests.count("update")
    assert requests.count("get") <= writes + 1, requests


# Renew deadline 1.5 s: every retry writes the Lease. 5 s: a write every 2 s, the
# retries in between answered from the record written (renew_interval).
RENEW_DEADLINES = pytest.mark.parametrize(
    "renew", [1.5, 5.0], ids=["writes-every-retry", "writes-every-other-retry"]
)


def timing(renew: float) -> dict[str, Any]:
    """``candidates`` options for a renew deadline of ``renew`` (retries 1 s apart)."""
    return {} if renew == 1.5 else {"patient": True, "lease": int(renew) + 1, "renew": renew}


@RENEW_DEADLINES
def test_losing_the_lease_stops_reconciling_and_writing_at_once(
    kube: KubeApi, candidates: Callable[..., tuple[Running, Recording]], renew: float
) -> None:
    created = kube.create_object(ERS_PLURAL, ers_body("set"))
    leader, calls = candidates("leader", **timing(renew))
    eventually(lambda: calls.count() == 1)

    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    stolen = time.monotonic()
    kube.patch_object("leases", kube.namespace, LEASE, {"spec": {
        "holderIdentity": "intruder", "leaseDurationSeconds": 60, "renewTime": now,
    }})  # fmt: skip
    eventually(lambda: not leader.manager.is_leading(), timeout=renew + 2.5)
    lost_after = time.monotonic() - stolen
    kube.patch_object(ERS_PLURAL, kube.namespace, "set", {"spec": {"replicas": 2}})
    # The change reaches the cache (and the work queue) of the manager that lost the
    # lease while it still runs; once it has stopped, its workers had every queued key.
    eventually(
        lambda: cached_replicas(leader, kube.namespace) == 2,
        what="the change in the leader's cache",
    )
    leader.thread.join(5)
    assert not leader.thread.is_alive()

    assert lost_after < renew + 1.0 + 0.5  # within renew deadline + one retry
    assert isinstance(leader.error, LeadershipLost)
    assert calls.count() == 1
    with pytest.raises(NotLeaderError):
        Writer(leader.manager.writer).patch_ers(
            EphemeralRunnerSet(created), {"spec": {"replicas": 5}}
        )
    stored = kube.get_object(ERS_PLURAL, kube.namespace, "set")
    assert stored is not None and stored["spec"]["replicas"] == 2


@pytest.mark.embedded_only("fault injection")
@RENEW_DEADLINES
def test_a_renew_stuck_in_a_slow_request_stops_reconciling_before_the_lease_can_expire(
    apiserver: ApiServer, candidates: Callable[..., tuple[Running, Recording]], renew: float
) -> None:
    leader, _ = candidates("leader", **timing(renew))
    eventually(leader.manager.is_leading)

    apiserver.inject_fault(verb="update", resource="leases", latency=2 * renew)
    armed = time.monotonic()
    # The library still believes it leads (its renew call has not returned), but the
    # last successful renew is older than the renew deadline: others may take over.
    eventually(lambda: not leader.manager.is_leading(), timeout=renew + 1.0)

    assert time.monotonic() - armed < renew + 0.3


@pytest.mark.embedded_only("a server started on a chosen port mid-test")
def test_a_candidate_keeps_campaigning_while_the_api_server_is_unreachable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="ersctl.kube.leader")
    port = unused_port()
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    configuration.retries = 0
    started = threading.Event()
    elector = LeaderElector(
        client.ApiClient(configuration), election("patient"),
        on_started_leading=started.set, on_stopped_leading=lambda: None,
    )  # fmt: skip
    stop = threading.Event()
    campaign = threading.Thread(target=elector.run, args=(stop,), daemon=True)
    campaign.start()
    try:
        # One attempt against nothing has failed (or ended the campaign).
        eventually(
            lambda: (
                not campaign.is_alive()
                or any("leader election: get leases/" in r.getMessage() for r in caplog.records)
            ),
            what="a failed campaign attempt",
        )
        with ApiServer(port=port, gc=False):
            assert campaign.is_alive()
            assert started.wait(4)
            assert elector.is_leading()
    finally:
        stop.set()
        campaign.join(5)
