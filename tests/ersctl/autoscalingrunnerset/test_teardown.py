"""Deleting an AutoscalingRunnerSet tears down top-down: the listener first, then the
runner set (a busy runner finishes its job), then the scale set on GitHub, then the
finalizers; a GitHub outage keeps the finalizer, with a Warning Event, and retries."""

from __future__ import annotations

from typing import Any

import pytest

from ersctl import api
from ersctl.testing.apiserver import ApiServer
from tests.ersctl.autoscalingrunnerset.conftest import CREDENTIALS, Env
from tests.polling import eventually

HELD = "tests.example/held"  # a finalizer of the AL controller's kind, held by the test


def _deleting(obj: dict[str, Any] | None) -> bool:
    return bool(obj and obj["metadata"].get("deletionTimestamp"))


def _busy_runner(env: Env, ers: dict[str, Any]) -> str:
    """An EphemeralRunner of ``ers`` running a job (the listener's status write)."""
    runner = env.kube.create_object(
        api.ER_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.ER_KIND,
            "metadata": {
                "name": f"{ers['metadata']['name']}-runner-busy",
                "ownerReferences": [
                    {
                        "apiVersion": api.API_VERSION,
                        "kind": api.ERS_KIND,
                        "name": ers["metadata"]["name"],
                        "uid": ers["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": ers["spec"]["ephemeralRunnerSpec"],
        },
    )
    name = str(runner["metadata"]["name"])
    env.kube.patch_object(
        api.ER_PLURAL,
        env.namespace,
        name,
        {"status": {"phase": "Running", "runnerId": 7, "jobId": "job-1"}},
        subresource="status",
    )
    return name


def test_teardown_stops_the_listener_then_drains_the_set_then_deletes_the_scale_set(
    env: Env,
) -> None:
    env.launch("arc")
    ers = env.runner_set()
    runner = _busy_runner(env, ers)
    listener = env.listener()
    env.kube.patch_object(
        api.AL_PLURAL, env.namespace, listener["metadata"]["name"],
        {"metadata": {"finalizers": [HELD]}},
    )  # fmt: skip
    (scale_set_id,) = env.sim.scale_sets

    env.kube.delete_object(api.ARS_PLURAL, env.namespace, "arc")

    # 1. The listener is asked to stop; nothing below it moves while it is there.
    eventually(lambda: _deleting(env.listeners()[0]), what="the listener deleted")
    eventually(lambda: env.state() == "StoppingListener", what="state StoppingListener")
    assert not _deleting(env.runner_sets()[0])
    assert scale_set_id in env.sim.scale_sets
    env.kube.patch_object(
        api.AL_PLURAL, env.namespace, listener["metadata"]["name"], {"metadata": {"finalizers": []}}
    )

    # 2. The set drains: the busy runner keeps it (and the scale set) alive.
    eventually(lambda: _deleting(env.runner_sets()[0]), what="the runner set deleted")
    eventually(lambda: env.state() == "DrainingRunners", what="state DrainingRunners")
    assert env.kube.get_object(api.ER_PLURAL, env.namespace, runner) is not None
    assert scale_set_id in env.sim.scale_sets
    assert env.ars() is not None

    # 3. The job ends; the set goes; then the scale set; then the ARS.
    env.kube.patch_object(
        api.ER_PLURAL, env.namespace, runner, {"status": {"phase": "Succeeded"}},
        subresource="status",
    )  # fmt: skip
    eventually(lambda: env.ars() is None, what="the ARS gone", timeout=10)
    assert env.sim.scale_sets == {}
    assert env.runner_sets() == [] and env.listeners() == []
    secret = env.kube.get_object("secrets", env.namespace, CREDENTIALS) or {}
    assert api.CLEANUP_PROTECTION_FINALIZER not in (secret["metadata"].get("finalizers") or [])


def test_a_github_outage_keeps_the_finalizer_with_a_warning_and_retries(env: Env) -> None:
    env.launch("arc")
    # The outage lasts until the test ends it: with a few faults only, the retries (ms
    # apart) used them up and the ARS was gone before the test looked.
    env.sim.inject_fault(endpoint="delete_scale_set", status=503, times=1_000_000)
    env.kube.delete_object(api.ARS_PLURAL, env.namespace, "arc")

    (event,) = eventually(
        lambda: env.events("GitHubCallFailed", "Warning"), what="a Warning Event", timeout=10
    )
    assert "deleting scale set" in event["message"]
    assert env.ars() is not None  # the finalizer holds it
    env.sim.faults.clear()  # GitHub answers again
    eventually(lambda: env.ars() is None, what="deleted once GitHub answers", timeout=15)
    assert env.sim.scale_sets == {}


def test_an_ars_whose_scale_set_is_gone_on_github_is_still_deleted(env: Env) -> None:
    env.launch("arc")
    (scale_set_id,) = env.sim.scale_sets
    env.sim.delete_scale_set(scale_set_id)
    env.kube.delete_object(api.ARS_PLURAL, env.namespace, "arc")
    eventually(lambda: env.ars() is None, what="the ARS gone", timeout=10)


@pytest.mark.embedded_only("delays the ARS watch so reconciles still see it after it is gone")
def test_a_reconcile_that_still_sees_a_deleted_ars_ends_quietly(
    env: Env, apiserver: ApiServer
) -> None:
    # A reconcile from a cache that lags: it patches an ARS another reconcile already
    # finished tearing down (404). Not a failure: no Warning, nothing retried.
    env.launch()
    env.running()
    apiserver.set_watch_delay(api.ARS_PLURAL, 3.0)
    env.kube.delete_object(api.ARS_PLURAL, env.namespace, "arc")
    eventually(lambda: env.ars() is None, what="the ARS gone", timeout=30)
    eventually(
        lambda: any(
            r.resource == api.ARS_PLURAL and r.verb == "patch" and r.status == 404
            for r in apiserver.request_log.records()
        ),
        what="a patch of the gone ARS",
        timeout=15,
    )
    assert env.events("ReconcileFailed", "Warning") == []
