"""Which fields a served CRD keeps (``ersctl.kube.pruning``), as kube-apiserver prunes."""

from __future__ import annotations

from typing import Any

import pytest

from ersctl import api
from ersctl.crds import load_crds
from ersctl.kube.pruning import dropped_fields
from tests.ersctl.crds.arc import arc_crds

ERS_GUARD = api.GUARD_FIELDS[api.ERS_CRD]


def _crd(schema: dict[str, Any], *, served: bool = True) -> dict[str, Any]:
    version = {"name": "v1alpha1", "served": served, "schema": {"openAPIV3Schema": schema}}
    return {"spec": {"versions": [version]}}


def test_our_crds_keep_every_guard_field() -> None:
    ers, er, *_ = load_crds()
    assert dropped_fields(ers, api.VERSION, ERS_GUARD) == []
    assert dropped_fields(er, api.VERSION, api.GUARD_FIELDS[api.ER_CRD]) == []


def test_arcs_crd_drops_every_guard_field_of_the_set() -> None:
    ers, *_ = arc_crds()
    assert dropped_fields(ers, api.VERSION, ERS_GUARD) == list(ERS_GUARD)


@pytest.mark.parametrize(
    ("schema", "dropped"),
    [
        pytest.param({"properties": {"status": {"properties": {}}}}, ["status.phase"], id="absent"),
        pytest.param(
            {"properties": {"status": {"x-kubernetes-preserve-unknown-fields": True}}},
            [],
            id="kept by a preserving ancestor",
        ),
        pytest.param(
            {"properties": {"status": {"additionalProperties": {"type": "string"}}}},
            [],
            id="a map's value",
        ),
        pytest.param(
            {"properties": {"status": {"additionalProperties": True}}}, [], id="any map value"
        ),
        pytest.param(
            {
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"status": {"properties": {}}},
            },
            ["status.phase"],
            id="a typed child is not kept by its preserving parent",
        ),
    ],
)
def test_a_path_is_kept_only_where_a_schema_path_allows_it(
    schema: dict[str, Any], dropped: list[str]
) -> None:
    assert dropped_fields(_crd(schema), "v1alpha1", ["status.phase"]) == dropped


def test_a_version_not_served_keeps_nothing() -> None:
    schema = {"properties": {"status": {"properties": {"phase": {"type": "string"}}}}}
    assert dropped_fields(_crd(schema, served=False), "v1alpha1", ["status.phase"]) == [
        "status.phase"
    ]
    assert dropped_fields(_crd(schema), "v1beta1", ["status.phase"]) == ["status.phase"]


def test_the_legacy_preserve_unknown_fields_switch_keeps_everything() -> None:
    crd = {"spec": {"preserveUnknownFields": True, "versions": []}}
    assert dropped_fields(crd, "v1alpha1", ["status.phase"]) == []
