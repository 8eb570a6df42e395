"""The reconciler never acts twice on one of its own writes that its cache has not shown yet.

The informers deliver runner events on their own schedule: a reconcile can be
triggered (by a set event, or by the first of several runner events) while the cache
still lacks runners this controller just created, or still shows runners it just
deleted as live. Deciding on that listing creates runners nobody asked for, or
deletes (and removes from the service) runners a second time. Expectations
(``ersctl.ephemeralrunnerset.expectations``) close that window, as ReplicaSet's do in Kubernetes.

Every test here delays the API server's ``ephemeralrunners`` watch events so that the
cache lags deterministically, and fails without the expectations.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ersctl import api
from ersctl.ephemeralrunnerset.controller import CONTROLLER_NAME
from ersctl.ephemeralrunnerset.expectations import Expectations
from ersctl.kube.reconcile import Request
from tests.clock import FakeClock
from tests.ersctl.ephemeralrunnerset.github import FakeGitHub
from tests.ersctl.ephemeralrunnerset.harness import Cluster
from tests.polling import eventually

RUNNER_LAG = 1.0  # seconds; far longer than a reconcile, short enough to wait out


@pytest.mark.parametrize(
    "patch_id",
    [
        pytest.param(1, id="a new patch (the CI failure)"),
        pytest.param(0, id="idle at the minimum: no runner patch ID to stop a second scale-up"),
    ],
)
@pytest.mark.embedded_only("the watch delay")
def test_the_running_controller_creates_exactly_the_replicas_while_runner_events_lag(
    cluster: Cluster, patch_id: int
) -> None:
    # The scale-up's status write comes back as a set event at once and enqueues a
    # reconcile whose cache does not show the two runners just created yet.
    cluster.server.set_watch_delay(api.ER_PLURAL, RUNNER_LAG)
    with cluster.running_controller() as controller:
        cluster.create_ers(replicas=2, patch_id=patch_id)

        def settled() -> bool:
            server = {r.name for r in cluster.runners()}
            cached = controller.cached_runner_names(cluster.ers())
            return len(server) >= 2 and cached == server

        eventually(settled, timeout=10)

    creates = cluster.requests(verb="create", resource=api.ER_PLURAL)
    assert len(creates) == 2, f"{len(creates)} runners created for 2 replicas"
    assert len(cluster.runners()) == 2


@pytest.mark.embedded_only("the watch delay")
def test_a_scale_down_removes_a_runner_once_while_the_cache_still_shows_it_live(
    cluster: Cluster, github: FakeGitHub
) -> None:
    cluster.create_ers(replicas=3, patch_id=0)
    for runner_id in (1, 2, 3):
        cluster.add_runner(phase="Running", runner_id=runner_id)
    cluster.reconcile()  # settles the status counts
    cluster.server.set_watch_delay(api.ER_PLURAL, RUNNER_LAG)
    cluster.patch_ers("runners", {"replicas": 2})  # idle at a lower minimum
    cluster.sync(runners=False)

    assert cluster.reconcile(sync=False).action == "scale-down"
    # The next reconcile's cache still shows the removed runner without deletionTimestamp.
    outcome = cluster.reconcile(sync=False)

    assert len(github.attempts) == 1, f"service removals of runner ids {github.attempts}"
    assert len(cluster.requests(verb="delete", resource=api.ER_PLURAL)) == 1
    assert outcome.action == "hold"
    assert len(cluster.live_runner_names()) == 2


@pytest.mark.embedded_only("the watch delay")
def test_a_fresh_patch_before_the_cache_shows_a_cleanup_is_not_taken_for_a_second_cleanup(
    cluster: Cluster,
) -> None:
    # A second cleanup pass over the already deleted runner would record the fresh patch
    # ID as the marker and so suppress the very scale-up that patch asks for.
    cluster.create_ers(replicas=2, patch_id=5)
    cluster.add_runner(phase="Succeeded", patch_id=4, runner_id=1, finalizers=[])
    busy = cluster.add_runner(phase="Running", patch_id=4, runner_id=2, job_id="job-2")
    cluster.sync()
    cluster.server.set_watch_delay(api.ER_PLURAL, RUNNER_LAG)

    assert cluster.reconcile(sync=False).action == "cleanup-finished"
    cluster.patch_ers("runners", {"replicas": 2, "patchID": 6})  # the job's completion counted
    cluster.sync(runners=False)
    cluster.reconcile(sync=False)  # the cache still shows the finished runner
    outcome = cluster.reconcile()  # once the cache has caught up

    assert outcome.action == "scale-up", outcome
    assert busy in cluster.live_runner_names() and len(cluster.live_runner_names()) == 2
    assert cluster.ers().finished_runner_cleanup_patch_id == 5
    assert len(cluster.requests(verb="delete", resource=api.ER_PLURAL)) == 1


@pytest.mark.embedded_only("the watch delay")
def test_a_set_deleted_right_after_a_scale_up_keeps_its_finalizer_until_those_runners_go(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=2, patch_id=1)
    cluster.sync()
    cluster.server.set_watch_delay(api.ER_PLURAL, RUNNER_LAG)
    assert cluster.reconcile(sync=False).action == "scale-up"
    cluster.custom.delete_namespaced_custom_object(
        api.GROUP, api.VERSION, cluster.namespace, api.ERS_PLURAL, "runners"
    )
    cluster.sync(runners=False)

    outcome = cluster.reconcile(sync=False)  # the cache shows no runner yet

    assert outcome.action == "deleting", outcome
    assert cluster.ers().has_finalizer(api.ERS_FINALIZER)
    assert all(r.is_deleting for r in cluster.runners()) and len(cluster.runners()) == 2

    # Still no runner in the cache: their absence there is no news, not a deletion seen.
    again = cluster.reconcile(sync=False)

    assert again.action == "deleting", again
    assert len(cluster.requests(verb="delete", resource=api.ER_PLURAL)) == 2, "deleted once each"
    assert cluster.ers().has_finalizer(api.ERS_FINALIZER)


@pytest.mark.embedded_only("the watch delay")
def test_the_set_is_requeued_shortly_only_while_its_own_writes_are_unseen(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=1, patch_id=1)
    cluster.sync()
    cluster.server.set_watch_delay(api.ER_PLURAL, RUNNER_LAG)

    created = cluster.reconcile(sync=False)
    cluster.sync()  # the runner event arrives
    settled = cluster.reconcile()

    assert created.action == "scale-up"
    assert created.result.requeue_after == 1.0
    assert settled.result.requeue_after is None


@pytest.mark.embedded_only("the watch delay")
def test_a_create_the_cache_never_shows_stops_counting_when_its_expectation_expires(
    cluster: Cluster,
) -> None:
    # The runner was created and then deleted by someone else before the cache saw it;
    # its events are as good as lost. The set must not wait for it forever.
    clock = FakeClock(0.0)
    reconciler = cluster.reconciler_with(Expectations(ttl=300, clock=clock))
    cluster.create_ers(replicas=1, patch_id=0)
    cluster.sync()
    cluster.server.set_watch_delay(api.ER_PLURAL, 30.0)
    assert (
        reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners")).action
        == "scale-up"
    )
    (gone,) = cluster.runners()
    cluster.release_runner(gone.name)
    cluster.delete_runner(gone.name)

    waiting = reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners"))
    clock.now += 300
    expired = reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners"))

    assert waiting.action == "hold", "the unseen create still counts"
    assert expired.action == "scale-up"
    assert len(cluster.requests(verb="create", resource=api.ER_PLURAL)) == 2
    assert len(cluster.live_runner_names()) == 1


@pytest.mark.parametrize(
    ("elapsed", "action", "gets"),
    [
        pytest.param(5.0, "hold", 0, id="within watch latency: no request, still counted"),
        pytest.param(11.0, "scale-up", 1, id="overdue: one GET finds it gone, then scale-up"),
    ],
)
@pytest.mark.embedded_only("the watch delay")
def test_a_create_the_cache_never_shows_is_confirmed_gone_long_before_it_expires(
    cluster: Cluster, elapsed: float, action: str, gets: int
) -> None:
    # As above, but the expectation is far older than any watch latency: one uncached
    # GET by name shows the runner is gone, so the set does not wait out the 5 minutes.
    clock = FakeClock(0.0)
    reconciler = cluster.reconciler_with(Expectations(ttl=300, confirm_after=10, clock=clock))
    cluster.create_ers(replicas=1, patch_id=0)
    cluster.sync()
    cluster.server.set_watch_delay(api.ER_PLURAL, 30.0)
    assert (
        reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners")).action
        == "scale-up"
    )
    (gone,) = cluster.runners()
    cluster.release_runner(gone.name)
    cluster.delete_runner(gone.name)
    cluster.sent.clear()

    clock.now += elapsed
    outcome = reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners"))

    assert outcome.action == action
    runner_gets = cluster.requests(verb="get", resource=api.ER_PLURAL)
    assert [r.name for r in runner_gets] == [gone.name] * gets
    assert len(cluster.live_runner_names()) == (1 if gets else 0)


@pytest.mark.embedded_only("the watch delay")
def test_an_overdue_create_that_still_exists_keeps_counting_and_is_asked_again_later(
    cluster: Cluster,
) -> None:
    clock = FakeClock(0.0)
    reconciler = cluster.reconciler_with(Expectations(ttl=300, confirm_after=10, clock=clock))
    cluster.create_ers(replicas=1, patch_id=0)
    cluster.sync()
    cluster.server.set_watch_delay(api.ER_PLURAL, 30.0)
    assert (
        reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners")).action
        == "scale-up"
    )
    cluster.sent.clear()

    clock.now += 11
    first = reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners"))
    clock.now += 5
    second = reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners"))

    assert (first.action, second.action) == ("hold", "hold"), "it exists: no second runner"
    assert len(cluster.requests(verb="get", resource=api.ER_PLURAL)) == 1
    assert len(cluster.runners()) == 1


def test_a_resync_of_many_steady_sets_sends_no_request(cluster: Cluster) -> None:
    # Every set and runner is read from the informer caches: a resync of sets with
    # nothing to do costs the API server nothing, however many there are.
    sets = [f"set-{i}" for i in range(4)]
    with cluster.running_controller() as controller:
        metrics = controller.manager.metrics
        for name in sets:
            cluster.create_ers(name, replicas=3, patch_id=1)

        def reconciles() -> float:
            return metrics.value(
                "ersctl_reconcile_total", {"controller": CONTROLLER_NAME, "result": "success"}
            )

        def steady() -> bool:
            return all(
                len(cluster.runners(name)) == 3 and cluster.ers(name).phase == "Running"
                for name in sets
            )

        eventually(steady, timeout=10)
        eventually(quiet(reconciles), timeout=10)
        cluster.sent.clear()
        before = reconciles()
        controller.manager.resync()
        eventually(lambda: reconciles() >= before + len(sets), timeout=10)
        eventually(quiet(reconciles), timeout=10)

    assert [r for r in cluster.sent.records() if r.verb != "watch"] == []


def quiet(count: Callable[[], float], *, polls: int = 10) -> Callable[[], bool]:
    """A check that holds once ``polls`` polls in a row saw the same count."""
    seen: list[float] = []

    def check() -> bool:
        seen.append(count())
        return len(seen) >= polls and seen[-polls] == seen[-1]

    return check
