"""The pure rules of ``ersctl.autoscalingrunnerset.desired`` and ``listener_desired``:
what an ARS asks for."""

from __future__ import annotations

from typing import Any

import pytest

from ersctl import api
from ersctl.autoscalingrunnerset import desired, desiredlistener
from ersctl.naming import fnv_hash

URL = "https://github.com/octo-org"
TEMPLATE = {"spec": {"containers": [{"name": "runner", "image": "runner:1"}]}}


def ars(annotations: dict[str, str] | None = None, **spec: Any) -> api.AutoscalingRunnerSet:
    return api.AutoscalingRunnerSet(
        {
            "metadata": {
                "name": "arc",
                "namespace": "runners",
                "uid": "u-1",
                "annotations": annotations or {},
            },
            "spec": {
                "githubConfigUrl": URL,
                "githubConfigSecret": "creds",
                "template": TEMPLATE,
                **spec,
            },
        }
    )


def test_the_runner_spec_carries_the_template_proxy_and_tls() -> None:
    proxy = {"https": {"url": "http://proxy:3128", "credentialSecretRef": "proxy-creds"}}
    tls = {"certificateFrom": {"configMapKeyRef": {"name": "ca", "key": "ca.crt"}}}
    body = desired.new_runner_set(ars(proxy=proxy, githubServerTLS=tls), 42)
    spec = body["spec"]["ephemeralRunnerSpec"]
    assert spec == {
        "githubConfigUrl": URL,
        "githubConfigSecret": "creds",
        "runnerScaleSetId": 42,
        "spec": TEMPLATE["spec"],
        "proxy": proxy,
        "githubServerTLS": tls,
    }
    assert body["metadata"]["name"] == "arc"  # ARC 0.15: one set per ARS, named after it
    assert body["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert (body["spec"]["replicas"], body["spec"]["patchID"]) == (0, 0)


def test_a_removed_proxy_is_nulled_in_the_patch_and_advances_the_revision() -> None:
    proxy = {"https": {"url": "http://proxy:3128"}}
    live = api.EphemeralRunnerSet(desired.new_runner_set(ars(proxy=proxy), 42))
    live.raw["metadata"]["resourceVersion"] = "7"
    live.raw["spec"]["actionableRevision"] = 3
    patch = desired.runner_set_update(live, ars(), 42)
    assert patch is not None
    assert patch["spec"]["ephemeralRunnerSpec"] == {"proxy": None}
    assert patch["spec"]["actionableRevision"] == 4
    assert patch["metadata"]["resourceVersion"] == "7"


def test_an_unchanged_set_needs_no_patch_and_empty_template_metadata_is_none() -> None:
    live = api.EphemeralRunnerSet(desired.new_runner_set(ars(), 42))
    assert desired.runner_set_update(live, ars(), 42) is None
    live.raw["spec"]["ephemeralRunnerSpec"]["metadata"] = {}  # as ARC's Go writes it
    assert not desired.runner_spec_changed(live, desired.runner_spec(ars(), 42))


@pytest.mark.parametrize(
    ("annotations", "spec", "changes"),
    [
        pytest.param({}, {}, ["runner group", "name", "labels"], id="nothing-recorded"),
        pytest.param(
            {api.RUNNER_GROUP_NAME_ANNOTATION: "gpu", api.RUNNER_SCALE_SET_NAME_ANNOTATION: "x",
             desired.SCALE_SET_LABELS_ANNOTATION: "arc"},
            {}, [], id="empty-group-and-name-are-skipped",
        ),
        pytest.param(
            {api.RUNNER_GROUP_NAME_ANNOTATION: "GPU", api.RUNNER_SCALE_SET_NAME_ANNOTATION: "ARC",
             desired.SCALE_SET_LABELS_ANNOTATION: "ARC"},
            {"runnerGroup": "gpu", "runnerScaleSetName": "arc"}, ["labels"],
            id="names-compare-case-blind-labels-do-not",
        ),
        pytest.param(
            {api.RUNNER_GROUP_NAME_ANNOTATION: "Default", api.RUNNER_SCALE_SET_NAME_ANNOTATION: "arc",
             desired.SCALE_SET_LABELS_ANNOTATION: "arc,linux"},
            {"runnerGroup": "gpu", "runnerScaleSetLabels": ["linux", "arc"]}, ["runner group"],
            id="group-moved-labels-deduplicated",
        ),
    ],
)  # fmt: skip
def test_arcs_scale_set_update_rules(
    annotations: dict[str, str], spec: dict[str, Any], changes: list[str]
) -> None:
    assert desired.scale_set_changes(ars(annotations, **spec)) == changes


def test_the_listener_is_owned_only_in_its_sets_namespace() -> None:
    same = desiredlistener.new_listener(
        ars(), scale_set_id=1, runner_set_name="arc-x", namespace="runners"
    )
    other = desiredlistener.new_listener(
        ars(), scale_set_id=1, runner_set_name="arc-x", namespace="ctl"
    )
    assert same["metadata"]["ownerReferences"][0]["kind"] == api.ARS_KIND
    assert "ownerReferences" not in other["metadata"]
    assert other["spec"]["maxRunners"] == 2**31 - 1


@pytest.mark.parametrize("group", ["", "gpu"])
def test_the_listener_is_named_by_arcs_hash_of_namespace_group_and_url(group: str) -> None:
    # ARC >= 0.13.1 (#4299): fnv(namespace@runnerGroup@configURL), the fields as written.
    al = desiredlistener.new_listener(
        ars(runnerGroup=group), scale_set_id=1, runner_set_name="arc", namespace="ctl"
    )
    suffix = fnv_hash(f"runners@{group}@{URL}".encode())[:8]
    assert al["metadata"]["name"] == f"arc-{suffix}-listener"
    assert desiredlistener.listener_key(ars(runnerGroup=group), "ctl") == (
        "ctl",
        f"arc-{suffix}-listener",
    )
    # A scale set of the same name in the same namespace for another organization.
    other = ars(runnerGroup=group, githubConfigUrl="https://github.com/other-org")
    assert desiredlistener.listener_key(other, "ctl")[1] != al["metadata"]["name"]


def test_a_long_organization_label_is_cut_as_arc_cuts_it() -> None:
    labels = desired.github_url_labels("https://github.com/" + "o" * 70)
    assert labels[api.ORGANIZATION_LABEL] == "o" * 58 + "-trim"


def test_the_ars_resource_metadata_reaches_its_set_and_listener_under_arcs_keys() -> None:
    meta = {"labels": {"team": "ci", api.COMPONENT_LABEL: "mine"}, "annotations": {"a": "1"}}
    source = ars(ephemeralRunnerSetMetadata=meta, autoscalingListener=meta)
    ers = desired.new_runner_set(source, 1)["metadata"]
    al = desiredlistener.new_listener(
        source, scale_set_id=1, runner_set_name="x", namespace="runners"
    )
    for made, component in ((ers, "runner-set"), (al["metadata"], "runner-scale-set-listener")):
        assert made["labels"]["team"] == "ci"
        assert made["labels"][api.COMPONENT_LABEL] == component
        assert made["annotations"]["a"] == "1"


@pytest.mark.parametrize(
    "key", [api.INTEGRITY_HASH_ANNOTATION, api.RUNNER_SPEC_HASH_ANNOTATION], ids=["0.15", "0.14"]
)
def test_arcs_hash_on_a_set_stays_while_its_spec_does_and_goes_with_it(key: str) -> None:
    # ARC, switched back, finds its own value and rebuilds nothing; once the spec is
    # ours, so is the hash (ARC then applies the spec again, once).
    live = api.EphemeralRunnerSet(desired.new_runner_set(ars(), 42))
    live.raw["metadata"]["annotations"][key] = "arcs-own"
    live.raw["metadata"]["resourceVersion"] = "7"
    assert desired.runner_set_update(live, ars(), 42) is None
    patch = desired.runner_set_update(live, ars(template=TEMPLATE_2), 42)
    assert patch is not None
    assert patch["metadata"]["annotations"][key] not in ("arcs-own", None)


TEMPLATE_2 = {"spec": {"containers": [{"name": "runner", "image": "runner:2"}]}}
