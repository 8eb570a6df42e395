"""Deletion over HTTP: finalizers and deletionTimestamp, preconditions, garbage
collection of dependents."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from ersctl import api
from ersctl.testing.apiserver import ApiServer
from tests.apiserver.objects import Objects, er_body, ers_body
from tests.kubeclient import new_watch
from tests.polling import eventually


def test_delete_with_a_finalizer_keeps_the_object_until_the_finalizer_is_removed(
    ers: Objects, custom: client.CustomObjectsApi
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
    for event in stream.stream(
        custom.list_namespaced_custom_object,
        api.GROUP,
        api.VERSION,
        "default",
        api.ERS_PLURAL,
        resource_version=start,
        timeout_seconds=5,
    ):
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


def test_garbage_collection_honours_the_dependents_finalizers(
    ers: Objects, runners: Objects
) -> None:
    owner = ers.create(ers_body("a"))
    runners.create(er_body(owner, name="r", finalizers=[api.ER_FINALIZER]))

    ers.delete("a")

    eventually(lambda: "deletionTimestamp" in runners.get("r")["metadata"])
    runners.patch("r", {"metadata": {"finalizers": None}})
    assert _names(runners) == []


def test_garbage_collection_waits_while_the_owner_is_only_terminating(
    apiserver: ApiServer, ers: Objects, runners: Objects
) -> None:
    owner = ers.create(ers_body("a", finalizers=[api.ERS_FINALIZER]))
    runners.create(er_body(owner, name="r"))

    ers.delete("a")
    assert apiserver.wait_for_gc()

    assert _names(runners) == ["r"]


def test_a_dependent_created_for_a_missing_owner_is_collected(runners: Objects) -> None:
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}}

    runners.create(er_body(ghost, name="r"))

    eventually(lambda: _names(runners) == [])


def test_without_gc_dependents_of_a_deleted_owner_stay() -> None:
    with ApiServer(gc=False) as server:
        api_client = server.api_client()
        custom = client.CustomObjectsApi(api_client)
        sets, runners = Objects(custom, api.ERS_PLURAL), Objects(custom, api.ER_PLURAL)
        owner = sets.create(ers_body("a"))
        runners.create(er_body(owner, name="r"))

        sets.delete("a")
        assert server.wait_for_gc()  # a collector, were there one, would be done by now

        assert _names(runners) == ["r"]
        api_client.close()


def test_orphan_propagation_strips_the_owner_reference(ers: Objects, runners: Objects) -> None:
    owner = ers.create(ers_body("a"))
    runners.create(er_body(owner, name="r"))

    ers.delete("a", propagation_policy="Orphan")

    assert "ownerReferences" not in runners.get("r")["metadata"]


def test_deleting_a_namespace_deletes_its_contents(core: client.CoreV1Api, custom: Any) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="team")))
    custom.create_namespaced_custom_object(
        api.GROUP,
        api.VERSION,
        "team",
        api.ERS_PLURAL,
        {"metadata": {"name": "a", "finalizers": [api.ERS_FINALIZER]}, "spec": {"patchID": 0}},
    )

    core.delete_namespace("team")
    terminating = core.read_namespace("team").status
    assert terminating is not None and terminating.phase == "Terminating"
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_secret(
            "team", client.V1Secret(metadata=client.V1ObjectMeta(name="s"))
        )
    custom.patch_namespaced_custom_object(
        api.GROUP, api.VERSION, "team", api.ERS_PLURAL, "a", {"metadata": {"finalizers": None}}
    )

    assert refused.value.status == 403
    with pytest.raises(ApiException) as gone:
        core.read_namespace("team")
    assert gone.value.status == 404


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
