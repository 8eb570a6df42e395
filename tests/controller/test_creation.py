"""The EphemeralRunner a scale-up creates."""

from __future__ import annotations

import pytest

from ersctl import api
from ersctl.creation import runner_body
from tests.controller.objects import RUNNER_SPEC, ers_doc


def scale_set() -> api.EphemeralRunnerSet:
    doc = ers_doc(
        "pool",
        replicas=3,
        patch_id=12,
        actionable_revision=4,
        labels={"actions.github.com/scale-set-name": "pool", "team": "ci"},
        runner_metadata={
            "labels": {"team": "overridden-by-the-set", "tier": "gpu"},
            "annotations": {"owner": "platform"},
        },
    )
    doc["metadata"]["uid"] = "uid-123"
    return api.EphemeralRunnerSet(doc)


def test_the_runner_is_named_after_the_set_and_owned_by_it() -> None:
    body = runner_body(scale_set())

    assert body["apiVersion"] == api.API_VERSION
    assert body["kind"] == api.ER_KIND
    assert body["metadata"]["generateName"] == "pool-runner-"
    assert body["metadata"]["namespace"] == "arc"
    assert body["metadata"]["ownerReferences"] == [
        {
            "apiVersion": api.API_VERSION,
            "kind": api.ERS_KIND,
            "name": "pool",
            "uid": "uid-123",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert body["metadata"]["finalizers"] == [api.ER_FINALIZER, api.ER_REGISTRATION_FINALIZER]


def test_labels_and_annotations_come_from_the_set_and_its_runner_metadata() -> None:
    metadata = runner_body(scale_set())["metadata"]

    assert metadata["labels"] == {
        "actions.github.com/scale-set-name": "pool",
        "team": "ci",
        "tier": "gpu",
        "app.kubernetes.io/component": "runner",
    }
    assert metadata["annotations"] == {
        "owner": "platform",
        api.PATCH_ID_ANNOTATION: "12",
        api.ACTIONABLE_REVISION_ANNOTATION: "4",
    }


def test_the_spec_is_a_copy_of_the_runner_template() -> None:
    ers = scale_set()
    body = runner_body(ers)

    assert body["spec"] == RUNNER_SPEC
    body["spec"]["spec"]["containers"][0]["image"] = "changed"
    assert ers.ephemeral_runner_spec["spec"]["containers"][0]["image"] != "changed"


def test_a_set_without_a_runner_template_names_the_field() -> None:
    ers = api.EphemeralRunnerSet(ers_doc(runner_spec=None))

    with pytest.raises(api.FieldError, match=r"spec\.ephemeralRunnerSpec"):
        runner_body(ers)
