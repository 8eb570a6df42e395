"""The CRD manifests shipped in the package."""

from __future__ import annotations

from typing import Any

import pytest

from ersctl import api
from ersctl.crds import crd_paths, load_crds, package_dir
from ersctl.crds.generate import stale_files


def _by_kind() -> dict[str, dict[str, Any]]:
    return {doc["spec"]["names"]["kind"]: doc for doc in load_crds()}


def _schema(kind: str) -> dict[str, Any]:
    version = _by_kind()[kind]["spec"]["versions"][0]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_every_crd_exists_as_a_file_and_parses() -> None:
    assert all(path.is_file() for path in crd_paths())
    assert set(_by_kind()) == {api.ERS_KIND, api.ER_KIND, api.ARS_KIND, api.AL_KIND}


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        (api.ERS_KIND, api.ERS_PLURAL),
        (api.ER_KIND, api.ER_PLURAL),
        (api.ARS_KIND, api.ARS_PLURAL),
        (api.AL_KIND, api.AL_PLURAL),
    ],
)
def test_each_crd_is_namespaced_served_with_a_status_subresource(kind: str, plural: str) -> None:
    crd = _by_kind()[kind]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == f"{plural}.{api.GROUP}"
    assert crd["spec"]["group"] == api.GROUP
    assert crd["spec"]["scope"] == "Namespaced"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == api.VERSION
    assert version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}


@pytest.mark.parametrize(
    ("section", "field", "expected"),
    [
        ("spec", "actionableRevision", {"type": "integer", "format": "int64"}),
        ("status", "appliedActionableRevision", {"type": "integer", "format": "int64"}),
        ("status", "finishedRunnerCleanupPatchID", {"type": "integer", "format": None}),
        ("spec", "patchID", {"type": "integer", "format": None}),
        ("spec", "replicas", {"type": "integer", "format": None}),
    ],
)
def test_the_ers_schema_types_the_guard_fields(
    section: str, field: str, expected: dict[str, Any]
) -> None:
    prop = _schema(api.ERS_KIND)["properties"][section]["properties"][field]
    assert {"type": prop["type"], "format": prop.get("format")} == expected


def test_the_runner_pod_template_is_kubernetes_typed_pod_spec() -> None:
    ers_runner = _schema(api.ERS_KIND)["properties"]["spec"]["properties"]["ephemeralRunnerSpec"]
    er_spec = _schema(api.ER_KIND)["properties"]["spec"]
    for pod in (ers_runner["properties"]["spec"], er_spec["properties"]["spec"]):
        assert "x-kubernetes-preserve-unknown-fields" not in pod
        assert pod["required"] == ["containers"]
        container = pod["properties"]["containers"]["items"]["properties"]
        assert container["resources"]["properties"]["limits"]["additionalProperties"][
            "x-kubernetes-int-or-string"
        ]


def _list_map_keys_without_value(schema: dict[str, Any], path: str = "") -> list[str]:
    found = []
    items = schema.get("items") or {}
    for key in schema.get("x-kubernetes-list-map-keys") or []:
        prop = (items.get("properties") or {}).get(key, {})
        if key not in (items.get("required") or []) and "default" not in prop:
            found.append(f"{path}[].{key}")
    children = list((schema.get("properties") or {}).items())
    if items:
        children.append(("[]", items))
    if isinstance(schema.get("additionalProperties"), dict):
        children.append(("{}", schema["additionalProperties"]))
    for key, child in children:
        found += _list_map_keys_without_value(
            child, f"{path}.{key}" if key[0].isalpha() else path + key
        )
    return found


@pytest.mark.parametrize("kind", [api.ERS_KIND, api.ER_KIND, api.ARS_KIND])
def test_every_list_map_key_is_required_or_defaulted(kind: str) -> None:
    # kube-apiserver refuses a CRD whose x-kubernetes-list-map-keys name a property that
    # is neither: the container ports (keyed by containerPort and protocol) need
    # protocol's default, which Kubernetes' published JSON does not carry.
    assert _list_map_keys_without_value(_schema(kind)) == []


def test_the_committed_manifests_are_what_the_generator_writes() -> None:
    # Fails after a hand edit of the YAML, or a change to ersctl/crds/schemas.py or
    # podspec.py without `python -m ersctl.crds.generate`.
    assert stale_files(package_dir()) == []


def test_the_er_schema_holds_the_job_fields() -> None:
    status = _schema(api.ER_KIND)["properties"]["status"]["properties"]
    for field in (
        "jobRequestId",
        "jobId",
        "jobRepositoryName",
        "jobWorkflowRef",
        "workflowRunId",
        "jobDisplayName",
    ):
        assert field in status
    assert status["runnerId"]["type"] == "integer"


@pytest.mark.parametrize(
    ("kind", "columns"),
    [
        (
            api.ERS_KIND,
            ["DesiredReplicas", "Phase", "PatchID", "Age"],
        ),
        (
            api.ARS_KIND,
            ["Minimum Runners", "Maximum Runners", "Phase", "State", "Age"],
        ),
        (
            api.ER_KIND,
            [
                "GitHub Config URL",
                "RunnerId",
                "Phase",
                "JobRepository",
                "JobWorkflowRef",
                "WorkflowRunId",
                "JobDisplayName",
                "JobId",
                "Message",
                "Age",
            ],
        ),
    ],
)
def test_printer_columns(kind: str, columns: list[str]) -> None:
    version = _by_kind()[kind]["spec"]["versions"][0]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == columns


def test_examples_link_to_the_packaged_crds() -> None:
    from pathlib import Path

    linked = sorted(
        p.name
        for p in (Path(__file__).parent.parent.parent.parent / "examples" / "crds").glob("*.yaml")
    )
    assert linked == sorted(p.name for p in crd_paths())


def test_the_listener_schema_types_arcs_spec_and_our_restart_status() -> None:
    schema = _schema(api.AL_KIND)["properties"]
    spec = schema["spec"]["properties"]
    assert spec["minRunners"] == {"type": "integer", "minimum": 0}
    assert spec["template"]["properties"]["spec"]["required"] == ["containers"]
    histogram = spec["metrics"]["properties"]["histograms"]["additionalProperties"]
    assert histogram["properties"]["buckets"]["items"] == {"type": "number"}
    status = schema["status"]["properties"]
    assert status["listenerRestarts"]["type"] == "integer"
    assert status["lastListenerExitTime"]["format"] == "date-time"
