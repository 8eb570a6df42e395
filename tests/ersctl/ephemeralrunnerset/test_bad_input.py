"""Bad input never stops the controller: a Warning Event naming the field, nothing else."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from ersctl import api
from ersctl.ephemeralrunnerset.controller import add_ephemeral_runner_set_controller
from ersctl.ephemeralrunnerset.ports import CachedReader
from ersctl.ephemeralrunnerset.reconciler import EphemeralRunnerSetReconciler
from ersctl.kube.events import EventRecorder
from ersctl.kube.manager import Manager
from ersctl.kube.queue import Backoff
from ersctl.kube.reconcile import Request
from tests.ersctl.ephemeralrunnerset.harness import Cluster, body
from tests.polling import eventually


@pytest.fixture
def start_runtime(cluster: Cluster) -> Iterator[Callable[[], Manager]]:
    """Starts the real runtime (informers, queue, workers) running the reconciler."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start() -> Manager:
        manager = _manager(cluster)
        thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
        thread.start()
        threads.append(thread)
        return manager

    yield start
    stop.set()
    for thread in threads:
        thread.join(timeout=10)


def _manager(cluster: Cluster) -> Manager:
    manager = Manager(
        cluster.api_client,
        namespace=cluster.namespace,
        workers=2,
        backoff=Backoff(base=0.05, cap=0.5),
    )
    add_ephemeral_runner_set_controller(manager, services=cluster.services)
    return manager


def warnings_for(cluster: Cluster, name: str) -> list[str]:
    return [
        str(e.get("message"))
        for e in cluster.events("InvalidSpec")
        if e["involvedObject"]["name"] == name and e["type"] == "Warning"
    ]


def test_a_malformed_set_gets_a_warning_and_is_left_alone_while_a_healthy_one_scales(
    cluster: Cluster, start_runtime: Callable[[], Manager]
) -> None:
    cluster.create_ers("broken", replicas=1, patch_id=3)
    finished = cluster.add_runner("broken", phase="Succeeded", patch_id=2, runner_id=1)
    cluster.patch_ers("broken", {"ephemeralRunnerSpec": None})
    cluster.create_ers("negative", replicas=-1, patch_id=4)
    cluster.create_ers("healthy", replicas=2, patch_id=1)
    cluster.sync()

    start_runtime()

    eventually(lambda: len(cluster.live_runner_names("healthy")) == 2, timeout=10)
    eventually(
        lambda: warnings_for(cluster, "broken") and warnings_for(cluster, "negative"), timeout=10
    )

    assert warnings_for(cluster, "broken") == ["spec.ephemeralRunnerSpec: is missing"]
    assert warnings_for(cluster, "negative") == ["spec.replicas: must be >= 0, got -1"]
    assert cluster.live_runner_names("broken") == {finished}, "the finished runner is untouched"
    assert cluster.ers("broken").finished_runner_cleanup_patch_id == 0
    assert cluster.runners("negative") == []


@dataclass
class StoredMalformed:
    """A reader (the cache or the API reader) showing the set's status with malformed
    fields, as a server that did not enforce the CRD's schema would have stored them,
    until a write changes the set's resourceVersion."""

    inner: CachedReader
    resource_version: str
    fields: dict[str, Any]

    def get_ers(self, namespace: str, name: str) -> api.EphemeralRunnerSet | None:
        ers = self.inner.get_ers(namespace, name)
        if ers is not None and ers.resource_version == self.resource_version:
            ers.status.update(self.fields)
        return ers

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_malformed_status_field_of_the_controller_is_overwritten_not_reported_invalid(
    cluster: Cluster,
) -> None:
    # The marker reads "3" (a string) while spec.patchID is 3: misread as the number it
    # would suppress the scale-up; reset to 0 it records no cleanup.
    created = cluster.create_ers(replicas=2, patch_id=3)
    version = created["metadata"]["resourceVersion"]
    bad = {"phase": 7, "finishedRunnerCleanupPatchID": "3"}
    reconciler = EphemeralRunnerSetReconciler(
        cache=StoredMalformed(cluster.cache, version, bad),
        api=StoredMalformed(cluster.api_reader, version, bad),
        writer=cluster.writer,
        events=EventRecorder(cluster.api_client),
        services=cluster.services,
    )
    cluster.sync()

    outcome = reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners"))

    assert not cluster.events("InvalidSpec"), "the controller's own fields are not bad input"
    assert outcome.action == "scale-up"
    assert len(cluster.live_runner_names()) == 2
    repair = body(cluster.requests(verb="patch", resource=api.ERS_PLURAL, subresource="status")[0])
    assert repair == {
        "metadata": {"resourceVersion": version},
        # The phase is removed (step 9 derives it again); the count ARC's schema requires
        # comes with the first status write on a set that lacks it.
        "status": {"phase": None, "finishedRunnerCleanupPatchID": 0, "currentReplicas": 0},
    }
    (event,) = cluster.events("MalformedStatusOverwritten")
    assert event["type"] == "Warning"
    assert "status.finishedRunnerCleanupPatchID: must be an integer" in event["message"]


@dataclass
class OneRunnerMalformed:
    """The cache, showing one owned runner with a malformed field (as a server that did
    not enforce the CRD's schema would have stored it)."""

    inner: CachedReader
    fields: dict[str, Any]

    def list_owned_runners(self, ers: api.EphemeralRunnerSet) -> list[api.EphemeralRunner]:
        runners = self.inner.list_owned_runners(ers)
        for runner in runners[:1]:
            runner.status.update(self.fields)
        return runners

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_runner_with_a_malformed_field_gets_a_warning_naming_the_runner(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=0, patch_id=0)
    bad = cluster.add_runner(phase="Running", runner_id=6)
    reconciler = EphemeralRunnerSetReconciler(
        cache=OneRunnerMalformed(cluster.cache, {"phase": 3}),
        api=cluster.api_reader,
        writer=cluster.writer,
        events=EventRecorder(cluster.api_client),
        services=cluster.services,
    )
    cluster.sync()

    outcome = reconciler.reconcile_with_outcome(Request(cluster.namespace, "runners"))

    assert outcome.action == "invalid"
    assert warnings_for(cluster, "runners") == [
        f"EphemeralRunner {cluster.namespace}/{bad}: status.phase: must be a string, got 3"
    ]
    assert cluster.live_runner_names() == {bad}, "no runner changes"
