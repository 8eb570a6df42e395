"""Patches (JSON patch, strategic merge), CRD schema pruning and validation, dry runs
and delete collection, over HTTP with the official client."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from ersctl import api
from tests.ersctl.testing.apiserver.objects import (
    JSON_PATCH,
    RUNNER_SPEC,
    RUNNING,
    STRATEGIC,
    Objects,
    ers_body,
)
from tests.kubeclient import status_of


def test_json_patch_applies_operations_and_a_failed_test_changes_nothing(ers: Objects) -> None:
    ers.create(ers_body("a", replicas=1))

    patched = ers.patch(
        "a",
        [
            {"op": "test", "path": "/spec/replicas", "value": 1},
            {"op": "replace", "path": "/spec/replicas", "value": 6},
            {"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
        ],
        content_type=JSON_PATCH,
    )
    assert patched["spec"]["replicas"] == 6 and patched["metadata"]["labels"] == {"k": "v"}

    with pytest.raises(ApiException) as caught:
        ers.patch(
            "a",
            [
                {"op": "test", "path": "/spec/replicas", "value": 1},
                {"op": "replace", "path": "/spec/replicas", "value": 0},
            ],
            content_type=JSON_PATCH,
        )
    assert caught.value.status == 422
    assert ers.get("a") == patched


def test_json_patch_replacing_resource_version_is_a_precondition(ers: Objects) -> None:
    created = ers.create(ers_body("a"))
    ers.patch("a", {"spec": {"replicas": 3}})

    with pytest.raises(ApiException) as caught:
        ers.patch(
            "a",
            [
                {
                    "op": "replace",
                    "path": "/metadata/resourceVersion",
                    "value": created["metadata"]["resourceVersion"],
                },
                {"op": "replace", "path": "/spec/replicas", "value": 0},
            ],
            content_type=JSON_PATCH,
        )

    assert caught.value.status == 409


def test_strategic_merge_patch_is_415_for_custom_resources(ers: Objects) -> None:
    ers.create(ers_body("a"))

    with pytest.raises(ApiException) as caught:
        ers.patch(
            "a", {"spec": {"replicas": 3}}, content_type="application/strategic-merge-patch+json"
        )

    assert caught.value.status == 415
    assert status_of(caught.value)["reason"] == "UnsupportedMediaType"


def test_strategic_merge_patch_works_for_core_types(core: Any, namespace: str) -> None:
    core.create_namespaced_secret(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "stringData": {},
            "data": {"a": "eA=="},
        },
    )

    patched = core.patch_namespaced_secret(
        "s", namespace, {"metadata": {"labels": {"k": "v"}}}, _content_type=STRATEGIC
    )

    assert patched.metadata.labels == {"k": "v"}
    assert patched.data == {"a": "eA=="}


def test_fields_unknown_to_the_crd_schema_are_pruned(ers: Objects) -> None:
    ers.create(ers_body("a") | {"extra": 1})
    runner_spec = {**RUNNER_SPEC, "spec": {"containers": [{"name": "runner", "imag": "typo"}]}}
    ers.patch("a", {"spec": {"notInSchema": True, "ephemeralRunnerSpec": runner_spec}})

    patched = ers.patch(
        "a", {"status": {**RUNNING, "madeUp": 3}, "metadata": {"bogus": 1}}, status=True
    )

    assert "extra" not in patched and "bogus" not in patched["metadata"]
    assert "notInSchema" not in patched["spec"]
    # The pod template is typed too: a misspelt container field is dropped.
    assert patched["spec"]["ephemeralRunnerSpec"]["spec"] == {"containers": [{"name": "runner"}]}
    assert patched["status"] == RUNNING


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        pytest.param({"spec": {"replicas": "three"}}, "spec.replicas", id="string for integer"),
        pytest.param({"spec": {"replicas": True}}, "spec.replicas", id="boolean for integer"),
        pytest.param(
            {"spec": {"ephemeralRunnerMetadata": {"labels": {"a": 1}}}},
            "spec.ephemeralRunnerMetadata.labels.a",
            id="map value type",
        ),
    ],
)
def test_values_of_the_wrong_type_are_422_and_change_nothing(
    ers: Objects, patch: dict[str, Any], field: str
) -> None:
    created = ers.create(ers_body("a"))

    with pytest.raises(ApiException) as caught:
        ers.patch("a", patch)

    assert caught.value.status == 422
    assert status_of(caught.value)["details"]["causes"][0]["field"] == field
    assert ers.get("a") == created


@pytest.mark.parametrize(
    "write",
    [
        pytest.param("create", id="create"),
        pytest.param("patch", id="patch"),
        pytest.param("delete", id="delete"),
        pytest.param("delete-options", id="delete with dryRun in DeleteOptions"),
    ],
)
def test_dry_run_answers_as_the_write_would_and_stores_nothing(
    ers: Objects, custom: Any, write: str
) -> None:
    existing = ers.create(ers_body("a", replicas=1))
    args = (api.GROUP, api.VERSION, ers.namespace, api.ERS_PLURAL)

    if write == "create":
        answer = custom.create_namespaced_custom_object(*args, ers_body("b"), dry_run="All")
        assert answer["metadata"]["name"] == "b" and answer["metadata"]["uid"]
    elif write == "patch":
        answer = custom.patch_namespaced_custom_object(
            *args, "a", {"spec": {"replicas": 5}}, dry_run="All"
        )
        assert answer["spec"]["replicas"] == 5 and answer["metadata"]["generation"] == 2
    elif write == "delete":
        answer = custom.delete_namespaced_custom_object(*args, "a", dry_run="All")
        assert answer["status"] == "Success"
    else:  # as kubectl sends it: inside DeleteOptions
        answer = custom.delete_namespaced_custom_object(
            *args, "a", body=client.V1DeleteOptions(dry_run=["All"])
        )
        assert answer["status"] == "Success"

    assert [item["metadata"]["name"] for item in ers.list()["items"]] == ["a"]
    assert ers.get("a") == existing


def test_dry_run_still_reports_conflicts(ers: Objects, custom: Any) -> None:
    created = ers.create(ers_body("a"))
    ers.patch("a", {"spec": {"replicas": 2}})

    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            api.GROUP,
            api.VERSION,
            ers.namespace,
            api.ERS_PLURAL,
            "a",
            {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}},
            dry_run="All",
        )

    assert caught.value.status == 409


def test_delete_collection_deletes_what_the_selector_matches(ers: Objects, custom: Any) -> None:
    ers.create(ers_body("a", labels={"team": "x"}))
    ers.create(ers_body("b", labels={"team": "x"}, finalizers=[api.ERS_FINALIZER]))
    ers.create(ers_body("c"))

    custom.delete_collection_namespaced_custom_object(
        api.GROUP, api.VERSION, ers.namespace, api.ERS_PLURAL, label_selector="team=x"
    )

    assert [item["metadata"]["name"] for item in ers.list()["items"]] == ["b", "c"]
    assert ers.get("b")["metadata"]["deletionTimestamp"]
