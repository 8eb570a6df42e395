"""The AutoscalingListener controller through the test's Kubernetes API: what it makes
for a listener (named, labelled and shaped as ARC's), the config ARC's listener and ours
both read, the restart backoff, the roll on a config change, the teardown order, and
bad input."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest
from kubernetes.client import ApiException

from ersctl.api import AL_FINALIZER
from ersctl.api import FieldError as ApiFieldError
from ersctl.kube.reconcile import Request
from ersctl.naming import legacy_listener_name
from ghalistener.config import parse_config
from tests.ersctl.autoscalinglistener.conftest import (
    CONFIG_URL,
    IMAGE,
    RUNNER_SET,
    SCALE_SET,
    ListenerHarness,
    exited,
    listener_settings,
    running,
)
from tests.ersctl.kube.conftest import reconcile_in_the_worker_loop
from tests.ghalistener.arc_configs import (
    METRICS_BLOCK,
    app_config_metrics_on,
    pat_config_metrics_off,
    rsa_private_key,
)
from tests.kubeclient import status_of


def sa_name(harness: ListenerHarness) -> str:
    """ARC 0.15's name of the listener's ServiceAccount, Role and RoleBinding: its own."""
    return harness.name


def test_a_listener_gets_arcs_pod_config_secret_service_account_role_and_binding(
    harness: ListenerHarness,
) -> None:
    created = harness.create_listener()
    harness.settle()
    listener = harness.listener()
    assert listener is not None and listener.finalizers == [AL_FINALIZER]
    owner = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingListener",
        "name": harness.name,
        "uid": created.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    name = sa_name(harness)
    account = harness.kube.get_object("serviceaccounts", harness.namespace, name)
    assert account is not None and account["metadata"]["ownerReferences"] == [owner]
    role = harness.kube.get_object("roles", harness.scale_set_namespace, name)
    assert role is not None
    assert role["rules"] == [
        {
            "apiGroups": ["actions.github.com"],
            "resources": ["ephemeralrunnersets"],
            "resourceNames": [RUNNER_SET],
            "verbs": ["patch"],
        },
        {
            "apiGroups": ["actions.github.com"],
            "resources": ["ephemeralrunners/status"],
            "verbs": ["patch"],
        },
    ]
    assert role["metadata"]["labels"]["auto-scaling-listener-name"] == harness.name
    binding = harness.kube.get_object("rolebindings", harness.scale_set_namespace, name)
    assert binding is not None
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": name,
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": name, "namespace": harness.namespace}
    ]
    secret = harness.kube.get_object("secrets", harness.namespace, f"{harness.name}-config")
    assert secret is not None and secret["metadata"]["ownerReferences"] == [owner]

    stored = harness.pod()
    assert stored is not None and stored["metadata"]["ownerReferences"] == [owner]
    pod = harness.sent_pod()
    labels = pod["metadata"]["labels"]
    assert labels["app.kubernetes.io/component"] == "runner-scale-set-listener"
    assert labels["actions.github.com/scale-set-name"] == SCALE_SET
    assert labels["actions.github.com/scale-set-namespace"] == harness.scale_set_namespace
    assert labels["actions.github.com/organization"] == "my-org"
    spec = pod["spec"]
    assert spec["serviceAccountName"] == name
    assert spec["restartPolicy"] == "Never"
    (container,) = spec["containers"]
    assert container["name"] == "listener"
    assert container["image"] == IMAGE
    assert container["command"] == ["/ghalistener"]
    assert container["env"] == [
        {"name": "LISTENER_CONFIG_PATH", "value": "/etc/gha-listener/config.json"}
    ]
    assert container["volumeMounts"] == [
        {"name": "listener-config", "mountPath": "/etc/gha-listener", "readOnly": True}
    ]
    assert spec["volumes"] == [
        {"name": "listener-config", "secret": {"secretName": f"{harness.name}-config"}}
    ]


def test_the_config_secret_holds_byte_for_byte_what_arcs_controller_writes(
    harness: ListenerHarness,
) -> None:
    harness.create_listener()
    harness.settle()
    # tests.ghalistener.arc_configs: ARC's own output, which ARC's listener image and ours
    # both run from (tests/ghalistener/test_arc_config.py runs ours from it).
    expected = pat_config_metrics_off(CONFIG_URL, harness.scale_set_namespace)
    assert harness.config_json() == expected.replace('"runners"', f'"{RUNNER_SET}"')
    # Every key written is one our listener reads or knows to need nothing from (an
    # unknown key stops it, naming the key): the config it is given starts it.
    parsed = parse_config(json.loads(harness.config_json()))
    assert parsed.ephemeral_runner_set_name == RUNNER_SET


@pytest.mark.parametrize(
    "settings", [listener_settings(metrics_addr=":9108", log_level="info", log_format="json")]
)
def test_an_app_credential_and_listener_metrics_reach_the_config_and_the_pod(
    harness: ListenerHarness,
) -> None:
    key = rsa_private_key()
    harness.write_credentials(
        {
            "github_app_id": "12345",
            "github_app_installation_id": "67890",
            "github_app_private_key": key,
        }
    )
    harness.create_listener(maxRunners=5, metrics=json.loads(METRICS_BLOCK))
    harness.settle()
    expected = app_config_metrics_on(CONFIG_URL, harness.scale_set_namespace, key, 9108)
    assert harness.config_json() == expected.replace('"runners"', f'"{RUNNER_SET}"')
    pod = harness.pod()
    assert pod is not None
    (container,) = pod["spec"]["containers"]
    assert container["ports"] == [{"containerPort": 9108, "protocol": "TCP", "name": "metrics"}]


def test_the_listener_template_is_merged_as_arc_merges_it(harness: ListenerHarness) -> None:
    template: dict[str, Any] = {
        "metadata": {
            "labels": {"team": "ci", "app.kubernetes.io/component": "not-the-listener"},
            "annotations": {"note": "from the template"},
        },
        "spec": {
            "schedulerName": "gha-scaleset-tests-no-scheduler",
            "nodeSelector": {"pool": "listeners"},
            "containers": [
                {
                    "name": "listener",
                    "image": "ghcr.io/actions/gha-runner-scale-set-controller:0.14.2",
                    "env": [{"name": "EXTRA", "value": "1"}],
                    "resources": {"limits": {"memory": "128Mi"}},
                },
                {"name": "sidecar", "image": "busybox"},
            ],
            "volumes": [{"name": "scratch", "emptyDir": {}}],
        },
    }
    harness.create_listener(template=template)
    harness.settle()
    pod = harness.sent_pod()
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"]["team"] == "ci"
    # ARC's rule: a template label never overrides one the Pod has.
    assert meta["labels"]["app.kubernetes.io/component"] == "runner-scale-set-listener"
    assert meta["annotations"]["note"] == "from the template"
    assert spec["nodeSelector"] == {"pool": "listeners"}
    assert "terminationGracePeriodSeconds" not in spec  # ARC takes the template's, unset
    listener, sidecar = spec["containers"]
    assert listener["image"] == "ghcr.io/actions/gha-runner-scale-set-controller:0.14.2"
    assert listener["command"] == ["/ghalistener"]
    assert [e["name"] for e in listener["env"]] == ["LISTENER_CONFIG_PATH", "EXTRA"]
    assert listener["resources"] == {"limits": {"memory": "128Mi"}}
    assert sidecar == {"name": "sidecar", "image": "busybox"}
    assert [v["name"] for v in spec["volumes"]] == ["listener-config", "scratch"]


def test_the_running_listener_counts_in_arcs_running_listeners_gauge(
    harness: ListenerHarness,
) -> None:
    harness.create_listener()
    harness.settle()
    labels = {
        "name": SCALE_SET,
        "namespace": harness.scale_set_namespace,
        "repository": "",
        "organization": "my-org",
        "enterprise": "",
    }

    def gauge() -> float | None:
        return harness.registry.get_sample_value("gha_controller_running_listeners", labels)

    assert gauge() == 0.0
    harness.set_pod_status(running())
    assert gauge() == 1.0


def test_a_listener_without_arcs_labels_still_gets_a_pod_the_controller_and_gauge_see(
    harness: ListenerHarness,
) -> None:
    # An AL written by hand, without the labels ARC's ARS controller gives it: its Pod
    # must still carry the one the Pod informer selects on, or the controller never
    # sees it and creates it again and again.
    body = harness.create_listener().raw
    harness.kube.patch_object(
        "autoscalinglisteners", harness.namespace, harness.name, {"metadata": {"labels": None}}
    )
    assert body["metadata"]["labels"]
    harness.settle()
    assert harness.cached_pod_version() != ""
    harness.set_pod_status(running())
    labels = {
        "name": SCALE_SET,
        "namespace": harness.scale_set_namespace,
        "repository": "",
        "organization": "",
        "enterprise": "",
    }
    assert harness.registry.get_sample_value("gha_controller_running_listeners", labels) == 1.0


def test_an_exited_listener_comes_back_after_an_exponential_backoff_with_an_event(
    harness: ListenerHarness,
) -> None:
    harness.create_listener()
    harness.settle()
    for restart, delay in ((1, 5.0), (2, 10.0), (3, 20.0)):
        first = harness.pod()
        assert first is not None
        harness.set_pod_status(exited(1))
        result = harness.reconcile()
        assert result.requeue_after == delay
        harness.wait_for_cache()
        assert harness.pod() is None, "the exited Pod is deleted"
        listener = harness.listener()
        assert listener is not None and listener.listener_restarts == restart
        # Not before its time (ARC would have made one already: a hot loop).
        assert harness.reconcile().requeue_after == pytest.approx(delay)
        assert harness.pod() is None
        harness.clock.advance(delay)
        harness.reconcile()
        harness.wait_for_cache()
        second = harness.pod()
        assert second is not None and second["metadata"]["uid"] != first["metadata"]["uid"]
    harness.manager.events.flush()  # repeats are counted into one Event (issue 14)
    (event,) = harness.events("ListenerExited")
    assert (event["count"], event["message"]) == (
        3,
        "the listener pod exited (Error, exit code 1); restart 3 in a row, "
        "the next pod starts in 20s",
    )
    assert (event["type"], event["involvedObject"]["kind"]) == ("Warning", "AutoscalingListener")


@pytest.mark.embedded_only("a watch delay keeps the deleted Pod in the cache")
def test_an_exit_is_counted_once_while_the_cache_still_shows_the_exited_pod(
    harness: ListenerHarness,
) -> None:
    harness.create_listener()
    harness.settle()
    harness.set_pod_status(exited(1))
    harness.wait_for_cache()
    assert harness.kube.embedded is not None
    harness.kube.embedded.set_watch_delay("pods", 5.0)  # the deletion reaches the cache late
    try:
        assert harness.reconcile().requeue_after == 5.0
        assert harness.pods.store.get(harness.namespace, harness.name) is not None
        harness.reconcile()  # what the event of its own status write brings
    finally:
        harness.kube.embedded.set_watch_delay("pods", 0.0)
    listener = harness.listener()
    assert listener is not None and listener.listener_restarts == 1  # not 2: one exit


def test_the_backoff_is_capped_and_a_listener_that_ran_long_starts_over(
    harness: ListenerHarness,
) -> None:
    harness.create_listener()
    harness.settle()
    harness.kube.patch_object(
        "autoscalinglisteners",
        harness.namespace,
        harness.name,
        {"status": {"listenerRestarts": 12}},
        subresource="status",
    )
    harness.set_pod_status(exited(2))
    assert harness.reconcile().requeue_after == 300.0
    harness.clock.advance(300)
    harness.reconcile()
    harness.wait_for_cache()
    # ran for ten minutes before it exited: the next wait is the first one again
    harness.set_pod_status(
        exited(1, started_at="2026-01-01T12:00:00Z", finished_at="2026-01-01T12:10:00Z")
    )
    assert harness.reconcile().requeue_after == 5.0
    listener = harness.listener()
    assert listener is not None and listener.listener_restarts == 1


def test_rotated_credentials_roll_the_listener_pod(harness: ListenerHarness) -> None:
    harness.create_listener()
    harness.settle()
    before = harness.pod()
    assert before is not None
    harness.write_credentials({"github_token": "ghp_rotatedTokenAAAAAAAAAAAAAAAAAAA"})
    harness.settle()
    assert '"github_token":"ghp_rotatedTokenAAAAAAAAAAAAAAAAAAA"' in harness.config_json()
    after = harness.pod()
    assert after is not None and after["metadata"]["uid"] != before["metadata"]["uid"]
    (event,) = harness.events("ListenerRolled")
    assert event["type"] == "Normal"
    assert "ghp_rotated" not in event["message"]
    listener = harness.listener()
    assert listener is not None and listener.listener_restarts == 0, "a roll is no restart"


@pytest.mark.parametrize("change", [{"maxRunners": 7}, {"minRunners": 2}], ids=["max", "min"])
def test_changed_runner_bounds_roll_the_listener_pod(
    harness: ListenerHarness, change: dict[str, int]
) -> None:
    harness.create_listener()
    harness.settle()
    before = harness.pod()
    assert before is not None
    harness.kube.patch_object(
        "autoscalinglisteners", harness.namespace, harness.name, {"spec": change}
    )
    harness.settle()
    ((key, value),) = change.items()
    field = {"maxRunners": "max_runners", "minRunners": "min_runners"}[key]
    assert f'"{field}":{value}' in harness.config_json()
    after = harness.pod()
    assert after is not None and after["metadata"]["uid"] != before["metadata"]["uid"]


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param(
            {
                "spec": {
                    "serviceAccountMetadata": {
                        "annotations": {"iam.gke.io/gcp-service-account": "gha@p.iam"}
                    }
                }
            },
            id="workload-identity",
        ),
        pytest.param(
            {
                "spec": {
                    "template": {
                        "spec": {
                            "schedulerName": "gha-scaleset-tests-no-scheduler",
                            "containers": [{"name": "listener", "args": ["--debug"]}],
                        }
                    }
                }
            },
            id="listener-template",
        ),
        pytest.param({"spec": {"image": "registry.example.com/other:1"}}, id="image"),
    ],
)
def test_a_changed_template_image_or_scale_set_spec_rolls_the_listener_pod(
    harness: ListenerHarness, patch: dict[str, Any]
) -> None:
    harness.create_listener()
    harness.settle()
    before = harness.pod()
    assert before is not None
    harness.kube.patch_object("autoscalinglisteners", harness.namespace, harness.name, patch)
    harness.settle()
    after = harness.pod()
    assert after is not None and after["metadata"]["uid"] != before["metadata"]["uid"]
    assert len(harness.events("ListenerRolled")) == 1


def test_a_label_or_hash_annotation_change_is_patched_onto_the_running_pod(
    harness: ListenerHarness,
) -> None:
    # As ARC: metadata is not what the listener runs from. (The ARS writes the hash
    # annotations; a runner template change does not reach the AL at all.)
    harness.create_listener()
    harness.settle()
    before = harness.pod()
    patch = {
        "metadata": {
            "labels": {"team": "ci"},
            "annotations": {"actions.github.com/runner-spec-hash": "v2"},
        }
    }
    harness.kube.patch_object("autoscalinglisteners", harness.namespace, harness.name, patch)
    harness.settle()
    after = harness.pod()
    assert before is not None and after is not None
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["labels"]["team"] == "ci"
    assert harness.events("ListenerRolled") == []


def test_a_pod_started_from_an_older_config_is_rolled_even_when_the_secret_is_current(
    harness: ListenerHarness,
) -> None:
    # A reconcile that rewrote the Secret and died before deleting the Pod.
    harness.create_listener()
    harness.settle()
    annotation = {"actions.github.com/listener-hash": "stale"}
    harness.kube.patch_object(
        "pods", harness.namespace, harness.name, {"metadata": {"annotations": annotation}}
    )
    harness.wait_for_cache()
    before = harness.pod()
    harness.settle()
    after = harness.pod()
    assert before is not None and after is not None
    assert after["metadata"]["uid"] != before["metadata"]["uid"]


def test_a_steady_listener_writes_nothing_and_looks_again_later(harness: ListenerHarness) -> None:
    harness.create_listener()
    harness.settle()
    harness.set_pod_status(running())
    harness.sent.clear()
    result = harness.reconcile()
    assert result.requeue_after == 60.0
    assert [s.method for s in harness.sent.records() if s.method != "GET"] == []


def test_deleting_the_listener_tears_down_in_arcs_order(harness: ListenerHarness) -> None:
    harness.create_listener()
    harness.settle()
    harness.kube.delete_object("autoscalinglisteners", harness.namespace, harness.name)
    harness.sent.clear()
    assert harness.reconcile().requeue_after == 1.0  # the Pod first, waited for
    harness.wait_for_cache()
    harness.reconcile()
    assert harness.listener() is None
    deletes = [(s.resource, s.name) for s in harness.sent.records() if s.method == "DELETE"]
    name = sa_name(harness)
    assert deletes == [
        ("pods", harness.name),
        ("secrets", f"{harness.name}-config"),
        ("rolebindings", name),
        ("roles", name),
        ("serviceaccounts", name),
    ]
    for plural, namespace in (
        ("pods", harness.namespace),
        ("secrets", harness.namespace),
        ("serviceaccounts", harness.namespace),
        ("roles", harness.scale_set_namespace),
        ("rolebindings", harness.scale_set_namespace),
    ):
        left = [o["metadata"]["name"] for o in harness.kube.list_objects(plural, namespace)]
        assert harness.name not in left and name not in left, (plural, left)


def test_a_listener_whose_credentials_are_gone_is_still_torn_down(
    harness: ListenerHarness,
) -> None:
    harness.create_listener()
    harness.settle()
    harness.kube.delete_object("secrets", harness.scale_set_namespace, "github-credentials")
    harness.kube.delete_object("autoscalinglisteners", harness.namespace, harness.name)
    harness.reconcile()
    harness.wait_for_cache()
    harness.reconcile()
    assert harness.listener() is None
    assert harness.events("InvalidListener") == []


# -- bad input -------------------------------------------------------------------------


def _nothing_made(harness: ListenerHarness) -> None:
    listener = harness.listener()
    assert listener is not None and listener.finalizers == []
    assert harness.pod() is None
    assert [
        s["metadata"]["name"] for s in harness.kube.list_objects("secrets", harness.namespace)
    ] == []
    accounts = harness.kube.list_objects("serviceaccounts", harness.namespace)
    # kube-controller-manager gives every namespace its ServiceAccount "default".
    assert [a["metadata"]["name"] for a in accounts if a["metadata"]["name"] != "default"] == []
    assert harness.kube.list_objects("roles", harness.scale_set_namespace) == []


def test_a_failed_reconcile_is_one_warning_line(
    harness: ListenerHarness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.create_listener(githubConfigSecret="nope")
    request = Request(harness.namespace, harness.name)
    with caplog.at_level(logging.INFO):
        assert reconcile_in_the_worker_loop(harness.reconciler, request) == 1
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.getMessage().startswith("reconcile failed, retrying in ")
    assert "spec.githubConfigSecret" in warning.getMessage()


def test_a_missing_credentials_secret_is_a_warning_naming_the_field_and_nothing_changes(
    harness: ListenerHarness,
) -> None:
    harness.create_listener(githubConfigSecret="nope")
    with pytest.raises(ApiFieldError):
        harness.reconcile()
    (event,) = harness.events("InvalidListener")
    assert event["type"] == "Warning"
    assert event["message"] == (
        f"spec.githubConfigSecret: Secret {harness.scale_set_namespace}/nope not found"
    )
    _nothing_made(harness)


@pytest.mark.parametrize(
    ("template", "field"),
    [
        pytest.param(
            {
                "spec": {
                    "containers": [{"name": "listener"}],
                    "volumes": [{"name": "listener-config", "emptyDir": {}}],
                }
            },
            "spec.template.spec.volumes[0].name",
            id="volume-name-taken",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "listener"}, {"name": "sidecar"}]}},
            "spec.template.spec.containers[1].image",
            id="sidecar-without-image",
        ),
    ],
)
def test_an_invalid_listener_template_is_a_warning_naming_the_field_and_nothing_changes(
    harness: ListenerHarness, template: dict[str, Any], field: str
) -> None:
    harness.create_listener(template=template)
    with pytest.raises(ApiFieldError):
        harness.reconcile()
    (event,) = harness.events("InvalidListener")
    assert event["message"].startswith(f"{field}: ")
    _nothing_made(harness)


@pytest.mark.parametrize(
    ("template", "field", "key"),
    [
        pytest.param(
            {
                "spec": {
                    "containers": [
                        {"name": "sidecar", "image": "busybox"},
                        {"name": "sidecar", "image": "busybox"},
                    ]
                }
            },
            "spec.template.spec.containers[1]",
            '"sidecar"',
            id="container-name-twice",
        ),
        pytest.param(
            {
                "spec": {
                    "containers": [{"name": "listener"}],
                    "volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}],
                }
            },
            "spec.template.spec.volumes[1]",
            '"v"',
            id="volume-name-twice",
        ),
    ],
)
def test_a_listener_template_naming_a_container_or_volume_twice_never_exists(
    harness: ListenerHarness, template: dict[str, Any], field: str, key: str
) -> None:
    # The CRD's PodSpec lists are keyed by name (x-kubernetes-list-type: map), so the
    # API server refuses the AutoscalingListener itself: no controller ever sees one.
    with pytest.raises(ApiException) as caught:
        harness.create_listener(template=template)

    assert caught.value.status == 422
    status = status_of(caught.value)
    assert status["reason"] == "Invalid"
    assert [(c["field"], c["reason"]) for c in status["details"]["causes"]] == [
        (field, "FieldValueDuplicate")
    ]
    message = status["message"]
    assert f"{field}: Duplicate value: " in message and key in message.partition(field)[2]
    assert harness.listener() is None


@pytest.mark.parametrize("settings", [listener_settings(image="")])
def test_no_image_anywhere_is_a_warning_naming_spec_image(harness: ListenerHarness) -> None:
    harness.create_listener()
    with pytest.raises(ApiFieldError):
        harness.reconcile()
    (event,) = harness.events("InvalidListener")
    assert event["message"].startswith("spec.image: ")
    _nothing_made(harness)


def test_the_config_secret_never_reaches_an_event_or_the_listener(harness: ListenerHarness) -> None:
    harness.create_listener()
    harness.settle()
    listener = harness.listener()
    assert listener is not None
    text = json.dumps(listener.raw) + json.dumps(
        harness.kube.list_objects("events", harness.namespace)
    )
    token = json.loads(harness.config_json())["github_token"]
    assert token not in text and base64.b64encode(token.encode()).decode() not in text


# -- proxy and GitHub Enterprise Server CA -----------------------------------------------

PROXY = {
    "https": {"url": "http://proxy.corp:3128", "credentialSecretRef": "proxy-credentials"},
    "noProxy": ["internal.corp", "10.0.0.0/8"],
}
TLS = {"certificateFrom": {"configMapKeyRef": {"name": "ghes-ca", "key": "ca.crt"}}}


def proxy_values(harness: ListenerHarness) -> dict[str, str]:
    name = f"{sa_name(harness)}-proxy"
    secret = harness.kube.get_object("secrets", harness.namespace, name)
    assert secret is not None, "no proxy Secret"
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def test_a_proxy_reaches_the_listener_through_arcs_proxy_secret_and_a_rotation_rolls_it(
    harness: ListenerHarness,
) -> None:
    harness.write_proxy_credentials("s3cret")
    harness.create_listener(proxy=PROXY)
    harness.settle()
    assert proxy_values(harness) == {
        "http_proxy": "",
        "https_proxy": "http://listener:s3cret@proxy.corp:3128",
        "no_proxy": "internal.corp,10.0.0.0/8",
    }
    pod = harness.pod()
    assert pod is not None
    (container,) = pod["spec"]["containers"]
    secret = f"{sa_name(harness)}-proxy"
    assert container["env"][1:] == [
        {"name": var, "valueFrom": {"secretKeyRef": {"name": secret, "key": var}}}
        for var in ("https_proxy", "no_proxy")
    ]
    harness.write_proxy_credentials("r0tated")
    harness.settle()
    assert proxy_values(harness)["https_proxy"] == "http://listener:r0tated@proxy.corp:3128"
    after = harness.pod()
    assert after is not None and after["metadata"]["uid"] != pod["metadata"]["uid"]
    events = json.dumps(harness.kube.list_objects("events", harness.namespace))
    assert "s3cret" not in events and "r0tated" not in events
    harness.kube.delete_object("autoscalinglisteners", harness.namespace, harness.name)
    harness.sent.clear()
    harness.reconcile()
    harness.wait_for_cache()
    harness.reconcile()
    # deleted by the teardown, after the config Secret (ARC's order), not left to the GC
    deleted = [s.name for s in harness.sent.records() if s.method == "DELETE"]
    assert deleted[1:3] == [f"{harness.name}-config", secret]


def test_the_ghes_ca_reaches_the_config_as_arcs_server_root_ca(harness: ListenerHarness) -> None:
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    harness.kube.create_object(
        "configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ghes-ca", "namespace": harness.scale_set_namespace},
            "data": {"ca.crt": pem},
        },
    )
    harness.create_listener(githubServerTLS=TLS)
    harness.settle()
    assert json.loads(harness.config_json())["server_root_ca"] == pem


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"githubServerTLS": TLS},
            "spec.githubServerTLS.certificateFrom.configMapKeyRef: ConfigMap {ns}/ghes-ca "
            "not found",
            id="ca-configmap",
        ),
        pytest.param(
            {"proxy": PROXY},
            "spec.proxy.https.credentialSecretRef: Secret {ns}/proxy-credentials not found",
            id="proxy-secret",
        ),
    ],
)
def test_a_missing_ca_or_proxy_secret_is_a_warning_naming_the_field(
    harness: ListenerHarness, spec: dict[str, Any], message: str
) -> None:
    harness.create_listener(**spec)
    with pytest.raises(ApiFieldError):
        harness.reconcile()
    (event,) = harness.events("InvalidListener")
    assert event["message"] == message.format(ns=harness.scale_set_namespace)
    _nothing_made(harness)


# -- a listener ARC 0.14 made ------------------------------------------------------------


def _arc_0_14_rbac(harness: ListenerHarness, *, for_this_scale_set: bool = True) -> str:
    """The ServiceAccount, Role and RoleBinding ARC 0.14 names ``<scale set>-<hash of its
    namespace>-listener`` (its listener already had the name of ARC >= 0.13.1), labelled
    for the scale set unless not ``for_this_scale_set``; their name."""
    name = legacy_listener_name(harness.scale_set_namespace, SCALE_SET)
    labels = (
        {
            "actions.github.com/scale-set-name": SCALE_SET,
            "actions.github.com/scale-set-namespace": harness.scale_set_namespace,
        }
        if for_this_scale_set
        else {"owner": "someone-else"}
    )
    rbac = "rbac.authorization.k8s.io/v1"
    for plural, kind, namespace, extra in (
        ("serviceaccounts", "ServiceAccount", harness.namespace, {}),
        ("roles", "Role", harness.scale_set_namespace, {"rules": []}),
        (
            "rolebindings",
            "RoleBinding",
            harness.scale_set_namespace,
            {
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [
                    {"kind": "ServiceAccount", "name": name, "namespace": harness.namespace}
                ],
            },
        ),
    ):
        harness.kube.create_object(
            plural,
            {
                "apiVersion": "v1" if plural == "serviceaccounts" else rbac,
                "kind": kind,
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                **extra,
            },
        )
    return name


def test_a_listener_arc_0_14_made_keeps_its_service_account_role_and_binding(
    harness: ListenerHarness,
) -> None:
    legacy = _arc_0_14_rbac(harness)
    harness.create_listener()
    harness.settle()
    pod = harness.pod()
    assert pod is not None and pod["spec"]["serviceAccountName"] == legacy
    assert harness.kube.get_object("serviceaccounts", harness.namespace, harness.name) is None
    assert harness.kube.get_object("roles", harness.scale_set_namespace, harness.name) is None
    role = harness.kube.get_object("roles", harness.scale_set_namespace, legacy)
    assert role is not None and role["rules"], "its rules brought to what the listener sends"

    harness.kube.delete_object("autoscalinglisteners", harness.namespace, harness.name)
    harness.settle()
    assert harness.listener() is None
    assert harness.kube.get_object("serviceaccounts", harness.namespace, legacy) is None
    assert harness.kube.get_object("roles", harness.scale_set_namespace, legacy) is None
    assert harness.kube.get_object("rolebindings", harness.scale_set_namespace, legacy) is None


def test_objects_of_arc_0_14s_names_not_made_for_the_scale_set_are_neither_used_nor_deleted(
    harness: ListenerHarness,
) -> None:
    legacy = _arc_0_14_rbac(harness, for_this_scale_set=False)
    harness.create_listener()
    harness.settle()
    pod = harness.pod()
    assert pod is not None and pod["spec"]["serviceAccountName"] == harness.name
    harness.kube.delete_object("autoscalinglisteners", harness.namespace, harness.name)
    harness.settle()
    assert harness.kube.get_object("serviceaccounts", harness.namespace, legacy) is not None
    assert harness.kube.get_object("roles", harness.scale_set_namespace, legacy) is not None
