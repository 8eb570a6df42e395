"""An AutoscalingRunnerSet made by ARC's Helm chart, with what ARC's controller made for
it (scale set, EphemeralRunnerSet, runners, listener), is taken over as it is: no
second registration, no runner deleted or rebuilt, no second set or listener."""

from __future__ import annotations

from typing import Any

from ersctl import api
from ersctl.naming import listener_name
from tests.deploy.arc_objects import go_rendering, owner
from tests.ersctl.autoscalingrunnerset.conftest import CREDENTIALS, Env, runner_template
from tests.polling import eventually

ARC_VERSION = "0.14.2"
ARC_SPEC_HASH = "7d8f9c6b5"  # what ARC's Go hash wrote; ours never equals it


def _arc_installation(env: Env) -> dict[str, Any]:
    """What ARC 0.14's chart and controller leave in a namespace for one scale set."""
    scale_set = env.sim.create_scale_set("arc-runners", labels=["arc-runners"], disable_update=True)
    secret = env.create_secret()
    env.kube.patch_object(
        "secrets",
        env.namespace,
        CREDENTIALS,
        {"metadata": {"finalizers": [api.CLEANUP_PROTECTION_FINALIZER]}},
    )
    labels = {
        "app.kubernetes.io/component": "autoscaling-runner-set",
        "app.kubernetes.io/part-of": "gha-rs",
        "app.kubernetes.io/version": ARC_VERSION,
        "actions.github.com/scale-set-name": "arc-runners",
        "actions.github.com/scale-set-namespace": env.namespace,
    }
    body = env.ars_body("arc-runners", minRunners=1, maxRunners=4)
    body["metadata"] |= {
        "labels": labels,
        "annotations": {
            api.RUNNER_SCALE_SET_ID_ANNOTATION: str(scale_set["id"]),
            api.RUNNER_SCALE_SET_NAME_ANNOTATION: "arc-runners",
            api.RUNNER_GROUP_NAME_ANNOTATION: "Default",
            api.VALUES_HASH_ANNOTATION: "4f1e2d",
            api.CLEANUP_SECRET_ANNOTATION: secret["metadata"]["name"],
        },
        "finalizers": [api.ARS_FINALIZER],
    }
    ars = env.kube.create_object(api.ARS_PLURAL, body)
    ers = env.kube.create_object(
        api.ERS_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.ERS_KIND,
            "metadata": {
                "name": "arc-runners-7x9kq",
                "labels": {**labels, "app.kubernetes.io/component": "runner-set"},
                "annotations": {
                    api.RUNNER_SPEC_HASH_ANNOTATION: ARC_SPEC_HASH,
                    api.RUNNER_GROUP_NAME_ANNOTATION: "Default",
                    api.RUNNER_SCALE_SET_NAME_ANNOTATION: "arc-runners",
                },
                "finalizers": [api.ERS_FINALIZER],
                "ownerReferences": [owner(api.ARS_KIND, ars)],
            },
            "spec": {
                "replicas": 2,
                "patchID": 5,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": env.config_url,
                    "githubConfigSecret": CREDENTIALS,
                    "runnerScaleSetId": scale_set["id"],
                    # Go's rendering of the ARS's template: empty structs written out.
                    "metadata": {"creationTimestamp": None},
                    "spec": go_rendering(runner_template()["spec"]),
                },
            },
        },
    )
    for index, job in enumerate(("job-1", "")):
        runner = env.kube.create_object(
            api.ER_PLURAL,
            {
                "apiVersion": api.API_VERSION,
                "kind": api.ER_KIND,
                "metadata": {
                    "name": f"arc-runners-7x9kq-runner-{index}",
                    "annotations": {api.PATCH_ID_ANNOTATION: "5"},
                    "finalizers": [api.ER_FINALIZER, api.ER_REGISTRATION_FINALIZER],
                    "ownerReferences": [owner(api.ERS_KIND, ers)],
                },
                "spec": ers["spec"]["ephemeralRunnerSpec"],
            },
        )
        env.kube.patch_object(
            api.ER_PLURAL,
            env.namespace,
            runner["metadata"]["name"],
            {"status": {"phase": "Running", "runnerId": 10 + index, "jobId": job}},
            subresource="status",
        )
    env.kube.create_object(
        api.AL_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.AL_KIND,
            "metadata": {"name": listener_name(env.namespace, "", env.config_url, "arc-runners")},
            "spec": {
                "githubConfigUrl": env.config_url,
                "githubConfigSecret": CREDENTIALS,
                "runnerScaleSetId": scale_set["id"],
                "autoscalingRunnerSetNamespace": env.namespace,
                "autoscalingRunnerSetName": "arc-runners",
                "ephemeralRunnerSetName": "arc-runners-7x9kq",
                "minRunners": 1,
                "maxRunners": 4,
                "image": f"ghcr.io/actions/gha-runner-scale-set-controller:{ARC_VERSION}",
            },
        },
    )
    return ers


def _uids(env: Env, plural: str) -> dict[str, str]:
    return {
        obj["metadata"]["name"]: obj["metadata"]["uid"]
        for obj in env.kube.list_objects(plural, env.namespace)
        if not obj["metadata"].get("deletionTimestamp")
    }


def test_an_arc_made_scale_set_is_taken_over_without_registering_or_rebuilding(
    env: Env,
) -> None:
    ers = _arc_installation(env)
    runners, listeners = _uids(env, api.ER_PLURAL), _uids(env, api.AL_PLURAL)
    seq = max((e["seq"] for e in env.sim.events), default=0)

    env.start()
    env.running("arc-runners")

    assert [e for e in env.sim.events_since(seq) if e["kind"] == "scaleset.created"] == []
    assert len(env.sim.scale_sets) == 1
    (adopted,) = env.runner_sets("arc-runners")
    assert adopted["metadata"]["uid"] == ers["metadata"]["uid"]
    assert (adopted["spec"]["replicas"], adopted["spec"]["patchID"]) == (2, 5)
    assert adopted["spec"].get("actionableRevision", 0) == 0  # no runner rebuilt
    assert _uids(env, api.ER_PLURAL) == runners
    assert _uids(env, api.AL_PLURAL) == listeners
    secret = env.kube.get_object("secrets", env.namespace, CREDENTIALS) or {}
    assert api.CLEANUP_PROTECTION_FINALIZER in secret["metadata"]["finalizers"]
    # ARC's hash stays while the spec it stands for is unchanged: ARC, switched back,
    # finds its own value and makes no new set.
    annotations = env.runner_set("arc-runners")["metadata"]["annotations"]
    assert annotations[api.RUNNER_SPEC_HASH_ANNOTATION] == ARC_SPEC_HASH


def test_an_arc_made_scale_set_whose_template_then_changes_rolls_out_in_place(env: Env) -> None:
    ers = _arc_installation(env)
    env.start()
    env.running("arc-runners")
    env.patch_ars("arc-runners", {"spec": {"template": runner_template("example/runner:2")}})
    eventually(
        lambda: env.runner_set("arc-runners")["spec"].get("actionableRevision") == 1,
        what="the adopted set's revision advanced",
    )
    adopted = env.runner_set("arc-runners")
    assert adopted["metadata"]["uid"] == ers["metadata"]["uid"]
    # The spec ARC's hash stood for is gone: ours replaces it.
    assert adopted["metadata"]["annotations"][api.RUNNER_SPEC_HASH_ANNOTATION] != ARC_SPEC_HASH
