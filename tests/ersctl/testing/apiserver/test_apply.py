"""Server-side apply and ``metadata.managedFields`` over HTTP: who owns which field
after updates and applies, conflicts and ``force``, fields an applier stops naming."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from ersctl import api
from tests.ersctl.testing.apiserver.objects import MERGE, Objects, ers_body
from tests.kubeclient import request, status_of

APPLY = "application/apply-patch+yaml"


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(manager, operation) -> FieldsV1 of an object's managedFields."""
    return {
        (entry["manager"], entry["operation"]): entry["fieldsV1"]
        for entry in obj["metadata"].get("managedFields") or ()
    }


class Applier:
    """Server-side apply of sets in one namespace, as one field manager."""

    def __init__(self, kube_client: client.ApiClient, namespace: str) -> None:
        self._client = kube_client
        self._base = f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{namespace}/{api.ERS_PLURAL}"

    def __call__(
        self,
        manager: str | None,
        body: dict[str, Any],
        *,
        force: bool = False,
        status: bool = False,
    ) -> dict[str, Any]:
        query = [("fieldManager", manager)] if manager else []
        if force:
            query.append(("force", "true"))
        path = f"{self._base}/{body['metadata']['name']}" + ("/status" if status else "")
        return request(self._client, "PATCH", path, body, content_type=APPLY, query=query)


@pytest.fixture
def apply(kube_client: client.ApiClient, namespace: str) -> Applier:
    return Applier(kube_client, namespace)


def config(name: str = "a", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.ERS_KIND,
        "metadata": {"name": name},
        "spec": spec,
    }


def test_an_update_is_owned_by_its_field_manager_or_else_by_the_clients_product_name(
    ers: Objects, kube_client: client.ApiClient, namespace: str
) -> None:
    ers.create(ers_body("a", replicas=1))  # the official client: "OpenAPI-Generator/<v>/python"
    path = f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{namespace}/{api.ERS_PLURAL}/a"
    patched = request(
        kube_client,
        "PATCH",
        path,
        {"spec": {"replicas": 2}},
        content_type=MERGE,
        query=[("fieldManager", "listener")],
    )

    found = owners(patched)
    assert found[("listener", "Update")] == {"f:spec": {"f:replicas": {}}}
    created = found[("OpenAPI-Generator", "Update")]
    # The creator made spec itself (a custom resource starts empty: "." is the map);
    # replicas moved to the listener.
    assert created["f:spec"] == {".": {}, "f:patchID": {}}
    entry = next(e for e in patched["metadata"]["managedFields"] if e["manager"] == "listener")
    assert (entry["apiVersion"], entry["fieldsType"]) == (api.API_VERSION, "FieldsV1")


def test_apply_creates_then_merges_and_removes_only_what_the_applier_alone_stops_naming(
    apply: Applier, ers: Objects
) -> None:
    labelled = {"metadata": {"name": "a", "labels": {"x": "1"}}}
    first = apply("alice", config(replicas=1, patchID=0, actionableRevision=1) | labelled)
    ers.patch("a", {"metadata": {"labels": {"y": "2"}}})
    second = apply("alice", config(replicas=1, patchID=0))

    assert first["spec"] == {"replicas": 1, "patchID": 0, "actionableRevision": 1}
    assert owners(first)[("alice", "Apply")] == {
        "f:metadata": {"f:labels": {"f:x": {}}},
        "f:spec": {"f:actionableRevision": {}, "f:patchID": {}, "f:replicas": {}},
    }
    # actionableRevision: named no more, owned by nobody else
    assert second["spec"] == {"replicas": 1, "patchID": 0}
    assert second["metadata"]["labels"] == {"y": "2"}  # another manager's label stays
    assert owners(second)[("alice", "Apply")] == {"f:spec": {"f:patchID": {}, "f:replicas": {}}}


def test_apply_answers_409_for_a_field_another_manager_set_differently_unless_forced(
    apply: Applier, ers: Objects
) -> None:
    apply("alice", config(replicas=1, patchID=0))
    ers.patch("a", {"spec": {"replicas": 3}})
    before = ers.get("a")

    with pytest.raises(ApiException) as caught:
        apply("alice", config(replicas=1, patchID=0))
    after_conflict = ers.get("a")["metadata"]["resourceVersion"]
    forced = apply("alice", config(replicas=1, patchID=0), force=True)

    assert caught.value.status == 409
    status = status_of(caught.value)
    assert status["reason"] == "Conflict"
    assert status["message"].startswith(
        'Apply failed with 1 conflict: conflict with "OpenAPI-Generator" using '
    )
    assert [(c["reason"], c["field"]) for c in status["details"]["causes"]] == [
        ("FieldManagerConflict", ".spec.replicas")
    ]
    assert after_conflict == before["metadata"]["resourceVersion"]
    assert forced["spec"]["replicas"] == 1
    assert ("OpenAPI-Generator", "Update") not in owners(forced)  # it owned nothing else


def test_applying_the_value_another_manager_set_shares_the_field(apply: Applier) -> None:
    apply("alice", config(replicas=2, patchID=0))

    shared = apply("bob", config(replicas=2, patchID=0))
    dropped = apply("alice", config(patchID=0))  # no longer names replicas

    found = owners(shared)
    both: dict[str, Any] = {"f:spec": {"f:patchID": {}, "f:replicas": {}}}
    assert found[("alice", "Apply")] == found[("bob", "Apply")] == both
    assert dropped["spec"] == {"replicas": 2, "patchID": 0}, "bob still owns replicas"
    assert owners(dropped)[("bob", "Apply")] == both


def test_an_apply_that_changes_nothing_writes_nothing(apply: Applier) -> None:
    first = apply("alice", config(replicas=2, patchID=0))

    again = apply("alice", config(replicas=2, patchID=0))

    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_an_apply_to_status_owns_only_the_status(apply: Applier) -> None:
    apply("alice", config(replicas=2, patchID=0))
    status = {"phase": "Running", "currentReplicas": 0}
    body = config() | {"status": status, "spec": {"replicas": 9}}

    applied = apply("controller", body, status=True)

    assert (applied["spec"]["replicas"], applied["status"]) == (2, status)
    entry = next(e for e in applied["metadata"]["managedFields"] if e["manager"] == "controller")
    owned: dict[str, Any] = {"f:status": {"f:currentReplicas": {}, "f:phase": {}}}
    assert (entry["subresource"], entry["fieldsV1"]) == ("status", owned)


@pytest.mark.parametrize(
    ("manager", "body", "code", "says"),
    [
        pytest.param(None, config(), 422, "fieldManager: Required value", id="no field manager"),
        pytest.param(
            "alice",
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}},
            400,
            "invalid object type",
            id="another kind",
        ),
    ],
)
def test_an_apply_without_a_field_manager_or_of_another_kind_is_refused(
    apply: Applier, ers: Objects, manager: str | None, body: dict[str, Any], code: int, says: str
) -> None:
    with pytest.raises(ApiException) as caught:
        apply(manager, body)

    assert caught.value.status == code
    assert says in status_of(caught.value)["message"]
    assert ers.list()["items"] == []


def test_a_create_owns_the_maps_it_made_and_its_defaults_but_not_what_admission_added(
    kube_client: client.ApiClient, namespace: str
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "x"}},
        "spec": {
            "schedulerName": "gha-scaleset-tests-no-scheduler",
            "containers": [
                {"name": "c", "image": "busybox:1.36", "env": [{"name": "A", "value": "1"}]}
            ],
        },
    }
    path = f"/api/v1/namespaces/{namespace}/pods"
    pod = request(kube_client, "POST", path, body, query=[("fieldManager", "tester")])

    fields = owners(pod)[("tester", "Update")]
    assert fields["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    spec = fields["f:spec"]
    assert "." not in spec  # an empty Pod has a spec already
    container = spec["f:containers"]['k:{"name":"c"}']
    assert container["."] == container["f:env"]["."] == {}
    assert container["f:env"]['k:{"name":"A"}'] == {".": {}, "f:name": {}, "f:value": {}}
    # Defaults are filled in before the write is recorded, admission's additions after.
    assert {"f:imagePullPolicy", "f:terminationMessagePath"} <= container.keys()
    assert {"f:dnsPolicy", "f:restartPolicy", "f:terminationGracePeriodSeconds"} <= spec.keys()
    assert not {"f:serviceAccountName", "f:tolerations", "f:priority"} & spec.keys()


def test_an_applied_json_body_reads_1e3_as_the_number_1000(
    kube_client: client.ApiClient, namespace: str
) -> None:
    """kubectl sends ``apply-patch+yaml`` bodies as JSON, and kube-apiserver reads a
    number there as a number: ``1e3`` in an integer field is 1000 (YAML 1.1's rules,
    PyYAML's, would make it the string "1e3", refused as no integer)."""
    path = f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{namespace}/{api.ERS_PLURAL}/a"
    body = (
        f'{{"apiVersion": "{api.API_VERSION}", "kind": "{api.ERS_KIND}",'
        ' "metadata": {"name": "a"}, "spec": {"replicas": 1, "patchID": 1e3}}'
    )

    applied = request(
        kube_client, "PATCH", path, body, content_type=APPLY, query=[("fieldManager", "me")]
    )

    assert applied["spec"]["patchID"] == 1000
