"""Bad input on an AutoscalingRunnerSet: a Warning Event naming the field, a state in
its status, and nothing else: no scale set, no runner set, no listener, no change to a
running one."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from ersctl import api
from tests.deploy.test_deploy import SCALE_SET, render
from tests.ersctl.autoscalingrunnerset.conftest import Env
from tests.polling import eventually


def _refused(env: Env, reason: str, field: str) -> dict[str, Any]:
    (event,) = eventually(lambda: env.events(reason, "Warning"), what=f"a {reason} Event")
    assert field in event["message"]
    eventually(lambda: env.state() == reason, what=f"status.state {reason}")
    status = (env.ars() or {})["status"]
    assert status["phase"] == "Failed"
    assert field in status["message"]
    return event


def _nothing_made(env: Env) -> None:
    assert env.sim.scale_sets == {}
    assert env.runner_sets() == []
    assert env.listeners() == []


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"githubConfigUrl": "not a url"}, "spec.githubConfigUrl", id="url"),
        pytest.param(
            {"template": {"spec": {"containers": []}}},
            "spec.template.spec.containers",
            id="template-without-containers",
        ),
        pytest.param({"minRunners": 5, "maxRunners": 2}, "spec.maxRunners", id="max-below-min"),
    ],
)
def test_an_invalid_spec_is_refused_naming_the_field(
    env: Env, spec: dict[str, Any], field: str
) -> None:
    env.create_secret()
    env.create_ars("arc", **spec)
    env.start()
    _refused(env, "InvalidSpec", field)
    _nothing_made(env)
    # Added before the spec is read, as ARC adds it: deleting a refused ARS still runs
    # the teardown (tests/ersctl/autoscalingrunnerset/test_chart_cleanup: what the chart protected is released).
    assert api.ARS_FINALIZER in ((env.ars() or {})["metadata"].get("finalizers") or [])


def test_a_missing_secret_is_refused_and_retried_once_it_exists(env: Env) -> None:
    env.create_ars("arc")
    env.start()
    _refused(env, "CredentialsUnusable", "spec.githubConfigSecret")
    _nothing_made(env)
    # Secrets are not watched: the retry comes from the requeue (30 s); a spec edit
    # brings it sooner.
    env.create_secret()
    env.patch_ars("arc", {"spec": {"minRunners": 1}})
    env.running("arc")


def test_a_name_taken_in_another_runner_group_is_refused(env: Env) -> None:
    env.sim.runner_groups[2] = "gpu"
    env.sim.create_scale_set("arc", runner_group_id=1)
    env.create_secret()
    env.create_ars("arc", runnerGroup="gpu")
    env.start()
    _refused(env, "ScaleSetNameTaken", "spec.runnerScaleSetName")
    assert len(env.sim.scale_sets) == 1
    assert env.runner_sets() == [] and env.listeners() == []
    assert env.annotation(api.RUNNER_SCALE_SET_ID_ANNOTATION) is None


def test_an_unknown_runner_group_is_refused(env: Env) -> None:
    env.create_secret()
    env.create_ars("arc", runnerGroup="nope")
    env.start()
    _refused(env, "RunnerGroupNotFound", "spec.runnerGroup")
    _nothing_made(env)


def test_a_running_set_keeps_its_runner_set_and_listener_when_its_template_breaks(
    env: Env,
) -> None:
    env.launch("arc")
    ers, listener = env.runner_set(), env.listener()
    env.patch_ars("arc", {"spec": {"template": {"spec": {"containers": []}}}})
    _refused(env, "InvalidSpec", "spec.template.spec.containers")
    # (The set's status is its controller's to write; its spec and metadata are ours.)
    assert env.runner_set()["spec"] == ers["spec"]
    assert env.runner_set()["metadata"]["annotations"] == ers["metadata"]["annotations"]
    assert env.listener()["metadata"]["resourceVersion"] == listener["metadata"]["resourceVersion"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl renders the overlay")
def test_the_sample_overlays_unfilled_secret_is_refused_naming_the_field(env: Env) -> None:
    # examples/deploy/scale-set with its URL filled in but not its credentials: a
    # Warning naming the field, and nothing at GitHub.
    (secret,) = [d for d in render(SCALE_SET) if d["kind"] == "Secret"]
    secret["metadata"]["namespace"] = env.namespace
    env.kube.create_object("secrets", secret)
    env.create_ars("arc", githubConfigSecret=secret["metadata"]["name"])
    env.start()
    event = _refused(env, "CredentialsUnusable", "spec.githubConfigSecret")
    assert "github_token" in event["message"]
    _nothing_made(env)
