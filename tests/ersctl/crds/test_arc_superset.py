"""Our CRDs are a typed superset of ARC 0.14.2's and of ARC 0.15.1's, field by field
(``arc-0.14.yaml``, ``arc-0.15.yaml``)."""

from __future__ import annotations

from typing import Any

import pytest

from ersctl import api
from ersctl.crds import load_crds
from tests.ersctl.crds import arc

KINDS = [api.ERS_KIND, api.ER_KIND, api.AL_KIND, api.ARS_KIND]
POD_TEMPLATES = {
    api.ERS_KIND: "spec.ephemeralRunnerSpec.spec",
    api.ER_KIND: "spec.spec",
    api.AL_KIND: "spec.template.spec",
    api.ARS_KIND: "spec.template.spec",
}


def _ours(kind: str) -> dict[str, Any]:
    (crd,) = (doc for doc in load_crds() if doc["spec"]["names"]["kind"] == kind)
    return crd


def _our_schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = _ours(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_the_reference_holds_kubernetes_whole_pod_spec_twice() -> None:
    # A flattening that lost the pod template would make the comparison below vacuous.
    ers = arc.flatten(arc.arc_schema_with_marks(api.ERS_KIND))
    pod_fields = [path for path in ers if path.startswith("spec.ephemeralRunnerSpec.spec.")]
    assert len(pod_fields) > 1000
    assert "spec.ephemeralRunnerSpec.spec.containers[].resources.limits{}" in ers


def test_the_ars_reference_holds_both_pod_templates() -> None:
    ars = arc.flatten(arc.arc_schema_with_marks(api.ARS_KIND))
    for template in ("spec.template", "spec.listenerTemplate"):
        assert len([p for p in ars if p.startswith(f"{template}.spec.")]) > 1000
        assert f"{template}.metadata.labels{{}}" in ars


@pytest.mark.parametrize("line", arc.LINES)
@pytest.mark.parametrize("kind", KINDS)
def test_every_field_of_arcs_schema_is_in_ours_with_its_type_and_markers_requiring_no_more(
    kind: str, line: str
) -> None:
    reference = arc.flatten(arc.arc_schema_with_marks(kind, line), line=line)
    assert arc.differences(reference, arc.flatten(_our_schema(kind), line=line)) == []


def test_the_lines_differ_where_015_changed_014() -> None:
    # Two copies of one file would make the second comparison above vacuous.
    old = arc.flatten(arc.arc_schema_with_marks(api.ERS_KIND, "0.14"))
    new = arc.flatten(arc.arc_schema_with_marks(api.ERS_KIND, "0.15"), line="0.15")
    assert sorted(set(new) - set(old)) == [
        "spec.actionableRevision",
        "status.appliedActionableRevision",
        "status.finishedRunnerCleanupPatchID",
        "status.phase",
    ]
    assert old["spec"]["required"] == ["patchID"] and "required" not in new["spec"]


@pytest.mark.parametrize("kind", KINDS)
def test_nothing_of_ours_preserves_unknown_fields(kind: str) -> None:
    ours = arc.flatten(_our_schema(kind))
    assert [p for p, facts in ours.items() if "x-kubernetes-preserve-unknown-fields" in facts] == []


def _columns(kind: str) -> list[dict[str, Any]]:
    columns: list[dict[str, Any]] = _ours(kind)["spec"]["versions"][0]["additionalPrinterColumns"]
    return columns


# The runner counts are not kept in the status (metrics and `ersctl status` count the
# runners, as ARC does after 0.15.1, #4557/#4583): their columns would only show stale
# values or nothing. The finished and deleting counts are in neither of ARC's schemas.
COUNT_COLUMNS = {
    ".status.currentReplicas",
    ".status.currentRunners",
    ".status.pendingEphemeralRunners",
    ".status.runningEphemeralRunners",
    ".status.finishedEphemeralRunners",
    ".status.deletingEphemeralRunners",
}


def _arcs_kept_columns(kind: str, line: str) -> list[dict[str, Any]]:
    columns = arc.crd_entry(kind, line)["additionalPrinterColumns"]
    return [c for c in columns if c["jsonPath"] not in COUNT_COLUMNS]


@pytest.mark.parametrize("kind", KINDS)
def test_the_newest_arcs_printer_columns_come_first_in_its_order(kind: str) -> None:
    theirs = _arcs_kept_columns(kind, arc.NEWEST)
    assert _columns(kind)[: len(theirs)] == theirs


@pytest.mark.parametrize("line", arc.LINES)
@pytest.mark.parametrize("kind", KINDS)
def test_every_column_of_every_line_is_shown_with_its_type(kind: str, line: str) -> None:
    # 0.15 renamed the phase and state columns; each line's field is still shown.
    ours = {(c["jsonPath"], c["type"]) for c in _columns(kind)}
    theirs = {(c["jsonPath"], c["type"]) for c in _arcs_kept_columns(kind, line)}
    assert theirs <= ours


@pytest.mark.parametrize("kind", KINDS)
def test_no_column_shows_a_runner_count_the_status_does_not_keep(kind: str) -> None:
    assert [c["name"] for c in _columns(kind) if c["jsonPath"] in COUNT_COLUMNS] == []


@pytest.mark.parametrize("line", arc.LINES)
@pytest.mark.parametrize("kind", KINDS)
def test_names_scope_and_subresources_match_arcs(kind: str, line: str) -> None:
    entry = arc.crd_entry(kind, line)
    crd = _ours(kind)
    names = crd["spec"]["names"]
    assert (names["kind"], names["plural"]) == (kind, entry["plural"])
    assert set(entry["shortNames"]) <= set(names.get("shortNames", []))
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["versions"][0]["subresources"] == entry["subresources"]


@pytest.mark.parametrize("where", ["reference", "ours"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_pod_template_facts_read_in_arcs_crd_hold(kind: str, where: str) -> None:
    prefix = POD_TEMPLATES[kind]
    schema = arc.arc_schema_with_marks(kind) if where == "reference" else _our_schema(kind)
    fields = arc.flatten(schema)
    samples = {arc._join(prefix, path): facts for path, facts in arc.pod_spec_samples().items()}
    if where == "reference":  # Kubernetes' published JSON drops the +default markers
        samples = {
            path: {k: v for k, v in f.items() if k != "default"} for path, f in samples.items()
        }
    assert arc.differences(samples, fields) == []


def test_a_difference_is_reported_per_field() -> None:
    arcs: arc.Fields = {
        "spec": {"type": "object", "required": ["patchID"]},
        "spec.patchID": {"type": "integer"},
        "spec.replicas": {"type": "integer"},
    }
    ours: arc.Fields = {
        "spec": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "required": ["replicas"],
        },
        "spec.replicas": {"type": "string"},
    }
    assert arc.differences(arcs, ours) == [
        "spec: required here, not in ARC's: replicas",
        "spec: preserves unknown fields where ARC's is typed",
        "spec.patchID: missing",
        "spec.replicas: type 'string', ARC's 'integer'",
    ]
