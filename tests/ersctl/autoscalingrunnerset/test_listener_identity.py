"""One listener per scale set, at ARC's key, and an EphemeralRunnerSet named after its
AutoscalingRunnerSet: what ARC's controller looks up is what ours makes, and a second
listener for one scale set never exists (it would hold a second session)."""

from __future__ import annotations

from typing import Any

from ersctl import api
from ersctl.autoscalinglistener.objects import ListenerSettings
from ersctl.naming import legacy_listener_name, listener_name
from tests.ersctl.autoscalingrunnerset.conftest import CREDENTIALS, Env
from tests.polling import eventually

HELD = "tests.example/held"  # the listener controller's part, played by the test


def _listener(env: Env, namespace: str, name: str, ars: str = "arc") -> dict[str, Any]:
    """A listener of ARS ``ars`` at ``namespace/name``, made by another controller (ARC
    before 0.13.1, or ARC in its own namespace), whose teardown the test holds."""
    return env.kube.create_object(
        api.AL_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.AL_KIND,
            "metadata": {"name": name, "namespace": namespace, "finalizers": [HELD]},
            "spec": {
                "githubConfigUrl": env.config_url,
                "githubConfigSecret": CREDENTIALS,
                "runnerScaleSetId": 1,
                "autoscalingRunnerSetNamespace": env.namespace,
                "autoscalingRunnerSetName": ars,
                "ephemeralRunnerSetName": ars,
                "minRunners": 0,
                "maxRunners": 10,
            },
        },
    )


def _ours(env: Env, namespace: str) -> tuple[str, str]:
    return namespace, listener_name(env.namespace, "", env.config_url, "arc")


def _listeners_of_arc(env: Env, *namespaces: str) -> list[tuple[str, str]]:
    return sorted(
        (al["metadata"]["namespace"], al["metadata"]["name"])
        for namespace in namespaces
        for al in env.kube.list_objects(api.AL_PLURAL, namespace)
        if al["spec"]["autoscalingRunnerSetName"] == "arc"
    )


def _release(env: Env, namespace: str, name: str) -> None:
    env.kube.patch_object(api.AL_PLURAL, namespace, name, {"metadata": {"finalizers": None}})


def test_a_listener_under_the_name_before_arc_0_13_1_is_replaced_never_doubled(
    env: Env,
) -> None:
    old = legacy_listener_name(env.namespace, "arc")
    _listener(env, env.namespace, old)
    env.create_secret()
    env.create_ars("arc")
    env.start()

    def old_deleting() -> bool:
        al = env.kube.get_object(api.AL_PLURAL, env.namespace, old)
        return bool(al and al["metadata"].get("deletionTimestamp"))

    eventually(old_deleting, what="the old listener deleted")
    eventually(lambda: env.state("arc") == "ReplacingListener", what="the ARS waiting")
    # While the old one still stands (its Pod may still run), no second is made.
    env.patch_ars("arc", {"spec": {"minRunners": 1}})  # another reconcile
    eventually(lambda: env.events("StrayListenerDeleted"), what="the Event")
    assert _listeners_of_arc(env, env.namespace) == [(env.namespace, old)]
    _release(env, env.namespace, old)
    env.running("arc")
    assert _listeners_of_arc(env, env.namespace) == [_ours(env, env.namespace)]


def test_arcs_listener_in_another_namespace_is_replaced_never_doubled(env: Env) -> None:
    # ARC in arc-systems, ours told to keep listeners next to their scale sets.
    arc_systems = env.kube.create_namespace("arc-systems")
    arcs = _listener(env, arc_systems, _ours(env, arc_systems)[1])
    env.create_secret()
    env.create_ars("arc")
    env.start(namespace=None)
    eventually(lambda: env.state("arc") == "ReplacingListener", what="the ARS waiting")
    assert _listeners_of_arc(env, env.namespace, arc_systems) == [_ours(env, arc_systems)]
    _release(env, arc_systems, arcs["metadata"]["name"])
    env.running("arc")
    assert _listeners_of_arc(env, env.namespace, arc_systems) == [_ours(env, env.namespace)]


def test_arcs_listener_at_arcs_key_is_taken_over_in_place(env: Env) -> None:
    arc_systems = env.kube.create_namespace("arc-systems")
    arcs = _listener(env, arc_systems, _ours(env, arc_systems)[1])
    env.create_secret()
    env.create_ars("arc")
    env.start(namespace=None, listener_namespace=arc_systems)
    env.running("arc")
    (al,) = [
        a
        for a in env.kube.list_objects(api.AL_PLURAL, arc_systems)
        if a["metadata"]["name"] == arcs["metadata"]["name"]
    ]
    assert al["metadata"]["uid"] == arcs["metadata"]["uid"]
    assert env.events("StrayListenerDeleted") == []
    _release(env, arc_systems, arcs["metadata"]["name"])


def test_deleting_the_ars_deletes_every_listener_of_it_wherever_it_is(env: Env) -> None:
    arc_systems = env.kube.create_namespace("arc-systems")
    env.create_secret()
    env.create_ars("arc")
    env.start(namespace=None)
    env.running("arc")
    ours = _ours(env, env.namespace)
    held = {"metadata": {"finalizers": [HELD]}}
    env.kube.patch_object(api.AL_PLURAL, *ours, held)
    env.kube.delete_object(api.ARS_PLURAL, env.namespace, "arc")
    # While the teardown waits for ours, another appears (ARC started again, say).
    stray = _listener(env, arc_systems, ours[1])
    _release(env, *ours)

    def stray_deleting() -> bool:
        al = env.kube.get_object(api.AL_PLURAL, arc_systems, stray["metadata"]["name"]) or {}
        return bool(al.get("metadata", {}).get("deletionTimestamp"))

    eventually(stray_deleting, what="the other listener deleted too")
    assert env.ars("arc") is not None  # the teardown waits for it
    _release(env, arc_systems, stray["metadata"]["name"])
    eventually(lambda: env.ars("arc") is None, what="the ARS gone", timeout=10)


def test_the_runner_set_is_named_after_the_ars_and_an_orphan_of_that_name_adopted(
    env: Env,
) -> None:
    # Left by an ARS deleted with --cascade=orphan: its runners keep their registration.
    orphan = env.kube.create_object(
        api.ERS_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.ERS_KIND,
            "metadata": {"name": "arc"},
            "spec": {
                "replicas": 1,
                "patchID": 3,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": env.config_url,
                    "githubConfigSecret": CREDENTIALS,
                    "runnerScaleSetId": 1,
                    "spec": {"containers": [{"name": "runner", "image": "old"}]},
                },
            },
        },
    )
    env.launch("arc")
    (ers,) = env.runner_sets("arc")
    assert ers["metadata"]["uid"] == orphan["metadata"]["uid"]
    assert env.events("RunnerSetAdopted")


def test_a_runner_set_name_another_owns_is_refused_naming_it(env: Env) -> None:
    other = env.kube.create_object(
        "configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}
    )
    env.kube.create_object(
        api.ERS_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.ERS_KIND,
            "metadata": {
                "name": "arc",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": "owner",
                        "uid": other["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "replicas": 0,
                "patchID": 0,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": env.config_url,
                    "githubConfigSecret": CREDENTIALS,
                    "runnerScaleSetId": 1,
                    "spec": {"containers": [{"name": "runner", "image": "x"}]},
                },
            },
        },
    )
    env.create_secret()
    env.create_ars("arc")
    env.start()
    (event,) = eventually(
        lambda: env.events("RunnerSetNameTaken", "Warning"), what="the Warning Event"
    )
    assert "ConfigMap owner" in event["message"]
    # The state is written after the Event: under load a read can fall between the two.
    eventually(lambda: env.state("arc") == "RunnerSetNameTaken", what="the state")
    assert env.listeners() == []


def test_an_ars_whose_listener_cannot_start_says_so_instead_of_running(env: Env) -> None:
    env.create_secret()
    env.create_ars("arc")
    env.start(listener_controller=True, listener=ListenerSettings(image=""))
    (event,) = eventually(
        lambda: env.events("ListenerCannotStart", "Warning"), what="the Warning Event"
    )
    assert "--listener-image" in event["message"]
    eventually(lambda: env.state("arc") == "ListenerCannotStart", what="the state")
    status = (env.ars("arc") or {})["status"]
    assert status["phase"] == "Failed"
    assert "--listener-image" in status["message"]


def test_a_listener_that_keeps_exiting_on_a_vanished_scale_set_is_rebuilt_on_a_new_one(
    env: Env,
) -> None:
    # ARC's #4571 heals a listener not made yet; one already crash-looping on a dead id
    # is healed here too (ARC: delete the AutoscalingListener by hand).
    env.launch("arc")
    (gone,) = env.sim.scale_sets
    env.sim.delete_scale_set(gone)
    listener = env.listener()
    name = listener["metadata"]["name"]
    for exits, moment in ((1, "2026-01-01T12:00:00Z"), (2, "2026-01-01T12:00:05Z")):
        env.kube.patch_object(
            api.AL_PLURAL,
            env.namespace,
            name,
            {"status": {"listenerRestarts": exits, "lastListenerExitTime": moment}},
            subresource="status",
        )
    eventually(
        lambda: env.annotation(api.RUNNER_SCALE_SET_ID_ANNOTATION) not in (None, str(gone)),
        what="a new scale set id",
        timeout=15,
    )
    new_id = int(env.annotation(api.RUNNER_SCALE_SET_ID_ANNOTATION) or 0)
    eventually(
        lambda: env.listeners() and env.listener()["spec"]["runnerScaleSetId"] == new_id,
        what="the listener rebuilt on the new scale set",
        timeout=15,
    )
    assert env.listener()["metadata"]["uid"] != listener["metadata"]["uid"]
    assert env.events("ScaleSetGone", "Warning")
