"""A new leader creates nothing the old leader already created.

Expectations (``ersctl.ephemeralrunnerset.expectations``) live in memory: a process taking the
lease over knows none of its predecessor's creates. If its runner watch lags (the
predecessor created a large batch just before it died), its cache shows fewer runners
than exist, and a scale-up on that listing creates them a second time. Before its
first scale-up of a set, a process confirms the set's runners with one uncached list.

The runner watch is delayed by the API server here, so the lag is deterministic.
"""

from __future__ import annotations

import pytest

from ersctl import api
from ersctl.kube.reconcile import Request
from tests.ersctl.ephemeralrunnerset.harness import Cluster

LAG = 60.0  # seconds: the new leader's cache shows none of the batch during the test


@pytest.mark.embedded_only("the watch delay")
def test_a_new_leader_whose_cache_lags_does_not_create_the_old_leaders_runners_again(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=30, patch_id=1)
    cluster.sync()
    cluster.server.set_watch_delay(api.ER_PLURAL, LAG)
    old_leader = cluster.reconciler

    assert old_leader.reconcile_with_outcome(Request(cluster.namespace, "runners")).action == (
        "scale-up"
    )
    assert len(cluster.live_runner_names()) == 30
    # The old leader dies; a new process, its informers synced before the batch (and
    # its runner watch behind it), takes over with its own, empty expectations.
    new_leader = cluster.reconciler_with()
    cluster.patch_ers("runners", {"replicas": 30, "patchID": 2})  # the listener's next poll
    cluster.sync(runners=False)

    first = new_leader.reconcile_with_outcome(Request(cluster.namespace, "runners"))
    second = new_leader.reconcile_with_outcome(Request(cluster.namespace, "runners"))

    creates = cluster.requests(verb="create", resource=api.ER_PLURAL)
    assert len(creates) == 30, f"{len(creates)} runners created for 30 replicas"
    assert len(cluster.live_runner_names()) == 30
    assert (first.action, second.action) == ("hold", "hold")
    assert first.result.requeue_after is not None, "it checks back while the cache catches up"
