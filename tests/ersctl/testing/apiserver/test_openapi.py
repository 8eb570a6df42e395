"""The OpenAPI documents kubectl reads (``/openapi/v3`` and ``/openapi/v2``), the
``fieldValidation`` they advertise, and server-side Tables with the full objects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ersctl import api
from tests.kubeapi import KubeApi
from tests.polling import eventually

GV = f"apis/{api.GROUP}/{api.VERSION}"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@pytest.fixture
def http(kube: KubeApi) -> Iterator[httpx.Client]:
    with kube.http() as http_client:
        yield http_client


def v3(http: httpx.Client, gv: str = GV) -> dict[str, Any]:
    root = http.get("/openapi/v3").json()
    url = root["paths"][gv]["serverRelativeURL"]
    assert "?hash=" in url
    doc: dict[str, Any] = http.get(url).json()
    return doc


def kind_schemas(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [
        schema
        for schema in doc["components"]["schemas"].values()
        if any(
            gvk.get("kind") == kind and gvk.get("group") == api.GROUP
            for gvk in schema.get("x-kubernetes-group-version-kind") or ()
        )
    ]


def test_the_v3_document_of_our_group_has_the_crd_schema_with_metadata_as_object_meta(
    http: httpx.Client,
) -> None:
    doc = v3(http)

    (ers,) = kind_schemas(doc, api.ERS_KIND)
    assert ers["properties"]["spec"]["properties"]["replicas"]["type"] == "integer"
    meta = ers["properties"]["metadata"]
    ref = meta.get("$ref") or meta["allOf"][0]["$ref"]
    assert ref == "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in doc["components"]["schemas"]


@pytest.mark.parametrize(
    ("gv", "kind"),
    [
        pytest.param(GV, api.ERS_KIND, id="a custom kind"),
        pytest.param("apis/apps/v1", "Deployment", id="a built-in kind"),
    ],
)
def test_the_patch_operation_of_a_kind_takes_field_validation(
    http: httpx.Client, gv: str, kind: str
) -> None:
    # What kubectl apply looks for before it leaves the validation to the server.
    doc = v3(http, gv)

    patches = [
        op["patch"]
        for op in doc["paths"].values()
        if "patch" in op and op["patch"]["x-kubernetes-group-version-kind"]["kind"] == kind
    ]

    assert patches
    for patch in patches:
        names = {(p["name"], p["in"]) for p in patch["parameters"]}
        assert ("fieldValidation", "query") in names
        assert "application/apply-patch+yaml" in patch["requestBody"]["content"]


def test_the_v2_document_has_every_served_kind(http: httpx.Client) -> None:
    doc = http.get("/openapi/v2", headers={"Accept": "application/json"}).json()

    kinds = {
        (gvk.get("group", ""), gvk["kind"])
        for schema in doc["definitions"].values()
        for gvk in schema.get("x-kubernetes-group-version-kind") or ()
    }
    assert {(api.GROUP, api.ERS_KIND), (api.GROUP, api.ER_KIND), ("", "Secret")} <= kinds
    assert doc["swagger"] == "2.0"


@pytest.mark.parametrize(
    ("directive", "code", "warned"),
    [
        pytest.param("Strict", 400, False, id="Strict refuses"),
        pytest.param("Warn", 201, True, id="Warn warns"),
        pytest.param("Ignore", 201, False, id="Ignore says nothing"),
    ],
)
def test_field_validation_decides_what_an_unknown_field_does(
    http: httpx.Client, kube: KubeApi, directive: str, code: int, warned: bool
) -> None:
    body = {
        "apiVersion": api.API_VERSION,
        "kind": api.ERS_KIND,
        "metadata": {"name": "a"},
        "spec": {"replicas": 1, "patchID": 0, "bogus": True},
    }
    path = f"/{GV}/namespaces/{kube.namespace}/{api.ERS_PLURAL}"

    answer = http.post(path, json=body, params={"fieldValidation": directive})

    assert answer.status_code == code
    warnings = answer.headers.get_list("warning")
    assert any('unknown field \\"spec.bogus\\"' in w for w in warnings) == warned
    if code == 400:
        assert 'strict decoding error: unknown field "spec.bogus"' in answer.json()["message"]
    else:
        assert "bogus" not in answer.json()["spec"]


def test_a_new_crd_shows_up_in_the_v3_root(http: httpx.Client, kube: KubeApi) -> None:
    group = f"{kube.namespace}.gha-scaleset.test"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    assert f"apis/{group}/v1" not in http.get("/openapi/v3").json()["paths"]
    created = http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
    try:
        assert created.status_code == 201
        eventually(
            lambda: f"apis/{group}/v1" in http.get("/openapi/v3").json()["paths"],
            timeout=30,
            what="the new group in /openapi/v3",
        )
    finally:
        http.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")


@pytest.mark.parametrize(
    ("include", "kind"),
    [
        pytest.param(None, "PartialObjectMetadata", id="by default the metadata"),
        pytest.param("Object", "Event", id="Object: the whole object"),
        pytest.param("None", None, id="None: no object"),
    ],
)
def test_table_rows_carry_what_include_object_asks_for(
    http: httpx.Client, kube: KubeApi, include: str | None, kind: str | None
) -> None:
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": kube.namespace},
        "reason": "Test",
        "message": "m",
        "lastTimestamp": "2026-01-01T00:00:00Z",
    }
    kube.create_object("events", event)
    params = {"includeObject": include} if include else {}

    table = http.get(
        f"/api/v1/namespaces/{kube.namespace}/events", params=params, headers={"Accept": TABLE}
    ).json()

    (row,) = table["rows"]
    assert table["kind"] == "Table"
    assert (row.get("object") or {}).get("kind") == kind
    if kind == "Event":
        assert row["object"]["lastTimestamp"] == "2026-01-01T00:00:00Z"


def test_an_unknown_field_of_a_built_in_kind_is_warned_about_and_dropped(
    http: httpx.Client, kube: KubeApi
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"mode": "test"},
        "bogus": 1,
    }

    answer = http.post(f"/api/v1/namespaces/{kube.namespace}/configmaps", json=body)

    assert answer.status_code == 201
    assert any('unknown field \\"bogus\\"' in w for w in answer.headers.get_list("warning"))
    stored = kube.get_object("configmaps", kube.namespace, "settings")
    assert stored is not None and "bogus" not in stored and stored["data"] == {"mode": "test"}
