"""An AutoscalingRunnerSet from registration to a running set: the scale set on GitHub
(the simulator), the EphemeralRunnerSet and the AutoscalingListener it owns, updates of
each, and its status."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from ersctl import api
from ersctl.autoscalingrunnerset.desired import SCALE_SET_LABELS_ANNOTATION
from ersctl.naming import fnv_hash
from tests.ersctl.autoscalingrunnerset.conftest import CREDENTIALS, Env, runner_template
from tests.polling import eventually


def test_an_ars_registers_its_scale_set_and_makes_its_runner_set_and_listener(env: Env) -> None:
    ars = env.launch("arc", minRunners=1, maxRunners=5, runnerScaleSetLabels=["linux", "arc"])

    (scale_set,) = env.sim.scale_sets.values()
    assert (scale_set.name, scale_set.runner_group_id, scale_set.labels) == (
        "arc",
        1,
        ["arc", "linux"],
    )
    assert scale_set.disable_update
    annotations = ars["metadata"]["annotations"]
    assert annotations[api.RUNNER_SCALE_SET_ID_ANNOTATION] == str(scale_set.id)
    assert annotations[api.RUNNER_SCALE_SET_NAME_ANNOTATION] == "arc"
    assert annotations[api.RUNNER_GROUP_NAME_ANNOTATION] == "Default"
    assert ars["metadata"]["labels"]["actions.github.com/organization"] == "octo-org"
    assert api.ARS_FINALIZER in ars["metadata"]["finalizers"]

    ers = env.runner_set("arc")
    assert ers["metadata"]["name"] == "arc"  # ARC 0.15: named after its ARS
    assert ers["metadata"]["ownerReferences"][0]["kind"] == api.ARS_KIND
    runner_spec = ers["spec"]["ephemeralRunnerSpec"]
    assert runner_spec["githubConfigUrl"] == env.config_url
    assert runner_spec["githubConfigSecret"] == CREDENTIALS
    assert runner_spec["runnerScaleSetId"] == scale_set.id
    assert runner_spec["spec"]["containers"] == runner_template()["spec"]["containers"]
    assert ers["metadata"]["labels"]["app.kubernetes.io/component"] == "runner-set"
    assert ers["metadata"]["labels"]["actions.github.com/scale-set-name"] == "arc"
    assert api.INTEGRITY_HASH_ANNOTATION in ers["metadata"]["annotations"]

    listener = env.listener()
    suffix = fnv_hash(f"{env.namespace}@@{env.config_url}".encode())[:8]
    assert listener["metadata"]["name"] == f"arc-{suffix}-listener"
    assert listener["metadata"]["labels"]["app.kubernetes.io/component"] == (
        "runner-scale-set-listener"
    )
    assert listener["spec"] == {
        "githubConfigUrl": env.config_url,
        "githubConfigSecret": CREDENTIALS,
        "runnerScaleSetId": scale_set.id,
        "autoscalingRunnerSetNamespace": env.namespace,
        "autoscalingRunnerSetName": "arc",
        "ephemeralRunnerSetName": ers["metadata"]["name"],
        "minRunners": 1,
        "maxRunners": 5,
    }
    assert ars["status"]["state"] == "Running"


def test_the_credentials_secret_is_protected_while_the_ars_uses_it(env: Env) -> None:
    env.launch("arc")
    secret = env.kube.get_object("secrets", env.namespace, CREDENTIALS) or {}
    assert api.CLEANUP_PROTECTION_FINALIZER in secret["metadata"]["finalizers"]
    assert env.annotation(api.CLEANUP_SECRET_ANNOTATION) == CREDENTIALS


def test_a_restarted_controller_registers_and_creates_nothing_again(env: Env) -> None:
    env.launch("arc")
    listener_uid = env.listener()["metadata"]["uid"]
    env.stop()
    env._stop.clear()
    env.start()
    env.patch_ars("arc", {"spec": {"minRunners": 0}})  # something to reconcile
    eventually(lambda: env.listener()["spec"]["minRunners"] == 0, what="min reaches the AL")
    assert len(env.scale_set_calls("scaleset.created")) == 1
    assert len(env.runner_sets("arc")) == 1
    assert env.listener()["metadata"]["uid"] == listener_uid


def test_min_and_max_reach_the_listener_in_place(env: Env) -> None:
    env.launch("arc", minRunners=1)
    uid = env.listener()["metadata"]["uid"]
    env.patch_ars("arc", {"spec": {"minRunners": 2, "maxRunners": 7}})
    eventually(
        lambda: (
            (env.listener()["spec"]["minRunners"], env.listener()["spec"]["maxRunners"]) == (2, 7)
        ),
        what="min/max on the listener",
    )
    assert env.listener()["metadata"]["uid"] == uid
    env.patch_ars("arc", {"spec": {"maxRunners": None}})
    eventually(
        lambda: env.listener()["spec"]["maxRunners"] == 2**31 - 1, what="unset max is MaxInt32"
    )


def test_a_runner_template_change_leaves_the_listener_alone(env: Env) -> None:
    # As ARC: the listener does not depend on the runner template, so its Pod is not
    # restarted for one (the listener controller sees no change of its AL at all).
    env.launch("arc")
    before = env.listener()["metadata"]["resourceVersion"]
    env.patch_ars("arc", {"spec": {"template": runner_template("example/runner:2")}})
    eventually(
        lambda: env.runner_set("arc")["spec"].get("actionableRevision") == 1,
        what="the set's revision advanced",
    )
    env.patch_ars("arc", {"spec": {"minRunners": 1}})  # a change the listener does take
    eventually(lambda: env.listener()["spec"]["minRunners"] == 1, what="min on the AL")
    history = [
        r for r in env.sent.records() if "autoscalinglisteners" in r.path and r.method == "PATCH"
    ]
    # The min patch only (twice, should a reconcile on a lagging cache send it again): a
    # patch for the template would have come first, without the new min.
    assert history, "the min change reached the listener by a patch"
    assert all(r.body["spec"]["minRunners"] == 1 for r in history), history
    assert before != env.listener()["metadata"]["resourceVersion"]


def test_a_template_change_advances_the_sets_actionable_revision(env: Env) -> None:
    env.launch("arc")
    name = env.runner_set("arc")["metadata"]["name"]
    assert env.runner_set("arc")["spec"].get("actionableRevision", 0) == 0
    env.patch_ars("arc", {"spec": {"minRunners": 3}})  # not the runner template
    eventually(lambda: env.listener()["spec"]["minRunners"] == 3, what="min on the AL")
    assert env.runner_set("arc")["spec"].get("actionableRevision", 0) == 0

    env.patch_ars("arc", {"spec": {"template": runner_template("example/runner:2")}})

    def advanced() -> bool:
        ers = env.runner_set("arc")
        image = ers["spec"]["ephemeralRunnerSpec"]["spec"]["containers"][0]["image"]
        return bool(ers["spec"].get("actionableRevision") == 1 and image == "example/runner:2")

    eventually(advanced, what="revision 1 with the new template")
    assert env.runner_set("arc")["metadata"]["name"] == name  # the same set, rebuilt in place
    eventually(lambda: env.events("RunnerTemplateChanged"), what="an Event")


def test_a_name_group_or_labels_change_updates_the_scale_set(env: Env) -> None:
    env.sim.runner_groups[2] = "gpu"
    env.launch("arc")
    (scale_set,) = env.sim.scale_sets.values()

    env.patch_ars("arc", {"spec": {"runnerScaleSetName": "arc-renamed"}})
    eventually(lambda: scale_set.name == "arc-renamed", what="renamed on GitHub")
    eventually(
        lambda: env.annotation(api.RUNNER_SCALE_SET_NAME_ANNOTATION) == "arc-renamed",
        what="the name annotation",
    )
    env.patch_ars("arc", {"spec": {"runnerGroup": "gpu"}})
    eventually(lambda: scale_set.runner_group_id == 2, what="moved to the gpu group")
    eventually(lambda: env.annotation(api.RUNNER_GROUP_NAME_ANNOTATION) == "gpu", what="annotation")
    env.patch_ars("arc", {"spec": {"runnerScaleSetLabels": ["big"]}})
    eventually(lambda: scale_set.labels == ["arc-renamed", "big"], what="labels on GitHub")
    # Recorded on the ARS too: until then a reconcile may still see the old labels and
    # send the same update again (seen once in CI, counted below as a fourth update).
    eventually(
        lambda: env.annotation(SCALE_SET_LABELS_ANNOTATION) == "arc-renamed,big",
        what="the labels annotation",
    )

    # ARC's skip rule: an emptied runner group leaves the scale set where it is.
    updates = len(env.scale_set_calls("scaleset.updated"))
    env.patch_ars("arc", {"spec": {"runnerGroup": None, "minRunners": 4}})
    eventually(lambda: env.listener()["spec"]["minRunners"] == 4, what="reconciled")
    assert scale_set.runner_group_id == 2
    assert len(env.scale_set_calls("scaleset.updated")) == updates
    assert len(env.scale_set_calls("scaleset.created")) == 1


@pytest.mark.embedded_only("a lagging listener cache (the server's watch delay)")
def test_a_listener_the_cache_has_not_seen_yet_is_gone_before_another_is_made(env: Env) -> None:
    """Two listeners of one scale set would hold two message sessions. With the cache
    behind, a runner group changed twice in a row would have the second listener made
    beside the first, which the cache did not show yet."""
    env.sim.runner_groups[2] = "gpu"
    env.launch("arc")
    (first,) = env.listeners()
    server = env.kube.embedded
    assert server is not None
    counts: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            counts.append(len(env.listeners()))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    server.set_watch_delay(api.AL_PLURAL, 2.0)
    sampler.start()
    try:
        env.patch_ars("arc", {"spec": {"runnerGroup": "gpu"}})
        eventually(
            lambda: [
                al for al in env.listeners() if al["metadata"]["name"] != first["metadata"]["name"]
            ],
            what="the gpu group's listener",
        )
        # At once, before the cache can show it: back to the default group.
        env.patch_ars("arc", {"spec": {"runnerGroup": None}})
        eventually(
            lambda: (
                [al["metadata"]["name"] for al in env.listeners()] == [first["metadata"]["name"]]
            ),
            what="the default group's listener, alone",
            timeout=15,
        )
    finally:
        stop.set()
        sampler.join()

    assert counts and max(counts) == 1


@pytest.mark.embedded_only("a lagging listener cache (the server's watch delay)")
def test_a_listener_just_made_and_not_in_the_cache_yet_is_not_made_again(env: Env) -> None:
    """Until the cache shows the listener a reconcile made, the next reconciles find it
    by asking the API server, instead of creating it again (AlreadyExists, a failed
    reconcile and a warning each time)."""
    server = env.kube.embedded
    assert server is not None
    # Longer than the test: the cache shows no listener at all while it runs.
    server.set_watch_delay(api.AL_PLURAL, 60.0)
    env.launch("arc")

    def since_the_create(verb: str) -> list[int | None]:
        sent = [r for r in env.sent.records() if r.targets(api.AL_PLURAL)]
        made = next(i for i, r in enumerate(sent) if r.verb == "create")
        return [r.status for r in sent[made + 1 :] if r.verb == verb]

    # Each changed annotation wakes a reconcile, which asks the API server.
    for touch in (1, 2):
        env.patch_ars("arc", {"metadata": {"annotations": {"example.com/touch": str(touch)}}})

        def asked(times: int = touch) -> bool:
            return len(since_the_create("list")) >= times

        eventually(asked, what=f"reconcile {touch} asking for the listeners")

    assert since_the_create("create") == []


def ars_status_writes(env: Env) -> list[dict[str, Any]]:
    return [
        r.body
        for r in env.sent.records()
        if r.method == "PATCH" and r.path.endswith("/status") and api.ARS_PLURAL in r.path
    ]


def ars_reconciles(env: Env) -> float:
    assert env.controller is not None
    metrics = env.controller.manager.metrics
    return sum(
        metrics.value("ersctl_reconcile_total", {"controller": "autoscalingrunnerset", "result": r})
        for r in ("success", "requeue_after")
    )


def test_the_status_is_not_written_when_the_sets_runners_change(env: Env) -> None:
    env.launch("arc")
    ers = env.runner_set("arc")
    assert env.controller is not None
    store = env.controller.manager.store(api.ARS_PLURAL)
    # Its cache shows what it wrote: a reconcile from now on starts from that status.
    eventually(
        lambda: (
            ((store.get(env.namespace, "arc") or {}).get("status") or {}).get("state") == "Running"
        ),
        what="the cached ARS running",
    )
    env.sent.clear()
    seen = ars_reconciles(env)
    # The listener's write: two runners wanted (no runner controller: they stay pending).
    env.kube.patch_object(
        api.ERS_PLURAL,
        env.namespace,
        ers["metadata"]["name"],
        {"spec": {"replicas": 2, "patchID": 1}},
    )
    eventually(lambda: len(env.kube.list_objects(api.ER_PLURAL)) == 2, what="two runners")
    # The set's event reconciles the ARS again...
    eventually(lambda: ars_reconciles(env) > seen, what="the ARS reconciled")

    # ... and nothing it keeps changed: its phase and state are as they were.
    assert ars_status_writes(env) == []
    status = (env.ars("arc") or {}).get("status") or {}
    assert (status.get("phase"), status.get("state")) == ("Running", "Running")
    assert "currentRunners" not in status and "pendingEphemeralRunners" not in status


def test_a_scale_set_of_that_name_in_its_group_is_used_not_registered_again(env: Env) -> None:
    existing = env.sim.create_scale_set("arc", labels=["arc"], disable_update=True)
    env.launch("arc")
    assert env.annotation(api.RUNNER_SCALE_SET_ID_ANNOTATION) == str(existing["id"])
    assert len(env.scale_set_calls("scaleset.created")) == 1  # the test's own
    assert env.events("ScaleSetFound")


def test_a_scale_set_deleted_on_github_is_registered_again_before_a_listener_starts(
    env: Env,
) -> None:
    env.launch("arc")
    (gone,) = env.sim.scale_sets
    env.sim.delete_scale_set(gone)
    listener = env.listener()
    env.kube.delete_object(api.AL_PLURAL, env.namespace, listener["metadata"]["name"])

    def registered_again() -> bool:
        value = env.annotation(api.RUNNER_SCALE_SET_ID_ANNOTATION)
        return value not in (None, str(gone))

    eventually(registered_again, what="a new scale set id", timeout=10)
    new_id = int(env.annotation(api.RUNNER_SCALE_SET_ID_ANNOTATION) or 0)
    eventually(
        lambda: env.listeners() and env.listener()["spec"]["runnerScaleSetId"] == new_id,
        what="the listener on the new scale set",
    )
    eventually(
        lambda: env.runner_set()["spec"]["ephemeralRunnerSpec"]["runnerScaleSetId"] == new_id,
        what="the set's runners on the new scale set",
    )
    assert env.events("ScaleSetGone", "Warning")


def test_labels_with_an_excluded_prefix_are_not_propagated(env: Env) -> None:
    # ARC's --exclude-label-propagation-prefix (an Argo CD instance label must not make
    # Argo CD think it owns what the controller made).
    env.create_secret()
    body = env.ars_body("arc")
    body["metadata"]["labels"] = {"argocd.argoproj.io/instance": "runners", "team": "web"}
    env.kube.create_object(api.ARS_PLURAL, body)
    env.start(exclude_label_prefixes=("argocd.argoproj.io/",))
    env.running("arc")

    for made in (env.runner_set("arc"), env.listener()):
        labels = made["metadata"]["labels"]
        assert labels["team"] == "web"
        assert "argocd.argoproj.io/instance" not in labels
    kept = (env.ars("arc") or {})["metadata"]["labels"]
    assert kept["argocd.argoproj.io/instance"] == "runners", "the ARS's own labels stay"


def test_a_failed_reconcile_is_one_warning_line(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    # The reconciler logged the failure's Event and the runtime the failure: two lines.
    env.sim.faults.inject(endpoint="create_scale_set", status=429, times=5)
    env.create_secret()
    env.create_ars("arc")
    with caplog.at_level(logging.WARNING):
        env.start()
        eventually(
            lambda: [r for r in caplog.records if "reconcile failed" in r.getMessage()],
            what="the failed reconcile logged",
        )
    about_it = [r.getMessage() for r in caplog.records if "429" in r.getMessage()]
    assert len(about_it) == 1 and about_it[0].startswith("reconcile failed, retrying in ")
    assert env.events("GitHubCallFailed", "Warning")  # the Event is recorded all the same


def test_a_rate_limited_registration_is_requeued_not_retried(env: Env) -> None:
    # ARC's #4726: no client retry (a worker asleep in one serves no other scale set),
    # and the next try waits for the limit to reset (60 s when GitHub does not say).
    fault = env.sim.faults.inject(endpoint="create_scale_set", status=429, times=5)
    env.create_secret()
    env.create_ars("arc")
    env.start()
    (event,) = eventually(lambda: env.events("GitHubCallFailed", "Warning"), what="a Warning")
    assert "429" in event["message"]
    time.sleep(1.0)  # what a backoff from 5 ms would have filled with tries
    assert fault.times == 4, "one request: neither the client nor the work queue retried"
    assert env.annotation(api.RUNNER_SCALE_SET_ID_ANNOTATION) is None
