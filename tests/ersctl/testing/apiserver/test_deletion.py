"""Deletion over HTTP: finalizers and deletionTimestamp, preconditions, garbage
collection of dependents and namespace deletion (kube-controller-manager's jobs, which
the embedded server does unless told not to)."""

from __future__ import annotations

import threading

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from ersctl import api
from ersctl.testing.apiserver import ApiServer
from tests.ersctl.testing.apiserver.objects import Objects, er_body, ers_body
from tests.kubeapi import KubeApi
from tests.kubeclient import new_watch
from tests.polling import eventually


def test_delete_with_a_finalizer_keeps_the_object_until_the_finalizer_is_removed(
    ers: Objects,
) -> None:
    ers.create(ers_body("a", finalizers=[api.ERS_FINALIZER]))
    start = ers.list()["metadata"]["resourceVersion"]

    ers.delete("a")
    marked = ers.get("a")
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["finalizers"] == [api.ERS_FINALIZER]

    ers.patch("a", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as caught:
        ers.get("a")
    assert caught.value.status == 404

    stream = new_watch()
    seen = []
    for event in stream.stream(ers.list_call, resource_version=start, timeout_seconds=5):
        seen.append(event["type"])
        if len(seen) == 2:
            stream.stop()
    assert seen == ["MODIFIED", "DELETED"]


def test_deleting_again_does_not_move_the_deletion_timestamp(ers: Objects) -> None:
    ers.create(ers_body("a", finalizers=[api.ERS_FINALIZER]))
    ers.delete("a")
    first = ers.get("a")

    ers.delete("a")

    assert ers.get("a") == first


def test_finalizers_cannot_be_added_back_to_undo_a_deletion_timestamp(ers: Objects) -> None:
    ers.create(ers_body("a", finalizers=[api.ERS_FINALIZER]))
    ers.delete("a")

    patched = ers.patch("a", {"metadata": {"deletionTimestamp": None}})

    assert patched["metadata"]["deletionTimestamp"]


def test_delete_without_finalizers_removes_at_once(ers: Objects) -> None:
    ers.create(ers_body("a"))

    status = ers.delete("a")

    assert status["status"] == "Success"
    assert ers.list()["items"] == []


@pytest.mark.parametrize(
    "preconditions",
    [
        pytest.param(client.V1Preconditions(uid="1"), id="uid"),
        pytest.param(client.V1Preconditions(resource_version="1"), id="resourceVersion"),
    ],
)
def test_delete_preconditions_that_do_not_match_are_409(
    ers: Objects, preconditions: client.V1Preconditions
) -> None:
    ers.create(ers_body("a"))

    with pytest.raises(ApiException) as caught:
        ers.delete("a", body=client.V1DeleteOptions(preconditions=preconditions))

    assert caught.value.status == 409
    assert ers.get("a")


def test_delete_preconditions_that_match_are_honoured(ers: Objects) -> None:
    created = ers.create(ers_body("a"))
    meta = created["metadata"]

    ers.delete(
        "a",
        body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(
                uid=meta["uid"], resource_version=meta["resourceVersion"]
            )
        ),
    )

    assert ers.list()["items"] == []


def _names(objects: Objects) -> list[str]:
    return [item["metadata"]["name"] for item in objects.list()["items"]]


@pytest.mark.needs_gc("dependents collected")
def test_garbage_collection_removes_the_dependents_of_a_deleted_owner(
    ers: Objects, runners: Objects
) -> None:
    owner = ers.create(ers_body("a"))
    other = ers.create(ers_body("b"))
    runners.create(er_body(owner, name="mine-1"))
    runners.create(er_body(owner, name="mine-2"))
    runners.create(er_body(other, name="theirs"))

    ers.delete("a")

    eventually(lambda: _names(runners) == ["theirs"])


@pytest.mark.needs_gc("dependents collected")
def test_garbage_collection_honours_the_dependents_finalizers(
    ers: Objects, runners: Objects
) -> None:
    owner = ers.create(ers_body("a"))
    runners.create(er_body(owner, name="r", finalizers=[api.ER_FINALIZER]))

    ers.delete("a")

    eventually(lambda: "deletionTimestamp" in runners.get("r")["metadata"])
    runners.patch("r", {"metadata": {"finalizers": None}})
    assert _names(runners) == []


@pytest.mark.embedded_only("waits for its garbage collector to be idle")
def test_garbage_collection_waits_while_the_owner_is_only_terminating(
    apiserver: ApiServer, ers: Objects, runners: Objects
) -> None:
    owner = ers.create(ers_body("a", finalizers=[api.ERS_FINALIZER]))
    runners.create(er_body(owner, name="r"))

    ers.delete("a")
    assert apiserver.wait_for_gc()

    assert _names(runners) == ["r"]


@pytest.mark.needs_gc("dependents collected")
def test_a_dependent_created_for_a_missing_owner_is_collected(runners: Objects) -> None:
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}}

    runners.create(er_body(ghost, name="r"))

    eventually(lambda: _names(runners) == [])


@pytest.mark.embedded_only("a server without its controllers")
def test_without_gc_dependents_of_a_deleted_owner_and_a_deleted_namespace_stay() -> None:
    # A bare kube-apiserver (kube-controller-manager's jobs switched off).
    with ApiServer(gc=False) as server, server.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        sets, runners = (
            Objects(custom, api.ERS_PLURAL, "default"),
            Objects(custom, api.ER_PLURAL, "default"),
        )
        owner = sets.create(ers_body("a"))
        runners.create(er_body(owner, name="r"))
        core.create_namespace(
            client.V1Namespace(
                api_version="v1", kind="Namespace", metadata=client.V1ObjectMeta(name="team")
            )
        )
        Objects(custom, api.ERS_PLURAL, "team").create(ers_body("in-team"))

        sets.delete("a")
        core.delete_namespace("team")
        assert server.wait_for_gc()  # a collector, were there one, would be done by now

        assert _names(runners) == ["r"]
        team = core.read_namespace("team")
        assert team.status is not None and team.status.phase == "Terminating"
        assert _names(Objects(custom, api.ERS_PLURAL, "team")) == ["in-team"]


@pytest.mark.needs_gc("the orphan finalizer processed")
def test_orphan_propagation_strips_the_owner_reference(ers: Objects, runners: Objects) -> None:
    owner = ers.create(ers_body("a"))
    runners.create(er_body(owner, name="r"))

    ers.delete("a", propagation_policy="Orphan")

    eventually(lambda: "ownerReferences" not in runners.get("r")["metadata"])
    assert _names(runners) == ["r"]


def test_a_namespace_being_deleted_takes_no_new_content(
    core: client.CoreV1Api, kube: KubeApi
) -> None:
    team = kube.create_namespace("team")
    Objects(client.CustomObjectsApi(core.api_client), api.ERS_PLURAL, team).create(
        ers_body("a", finalizers=[api.ERS_FINALIZER])
    )

    core.delete_namespace(team)
    terminating = core.read_namespace(team).status
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_secret(
            team,
            client.V1Secret(
                api_version="v1", kind="Secret", metadata=client.V1ObjectMeta(name="s")
            ),
        )

    assert terminating is not None and terminating.phase == "Terminating"
    assert refused.value.status == 403


@pytest.mark.needs_gc("the namespace controller empties and removes the namespace")
def test_deleting_a_namespace_deletes_its_contents(core: client.CoreV1Api, kube: KubeApi) -> None:
    team = kube.create_namespace("team")
    sets = Objects(client.CustomObjectsApi(core.api_client), api.ERS_PLURAL, team)
    sets.create(ers_body("a", finalizers=[api.ERS_FINALIZER]))

    core.delete_namespace(team)
    eventually(lambda: "deletionTimestamp" in sets.get("a")["metadata"], timeout=30)
    sets.patch("a", {"metadata": {"finalizers": None}})

    def gone() -> bool:
        try:
            core.read_namespace(team)
        except ApiException as exc:
            return bool(exc.status == 404)
        return False

    eventually(gone, timeout=60, what=f"namespace {team} removed")


def test_concurrent_writers_with_preconditions_never_both_win(ers: Objects) -> None:
    created = ers.create(ers_body("a"))
    rv = created["metadata"]["resourceVersion"]
    outcomes: list[int] = []
    lock = threading.Lock()

    def write(replicas: int) -> None:
        try:
            ers.patch("a", {"metadata": {"resourceVersion": rv}, "spec": {"replicas": replicas}})
            code = 200
        except ApiException as exc:
            code = exc.status
        with lock:
            outcomes.append(code)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2, 8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == [200] + [409] * 5


@pytest.mark.embedded_only("waits for its garbage collector to be idle")
def test_foreground_deletion_keeps_the_owner_until_its_blocking_dependents_are_gone(
    apiserver: ApiServer, ers: Objects, runners: Objects
) -> None:
    owner = ers.create(ers_body("a"))
    runners.create(er_body(owner, name="plain"))
    runners.create(er_body(owner, name="held", finalizers=[api.ER_FINALIZER]))

    ers.delete("a", propagation_policy="Foreground")

    assert apiserver.wait_for_gc()
    assert _names(runners) == ["held"]
    deleting = ers.get("a")["metadata"]
    assert deleting["deletionTimestamp"] and deleting["finalizers"] == ["foregroundDeletion"]
    runners.patch("held", {"metadata": {"finalizers": None}})
    eventually(lambda: _names(ers) == [])
