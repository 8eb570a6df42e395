"""The manager against the embedded API server: which events reconcile, the worker
loop's backoff and requeue_after, resync, and the write boundary."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ersctl.api import ER_PLURAL, ERS_PLURAL, EphemeralRunnerSet
from ersctl.arcclient.kinds import RUNNERS, SETS
from ersctl.arcclient.reader import ApiReader
from ersctl.arcclient.writer import Writer
from ersctl.ephemeralrunnerset.controller import ERS_CONTROLLER_PREDICATES
from ersctl.kube.errors import ConflictError, KubeError, NotFoundError
from ersctl.kube.manager import Manager
from ersctl.kube.predicates import AlwaysPass
from ersctl.kube.queue import Backoff
from ersctl.kube.reconcile import Request, Result
from ersctl.testing.apiserver import ApiServer
from tests.ersctl.kube.conftest import ers_body, runner_body
from tests.kubeapi import KubeApi
from tests.kubeclient import SentRequests
from tests.polling import eventually


class Recording:
    """A Reconciler that records each call; ``behaviour`` decides what it returns."""

    def __init__(self, behaviour: Callable[[Request, int], Result] | None = None) -> None:
        self.calls: list[tuple[Request, float]] = []
        self._lock = threading.Lock()
        self._behaviour = behaviour or (lambda request, n: Result())

    def reconcile(self, request: Request) -> Result:
        with self._lock:
            self.calls.append((request, time.monotonic()))
            n = len([c for c in self.calls if c[0] == request])
        return self._behaviour(request, n)

    def count(self, name: str | None = None) -> int:
        with self._lock:
            return len([c for c in self.calls if name is None or c[0].name == name])


class Running:
    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.manager.run(self.stop)
        except BaseException as exc:
            self.error = exc

    def start(self) -> Running:
        self.thread.start()
        eventually(self.manager.has_synced)
        return self

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(10)


@pytest.fixture
def run() -> Iterator[Callable[..., tuple[Running, Recording]]]:
    started: list[Running] = []

    def start(
        kube: KubeApi,
        behaviour: Callable[[Request, int], Result] | None = None,
        **kwargs: Any,
    ) -> tuple[Running, Recording]:
        manager = Manager(kube.api_client(), namespace=kube.namespace, **kwargs)
        reconciler = Recording(behaviour)
        manager.add_controller(
            "test",
            reconciler,
            for_=SETS,
            owns=[RUNNERS],
            predicates=ERS_CONTROLLER_PREDICATES,
        )
        running = Running(manager).start()
        started.append(running)
        return running, reconciler

    yield start
    for running in started:
        running.halt()


def settle(reconciler: Recording, quiet: float = 0.15) -> int:
    """Wait until no reconcile happened for ``quiet`` seconds; return the count."""
    last = -1
    while (count := reconciler.count()) != last:
        last = count
        time.sleep(quiet)
    return last


def test_the_marker_written_alone_does_not_reconcile_but_a_spec_change_does(
    kube: KubeApi, run: Callable[..., tuple[Running, Recording]]
) -> None:
    kube.create_object(ERS_PLURAL, ers_body("set", replicas=1, patch_id=1))
    _, reconciler = run(kube)
    eventually(lambda: reconciler.count("set") == 1)

    kube.patch_object(
        ERS_PLURAL,
        kube.namespace,
        "set",
        {"status": {"finishedRunnerCleanupPatchID": 1, "currentReplicas": 0}},
        subresource="status",
    )
    kube.patch_object(
        ERS_PLURAL, kube.namespace, "set", {"status": {"currentReplicas": 1}}, subresource="status"
    )
    assert settle(reconciler) == 1
    kube.patch_object(ERS_PLURAL, kube.namespace, "set", {"spec": {"patchID": 2}})
    eventually(lambda: reconciler.count("set") == 2)


def test_runner_job_fields_do_not_reconcile_but_its_phase_reconciles_its_owner(
    kube: KubeApi, run: Callable[..., tuple[Running, Recording]]
) -> None:
    owner = kube.create_object(ERS_PLURAL, ers_body("set"))
    kube.create_object(ER_PLURAL, runner_body("r1", owner))
    kube.create_object(ER_PLURAL, runner_body("orphan", None))
    _, reconciler = run(kube)
    assert settle(reconciler) == 1

    kube.patch_object(
        ER_PLURAL,
        kube.namespace,
        "r1",
        {"status": {"jobId": "j1", "jobRepositoryName": "o/r"}},
        subresource="status",
    )
    kube.patch_object(
        ER_PLURAL,
        kube.namespace,
        "orphan",
        {"status": {"phase": "Succeeded"}},
        subresource="status",
    )
    assert settle(reconciler) == 1
    kube.patch_object(
        ER_PLURAL, kube.namespace, "r1", {"status": {"phase": "Succeeded"}}, subresource="status"
    )
    eventually(lambda: reconciler.count("set") == 2)
    assert {request for request, _ in reconciler.calls} == {Request(kube.namespace, "set")}


def test_a_failing_reconcile_is_retried_with_growing_delays_and_others_keep_going(
    kube: KubeApi, run: Callable[..., tuple[Running, Recording]]
) -> None:
    def behaviour(request: Request, n: int) -> Result:
        if request.name == "bad" and n <= 4:
            raise ValueError("spec.replicas: must be an integer")
        return Result()

    kube.create_object(ERS_PLURAL, ers_body("bad"))
    _, reconciler = run(kube, behaviour, backoff=Backoff(base=0.02, cap=1.0))
    kube.create_object(ERS_PLURAL, ers_body("good"))

    eventually(lambda: reconciler.count("bad") == 5, timeout=5)
    eventually(lambda: reconciler.count("good") == 1)
    times = [t for request, t in reconciler.calls if request.name == "bad"]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps[0] >= 0.015 and gaps[3] >= 0.15  # 20 ms, 40, 80, 160 ms
    assert gaps[3] > gaps[0]
    assert settle(reconciler) == 6  # succeeded on the 5th try: no more retries


def test_requeue_after_reconciles_again_after_that_delay(
    kube: KubeApi, run: Callable[..., tuple[Running, Recording]]
) -> None:
    kube.create_object(ERS_PLURAL, ers_body("set"))
    _, reconciler = run(kube, lambda r, n: Result(requeue_after=0.2 if n < 3 else None))

    eventually(lambda: reconciler.count() == 3, timeout=3)
    times = [t for _, t in reconciler.calls]
    assert times[1] - times[0] >= 0.18 and times[2] - times[1] >= 0.18
    assert settle(reconciler, quiet=0.3) == 3


def test_resync_reconciles_every_cached_set_periodically(
    kube: KubeApi, run: Callable[..., tuple[Running, Recording]]
) -> None:
    kube.create_object(ERS_PLURAL, ers_body("a"))
    kube.create_object(ERS_PLURAL, ers_body("b"))
    _, reconciler = run(kube, resync_period=1.0)

    eventually(lambda: reconciler.count("a") >= 2 and reconciler.count("b") >= 2, timeout=4)


@pytest.mark.embedded_only("fault injection")
def test_writes_and_reads_translate_api_errors_at_the_boundary(apiserver: ApiServer) -> None:
    manager = Manager(apiserver.api_client())
    created = apiserver.create_object(ERS_PLURAL, ers_body("set"))
    ers = EphemeralRunnerSet(created)
    stale = {"metadata": {"resourceVersion": "1"}, "status": {"finishedRunnerCleanupPatchID": 3}}

    with pytest.raises(ConflictError) as conflict:
        Writer(manager.writer).patch_ers_status(ers, stale)
    apiserver.inject_fault(verb="get", resource=ERS_PLURAL, code=503)
    with pytest.raises(KubeError) as unavailable:
        ApiReader(manager.api_reader).get_ers("default", "set")
    gone = EphemeralRunnerSet(ers_body("missing"))
    with pytest.raises(NotFoundError):
        Writer(manager.writer).patch_ers(gone, {"spec": {"replicas": 1}})

    assert conflict.value.status == 409 and "ephemeralrunnersets/default/set/status" in str(
        conflict.value
    )
    assert unavailable.value.status == 503
    assert ApiReader(manager.api_reader).get_ers("default", "missing") is None
    assert ApiReader(manager.api_reader).get_secret("default", "missing") is None


def test_status_patches_go_to_the_status_subresource_as_merge_patches(kube: KubeApi) -> None:
    api_client = kube.api_client()
    manager = Manager(api_client)
    ers = EphemeralRunnerSet(kube.create_object(ERS_PLURAL, ers_body("set")))
    sent = SentRequests(api_client)

    updated = Writer(manager.writer).patch_ers_status(
        ers,
        {
            "metadata": {"resourceVersion": ers.resource_version},
            "status": {"finishedRunnerCleanupPatchID": 4},
        },
    )

    (record,) = sent.records()
    assert (record.verb, record.subresource, record.content_type) == (
        "patch",
        "status",
        "application/merge-patch+json",
    )
    assert "resourceVersion" in record.body["metadata"]
    assert updated.finished_runner_cleanup_patch_id == 4


def test_deleting_a_runner_that_is_already_gone_succeeds(kube: KubeApi) -> None:
    from ersctl.api import EphemeralRunner

    manager = Manager(kube.api_client())
    Writer(manager.writer).delete_runner(EphemeralRunner(runner_body("never-existed", None)))


def test_a_stop_waits_for_reconciles_in_flight_within_one_window_for_every_controller(
    kube: KubeApi,
) -> None:
    # Stuck reconciles in two controllers: the stop gives them the one window, not one
    # window each (the Pod's grace period is one, too: ARC's #4556 sizes it above 30 s).
    stuck = threading.Event()
    manager = Manager(kube.api_client(), namespace=kube.namespace, graceful_shutdown=0.5)
    reconcilers = [Recording(lambda r, n: Result(requeue_after=stuck.wait(60) and None))]
    reconcilers.append(Recording(lambda r, n: Result(requeue_after=stuck.wait(60) and None)))
    for name, reconciler in zip(("first", "second"), reconcilers, strict=True):
        manager.add_controller(
            name,
            reconciler,
            for_=SETS,
            owns=[RUNNERS],
            predicates=ERS_CONTROLLER_PREDICATES,
        )
    kube.create_object(ERS_PLURAL, ers_body("set"))
    running = Running(manager).start()
    eventually(lambda: all(r.count() == 1 for r in reconcilers), what="both reconciles stuck")
    started = time.monotonic()
    running.stop.set()
    running.thread.join(30)
    assert not running.thread.is_alive()
    assert time.monotonic() - started < 5.0  # not 10 s a controller
    stuck.set()


def test_a_predicate_for_an_informer_the_controller_does_not_watch_is_refused(
    kube: KubeApi,
) -> None:
    # A misspelt plural would otherwise leave the controller with no event filter at all.
    manager = Manager(kube.api_client(), namespace=kube.namespace)
    with pytest.raises(ValueError, match=r"predicates for \['ephemeralrunner'\], not watched"):
        manager.add_controller(
            "test",
            Recording(None),
            for_=SETS,
            owns=[RUNNERS],
            predicates={"ephemeralrunner": AlwaysPass()},
        )
