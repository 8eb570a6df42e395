"""Write semantics over HTTP with the official client: resourceVersion preconditions,
the status subresource, generation, create defaults, no-op writes."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from ersctl import api
from tests.ersctl.testing.apiserver.objects import RUNNING, Objects, er_body, ers_body
from tests.kubeclient import status_of


def test_create_sets_server_fields_and_generation_one(ers: Objects) -> None:
    created = ers.create(ers_body("a"))

    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0
    assert ers.get("a") == created


def test_create_with_generate_name_gets_a_unique_name(runners: Objects) -> None:
    first = runners.create(er_body(generateName="arc-runner-"))
    second = runners.create(er_body(generateName="arc-runner-"))

    assert first["metadata"]["name"].startswith("arc-runner-")
    assert len(first["metadata"]["name"]) == len("arc-runner-") + 5
    assert first["metadata"]["name"] != second["metadata"]["name"]


def test_create_of_an_existing_name_is_409_already_exists(ers: Objects) -> None:
    ers.create(ers_body("a"))

    with pytest.raises(ApiException) as caught:
        ers.create(ers_body("a"))

    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "AlreadyExists"


def test_create_without_name_or_generate_name_is_422_invalid(ers: Objects) -> None:
    with pytest.raises(ApiException) as caught:
        ers.create(ers_body("") | {"metadata": {}})

    assert caught.value.status == 422
    status = status_of(caught.value)
    assert status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "metadata.name"


def test_create_in_a_missing_namespace_is_404(custom: Any) -> None:
    with pytest.raises(ApiException) as caught:
        custom.create_namespaced_custom_object(
            api.GROUP, api.VERSION, "nowhere", api.ERS_PLURAL, ers_body("a")
        )

    assert caught.value.status == 404
    assert 'namespaces "nowhere" not found' in status_of(caught.value)["message"]


def test_create_ignores_status_when_the_status_subresource_exists(ers: Objects) -> None:
    created = ers.create(ers_body("a") | {"status": RUNNING})

    assert "status" not in created


def test_resource_version_increases_across_all_objects(ers: Objects, runners: Objects) -> None:
    a = ers.create(ers_body("a"))
    runner = runners.create(er_body(generateName="r-"))
    b = ers.patch("a", {"spec": {"replicas": 5}})

    versions = [int(o["metadata"]["resourceVersion"]) for o in (a, runner, b)]
    assert versions == sorted(versions) and len(set(versions)) == 3


def test_merge_patch_with_a_stale_resource_version_is_409_and_changes_nothing(
    ers: Objects,
) -> None:
    created = ers.create(ers_body("a", replicas=1))
    current = ers.patch("a", {"spec": {"replicas": 2}})

    with pytest.raises(ApiException) as caught:
        ers.patch(
            "a",
            {
                "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                "spec": {"replicas": 9},
            },
        )

    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "Conflict"
    assert ers.get("a") == current


def test_merge_patch_with_the_current_resource_version_succeeds(ers: Objects) -> None:
    created = ers.create(ers_body("a", replicas=1))

    patched = ers.patch(
        "a",
        {
            "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
            "spec": {"replicas": 4},
        },
    )

    assert patched["spec"]["replicas"] == 4
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def test_status_precondition_on_the_status_subresource_is_honoured_too(ers: Objects) -> None:
    created = ers.create(ers_body("a"))
    ers.patch("a", {"status": RUNNING}, status=True)

    with pytest.raises(ApiException) as caught:
        ers.patch(
            "a",
            {
                "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                "status": {"finishedRunnerCleanupPatchID": 3, "currentReplicas": 0},
            },
            status=True,
        )

    assert caught.value.status == 409
    assert "finishedRunnerCleanupPatchID" not in ers.get("a")["status"]


def test_status_sent_to_the_main_resource_is_ignored(ers: Objects) -> None:
    ers.create(ers_body("a"))
    ers.patch("a", {"status": RUNNING}, status=True)

    patched = ers.patch("a", {"spec": {"replicas": 3}, "status": {"phase": "Outdated"}})

    assert patched["status"] == RUNNING
    assert patched["spec"]["replicas"] == 3


def test_put_to_the_main_resource_keeps_the_stored_status(ers: Objects) -> None:
    ers.create(ers_body("a"))
    ers.patch("a", {"status": RUNNING}, status=True)
    body = ers.get("a")
    body["status"] = {"phase": "Outdated"}
    body["spec"]["replicas"] = 7

    replaced = ers.replace("a", body)

    assert replaced["status"] == RUNNING
    assert replaced["spec"]["replicas"] == 7


def test_writes_to_status_change_only_status(ers: Objects) -> None:
    ers.create(ers_body("a", replicas=1))

    patched = ers.patch(
        "a",
        {
            "metadata": {"labels": {"x": "y"}},
            "spec": {"replicas": 8},
            "status": RUNNING,
        },
        status=True,
    )

    assert patched["status"] == RUNNING
    assert patched["spec"]["replicas"] == 1
    assert "labels" not in patched["metadata"]


@pytest.mark.parametrize(
    ("patch", "status", "bumped"),
    [
        pytest.param({"spec": {"replicas": 2}}, False, True, id="spec change bumps"),
        pytest.param(
            {"metadata": {"labels": {"a": "b"}}}, False, False, id="label change does not"
        ),
        pytest.param(
            {"metadata": {"finalizers": ["x/y"]}}, False, False, id="finalizer change does not"
        ),
        pytest.param({"status": RUNNING}, True, False, id="status change does not"),
    ],
)
def test_generation_moves_only_on_changes_outside_metadata_and_status(
    ers: Objects, patch: dict[str, Any], status: bool, bumped: bool
) -> None:
    ers.create(ers_body("a", replicas=1))

    patched = ers.patch("a", patch, status=status)

    assert patched["metadata"]["generation"] == (2 if bumped else 1)


def test_a_no_op_patch_does_not_change_the_resource_version(ers: Objects) -> None:
    created = ers.create(ers_body("a", replicas=1))

    patched = ers.patch("a", {"spec": {"replicas": 1}})

    assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_put_with_a_stale_resource_version_is_409(ers: Objects) -> None:
    created = ers.create(ers_body("a"))
    ers.patch("a", {"spec": {"replicas": 2}})

    created["spec"]["replicas"] = 5
    with pytest.raises(ApiException) as caught:
        ers.replace("a", created)

    assert caught.value.status == 409
    assert ers.get("a")["spec"]["replicas"] == 2


def test_put_of_a_custom_resource_without_resource_version_is_422(ers: Objects) -> None:
    created = ers.create(ers_body("a"))
    del created["metadata"]["resourceVersion"]

    with pytest.raises(ApiException) as caught:
        ers.replace("a", created)

    assert caught.value.status == 422


def test_clients_cannot_change_server_owned_metadata(ers: Objects) -> None:
    created = ers.create(ers_body("a"))

    patched = ers.patch(
        "a", {"metadata": {"generation": 42, "creationTimestamp": "2001-01-01T00:00:00Z"}}
    )

    for field in ("generation", "creationTimestamp"):
        assert patched["metadata"][field] == created["metadata"][field]


def test_a_patch_changing_the_uid_is_422_and_a_put_with_another_uid_is_409(
    ers: Objects,
) -> None:
    created = ers.create(ers_body("a"))

    with pytest.raises(ApiException) as patched:
        ers.patch("a", {"metadata": {"uid": "forged"}})
    body = ers.get("a")
    body["metadata"]["uid"] = "forged"
    with pytest.raises(ApiException) as replaced:
        ers.replace("a", body)

    assert patched.value.status == 422
    assert replaced.value.status == 409
    assert ers.get("a")["metadata"]["uid"] == created["metadata"]["uid"]


def test_no_finalizer_can_be_added_to_an_object_being_deleted(ers: Objects) -> None:
    ers.create(ers_body("a", finalizers=["one/x"]))
    ers.delete("a")

    with pytest.raises(ApiException) as caught:
        ers.patch("a", {"metadata": {"finalizers": ["one/x", api.ERS_FINALIZER]}})

    assert caught.value.status == 422
    assert "no new finalizers" in status_of(caught.value)["message"]
    assert ers.get("a")["metadata"]["finalizers"] == ["one/x"]


def test_create_with_a_resource_version_is_refused_by_storage_with_500(ers: Objects) -> None:
    with pytest.raises(ApiException) as caught:
        ers.create(ers_body("a", resourceVersion="12"))

    # The storage layer's plain error: 500, no reason, after every other check.
    assert caught.value.status == 500
    status = status_of(caught.value)
    assert status["message"] == "resourceVersion should not be set on objects to be created"
    assert "reason" not in status
    with pytest.raises(ApiException) as invalid:
        ers.create(ers_body("a", resourceVersion="12") | {"spec": {"replicas": "two"}})
    assert invalid.value.status == 422
    assert ers.list()["items"] == []


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"apiVersion": api.API_VERSION, "metadata": {"name": "a"}}, id="no kind"),
        pytest.param({"metadata": {}, "spec": {"replicas": "two"}}, id="no kind, invalid too"),
    ],
)
def test_a_custom_object_without_kind_is_400_before_any_other_check(
    custom: client.CustomObjectsApi, namespace: str, body: dict[str, Any]
) -> None:
    # Before the namespace is looked up, the name validated or the schema applied.
    for where in (namespace, "nowhere"):
        with pytest.raises(ApiException) as caught:
            custom.create_namespaced_custom_object(
                api.GROUP, api.VERSION, where, api.ERS_PLURAL, body
            )

        assert caught.value.status == 400
        status = status_of(caught.value)
        assert status["reason"] == "BadRequest"
        assert "Object 'Kind' is missing" in status["message"]


def test_a_put_of_a_custom_object_without_kind_is_400(ers: Objects) -> None:
    created = ers.create(ers_body("a"))
    del created["kind"]

    with pytest.raises(ApiException) as caught:
        ers.replace("a", created)

    assert caught.value.status == 400
    assert "Object 'Kind' is missing" in status_of(caught.value)["message"]


@pytest.mark.parametrize(
    ("refs", "field"),
    [
        pytest.param(
            [{"apiVersion": "v1", "kind": "Pod", "name": "p"}],
            "metadata.ownerReferences.uid",
            id="no uid",
        ),
        pytest.param(
            [
                {"apiVersion": "v1", "kind": "Pod", "name": n, "uid": n, "controller": True}
                for n in ("p", "q")
            ],
            "metadata.ownerReferences",
            id="two controllers",
        ),
    ],
)
def test_incomplete_owner_references_are_422(
    runners: Objects, refs: list[dict[str, Any]], field: str
) -> None:
    with pytest.raises(ApiException) as caught:
        runners.create(er_body(name="r", ownerReferences=refs))

    assert caught.value.status == 422
    assert status_of(caught.value)["details"]["causes"][0]["field"] == field
