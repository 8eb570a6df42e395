"""The EphemeralRunner a scale-up creates."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from ersctl import api
from ersctl.ephemeralrunnerset.creation import CreateResult, create_runners, runner_body
from ersctl.kube.errors import KubeError
from tests.ersctl.ephemeralrunnerset.harness import Cluster
from tests.ersctl.ephemeralrunnerset.objects import RUNNER_SPEC, ers_doc


def scale_set() -> api.EphemeralRunnerSet:
    doc = ers_doc(
        "pool",
        replicas=3,
        patch_id=12,
        actionable_revision=4,
        labels={"actions.github.com/scale-set-name": "pool", "team": "ci"},
        runner_metadata={
            "labels": {"team": "overridden-by-the-set", "tier": "gpu"},
            "annotations": {"owner": "overridden-by-the-set", "cost-center": "42"},
        },
    )
    doc["metadata"]["uid"] = "uid-123"
    doc["metadata"]["annotations"] = {
        "actions.github.com/runner-group-name": "default",
        "actions.github.com/scale-set-name": "pool",
        "owner": "platform",
        api.INTEGRITY_HASH_ANNOTATION: "the-sets-own",
        api.LAST_APPLIED_ANNOTATION: '{"the": "whole set"}',
    }
    return api.EphemeralRunnerSet(doc)


def test_the_runner_is_named_after_the_set_and_owned_by_it() -> None:
    body = runner_body(scale_set())

    assert body["apiVersion"] == api.API_VERSION
    assert body["kind"] == api.ER_KIND
    assert body["metadata"]["generateName"] == "pool-runner-"
    assert body["metadata"]["namespace"] == "arc"
    assert body["metadata"]["ownerReferences"] == [
        {
            "apiVersion": api.API_VERSION,
            "kind": api.ERS_KIND,
            "name": "pool",
            "uid": "uid-123",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert body["metadata"]["finalizers"] == [api.ER_FINALIZER, api.ER_REGISTRATION_FINALIZER]


def test_labels_and_annotations_come_from_the_set_and_its_runner_metadata_as_in_arc() -> None:
    metadata = runner_body(scale_set())["metadata"]

    assert metadata["labels"] == {
        "actions.github.com/scale-set-name": "pool",
        "team": "ci",
        "tier": "gpu",
        "app.kubernetes.io/component": "runner",
    }
    # The set's own annotations win over its runner metadata's (the runner group and
    # scale set name among them); its integrity hash and kubectl's copy of its manifest
    # describe the set and stay there.
    assert metadata["annotations"] == {
        "actions.github.com/runner-group-name": "default",
        "actions.github.com/scale-set-name": "pool",
        "owner": "platform",
        "cost-center": "42",
        api.PATCH_ID_ANNOTATION: "12",
        api.ACTIONABLE_REVISION_ANNOTATION: "4",
    }


def test_the_spec_is_a_copy_of_the_runner_template() -> None:
    ers = scale_set()
    body = runner_body(ers)

    assert body["spec"] == RUNNER_SPEC
    body["spec"]["spec"]["containers"][0]["image"] = "changed"
    assert ers.ephemeral_runner_spec["spec"]["containers"][0]["image"] != "changed"


def test_a_set_without_a_runner_template_names_the_field() -> None:
    ers = api.EphemeralRunnerSet(ers_doc(runner_spec=None))

    with pytest.raises(api.FieldError, match=r"spec\.ephemeralRunnerSpec"):
        runner_body(ers)


class CountingWriter:
    """A ``Writer`` that only creates, slowly, counting how many creates overlap."""

    def __init__(self, *, fail_every: int = 0) -> None:
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = self.calls = 0
        self.fail_every = fail_every

    def create_runner(self, body: dict[str, Any]) -> api.EphemeralRunner:
        with self.lock:
            self.calls += 1
            call = self.calls
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(0.01)
        with self.lock:
            self.in_flight -= 1
        if self.fail_every and call % self.fail_every == 0:
            raise KubeError("create ephemeralrunners", status=500, reason="InternalError")
        return api.EphemeralRunner(body)

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a scale-up only creates; it called {name}")


def test_creates_run_concurrently_up_to_the_bound() -> None:
    writer = CountingWriter()

    result = create_runners(writer, runner_body(scale_set()), count=12, concurrency=4)

    assert result == CreateResult(created=12, errors=())
    assert writer.most_in_flight == 4


def test_a_failed_create_does_not_stop_the_others_and_is_reported() -> None:
    writer = CountingWriter(fail_every=3)

    result = create_runners(writer, runner_body(scale_set()), count=6, concurrency=2)

    assert writer.calls == 6
    assert result.created == 4
    assert [e.status if isinstance(e, KubeError) else e for e in result.errors] == [500, 500]


def test_updated_set_annotations_reach_only_runners_created_afterwards(cluster: Cluster) -> None:
    # ARC's "propagates updated EphemeralRunnerSet annotations to newly created
    # EphemeralRunners", against our reconciler and the embedded API server.
    cluster.create_ers(replicas=0)
    annotate(cluster, {"arc.test/runner-set-annotation": "initial"})
    cluster.patch_ers("runners", {"replicas": 1, "patchID": 1})
    cluster.reconcile()
    (first,) = cluster.runners()
    annotate(cluster, {"arc.test/runner-set-annotation": "updated", "arc.test/new": "added"})
    cluster.patch_ers("runners", {"replicas": 2, "patchID": 2})
    cluster.reconcile()

    by_name = {r.name: r.annotations for r in cluster.runners()}
    assert by_name.pop(first.name)["arc.test/runner-set-annotation"] == "initial"
    ((_, second),) = by_name.items()
    assert second["arc.test/runner-set-annotation"] == "updated"
    assert second["arc.test/new"] == "added"


def annotate(cluster: Cluster, annotations: dict[str, str]) -> None:
    """Merge ``annotations`` into the set's metadata, as a user or ARC's chart would."""
    cluster.custom.patch_namespaced_custom_object(
        api.GROUP, api.VERSION, cluster.namespace, api.ERS_PLURAL, "runners",
        {"metadata": {"annotations": annotations}},
        _content_type="application/merge-patch+json",
    )  # fmt: skip
