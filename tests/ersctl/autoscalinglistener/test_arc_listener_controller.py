"""ARC's own AutoscalingListener controller tests, translated case by case
(``controllers/actions.github.com/autoscalinglistener_controller_test.go``, the
0.15-line version that names the ServiceAccount, Role and RoleBinding after the
listener), driving our listener controller through the Kubernetes API only: the
production wiring against the test's API server, a test playing the kubelet.

Each test is named after ARC's ``It`` and asserts what ARC's asserts. Where ours is
deliberately different, the test says so at the assertion:

| ARC | ours | why |
|---|---|---|
| the listener Role grants ``patch`` on ``ephemeralrunners`` too | only ``ephemeralrunners/status`` (and the set by name) | neither listener sends a patch to a runner itself: least privilege |
| an exited listener Pod is replaced at once | after a backoff (5 s, doubling) | a listener that cannot start must not hammer GitHub and the API server |

ARC drives a running manager and polls; the harness reconciles pass by pass
(``settle``), with an injected clock for the restart backoff.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.ersctl.autoscalinglistener.conftest import CREDENTIALS, ListenerHarness
from tests.ghalistener.arc_configs import PAT

ARC_IMAGE = "ghcr.io/owner/repo"
ARC_RULES = [  # ARC's rulesForListenerRole, for comparison
    {
        "apiGroups": ["actions.github.com"],
        "resources": ["ephemeralrunnersets"],
        "resourceNames": ["test-ers"],
        "verbs": ["patch"],
    },
    {
        "apiGroups": ["actions.github.com"],
        "resources": ["ephemeralrunners", "ephemeralrunners/status"],
        "verbs": ["patch"],
    },
]


def _arcs_listener(harness: ListenerHarness, **spec: Any) -> dict[str, Any]:
    """ARC's test listener (its BeforeEach): ARC's image, ERS ``test-ers``, min 1, max
    10, a label, and metadata for each object it makes; ``spec`` overrides."""
    body = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingListener",
        "metadata": {
            "name": harness.name,
            "namespace": harness.namespace,
            "labels": {"arc.test/listener-label": "initial"},
        },
        "spec": {
            "githubConfigUrl": "https://github.com/owner/repo",
            "githubConfigSecret": CREDENTIALS,
            "runnerScaleSetId": 1,
            "autoscalingRunnerSetNamespace": harness.scale_set_namespace,
            "autoscalingRunnerSetName": "test-asrs",
            "ephemeralRunnerSetName": "test-ers",
            "maxRunners": 10,
            "minRunners": 1,
            "image": ARC_IMAGE,
            "serviceAccountMetadata": {
                "annotations": {"arc.test/service-account-annotation": "initial"}
            },
            "roleMetadata": {"annotations": {"arc.test/role-annotation": "initial"}},
            "roleBindingMetadata": {"annotations": {"arc.test/role-binding-annotation": "initial"}},
            "configSecretMetadata": {
                "labels": {"arc.test/config-secret-label": "initial"},
                "annotations": {"arc.test/config-secret-annotation": "initial"},
            },
            **spec,
        },
    }
    return harness.kube.create_object("autoscalinglisteners", body)


def _get(harness: ListenerHarness, plural: str, name: str, *, in_set: bool = False) -> Any:
    namespace = harness.scale_set_namespace if in_set else harness.namespace
    return harness.kube.get_object(plural, namespace, name)


def _patch_listener(harness: ListenerHarness, patch: dict[str, Any]) -> None:
    harness.kube.patch_object("autoscalinglisteners", harness.namespace, harness.name, patch)


def _config(harness: ListenerHarness) -> dict[str, Any]:
    return dict(json.loads(harness.config_json()))


def _terminate(harness: ListenerHarness, statuses: list[dict[str, Any]]) -> None:
    harness.set_pod_status({"containerStatuses": statuses})


def _replaced_after_backoff(harness: ListenerHarness, before: str) -> str:
    """Reconcile until the exited Pod's successor exists (our backoff played by the
    clock; ARC makes it at once); its uid."""
    harness.settle()
    harness.clock.advance(300)
    harness.settle()
    pod = harness.pod()
    assert pod is not None and pod["metadata"]["uid"] != before
    return str(pod["metadata"]["uid"])


# -- Describe("Test AutoScalingListener controller") -------------------------------------


def test_it_should_create_add_all_required_resources_for_a_new_autoscalinglistener(
    harness: ListenerHarness,
) -> None:
    _arcs_listener(harness)
    harness.settle()
    assert _get(harness, "secrets", f"{harness.name}-config") is not None
    listener = harness.listener()
    assert listener is not None
    assert listener.finalizers == ["autoscalinglistener.actions.github.com/finalizer"]
    assert _get(harness, "serviceaccounts", harness.name) is not None
    role = _get(harness, "roles", harness.name, in_set=True)
    # Deliberate: ARC's rules also grant patch on ephemeralrunners, which no listener sends.
    assert role["rules"] != ARC_RULES
    assert role["rules"][0] == ARC_RULES[0]
    assert role["rules"][1]["resources"] == ["ephemeralrunners/status"]
    binding = _get(harness, "rolebindings", harness.name, in_set=True)
    assert binding["roleRef"]["name"] == harness.name
    pod = harness.pod()
    assert pod is not None and pod["metadata"]["name"] == harness.name


def test_it_should_cleanup_all_resources_for_a_deleting_autoscalinglistener_before_removing_it(
    harness: ListenerHarness,
) -> None:
    _arcs_listener(harness)
    harness.settle()
    assert harness.pod() is not None
    harness.kube.delete_object("autoscalinglisteners", harness.namespace, harness.name)
    harness.settle()
    assert harness.pod() is None
    assert _get(harness, "rolebindings", harness.name, in_set=True) is None
    assert _get(harness, "roles", harness.name, in_set=True) is None
    assert _get(harness, "secrets", f"{harness.name}-config") is None
    assert _get(harness, "serviceaccounts", harness.name) is None
    assert harness.listener() is None


def test_it_should_update_role_to_match_ephemeralrunnerset(harness: ListenerHarness) -> None:
    _arcs_listener(harness)
    harness.settle()
    _patch_listener(harness, {"spec": {"ephemeralRunnerSetName": "test-ers-updated"}})
    harness.settle()
    role = _get(harness, "roles", harness.name, in_set=True)
    assert role["rules"][0]["resourceNames"] == ["test-ers-updated"]


def test_propagates_updated_listener_metadata_to_owned_resources(
    harness: ListenerHarness,
) -> None:
    def assert_propagated(expected: str) -> None:
        account = _get(harness, "serviceaccounts", harness.name)
        assert account["metadata"]["labels"]["arc.test/listener-label"] == expected
        annotations = account["metadata"]["annotations"]
        assert annotations["arc.test/service-account-annotation"] == expected
        for plural, key in (("roles", "role"), ("rolebindings", "role-binding")):
            obj = _get(harness, plural, harness.name, in_set=True)
            assert obj["metadata"]["labels"]["arc.test/listener-label"] == expected
            assert obj["metadata"]["annotations"][f"arc.test/{key}-annotation"] == expected
            if expected == "updated":
                assert obj["metadata"]["annotations"][f"arc.test/new-{key}-annotation"] == "added"
        secret = _get(harness, "secrets", f"{harness.name}-config")
        assert secret["metadata"]["labels"]["arc.test/config-secret-label"] == expected
        secret_annotations = secret["metadata"]["annotations"]
        assert secret_annotations["arc.test/config-secret-annotation"] == expected
        if expected == "updated":
            assert annotations["arc.test/new-service-account-annotation"] == "added"
            assert secret_annotations["arc.test/new-config-secret-annotation"] == "added"
        pod = harness.pod()
        assert pod is not None and pod["metadata"]["labels"]["arc.test/listener-label"] == expected

    _arcs_listener(harness)
    harness.settle()
    assert_propagated("initial")

    def meta(kind: str) -> dict[str, Any]:
        return {
            "annotations": {
                f"arc.test/{kind}-annotation": "updated",
                f"arc.test/new-{kind}-annotation": "added",
            }
        }

    config_meta = {"labels": {"arc.test/config-secret-label": "updated"}, **meta("config-secret")}
    _patch_listener(
        harness,
        {
            "metadata": {"labels": {"arc.test/listener-label": "updated"}},
            "spec": {
                "serviceAccountMetadata": meta("service-account"),
                "roleMetadata": meta("role"),
                "roleBindingMetadata": meta("role-binding"),
                "configSecretMetadata": config_meta,
            },
        },
    )
    harness.settle()
    assert_propagated("updated")


def test_it_should_re_create_pod_but_persist_config_secret_whenever_listener_container_is_terminated(
    harness: ListenerHarness,
) -> None:
    _arcs_listener(harness)
    harness.settle()
    pod, secret = harness.pod(), _get(harness, "secrets", f"{harness.name}-config")
    assert pod is not None and secret is not None
    _terminate(harness, [{"name": "listener", "state": {"terminated": {"exitCode": 0}}}])
    _replaced_after_backoff(harness, pod["metadata"]["uid"])
    after = _get(harness, "secrets", f"{harness.name}-config")
    assert after["metadata"]["uid"] == secret["metadata"]["uid"]


def test_it_should_propagate_rotated_github_credentials_into_the_listener_config_secret(
    harness: ListenerHarness,
) -> None:
    _arcs_listener(harness)
    harness.settle()
    assert _config(harness)["github_token"] == PAT
    old_hash = _get(harness, "secrets", f"{harness.name}-config")["metadata"]["annotations"][
        "actions.github.com/integrity-hash"
    ]
    harness.write_credentials({"github_token": "gh_token_rotated"})
    _patch_listener(harness, {"metadata": {"labels": {"arc.test/listener-label": "rotated"}}})
    harness.settle()
    assert _config(harness)["github_token"] == "gh_token_rotated"
    secret = _get(harness, "secrets", f"{harness.name}-config")
    assert secret["metadata"]["annotations"]["actions.github.com/integrity-hash"] != old_hash


# -- Describe("Test AutoScalingListener customization") ------------------------------------

CUSTOM_TEMPLATE = {
    "spec": {
        "schedulerName": "gha-scaleset-tests-no-scheduler",
        "containers": [
            {
                "name": "listener",
                "imagePullPolicy": "Always",
                "securityContext": {"runAsUser": 1001},
            },
            {"name": "sidecar", "imagePullPolicy": "IfNotPresent", "image": "busybox"},
        ],
        "securityContext": {"runAsUser": 1001},
    }
}


def test_it_should_create_customized_pod_with_applied_configuration(
    harness: ListenerHarness,
) -> None:
    _arcs_listener(harness, template=CUSTOM_TEMPLATE)
    harness.settle()
    listener = harness.listener()
    assert listener is not None and listener.finalizers
    assert _get(harness, "secrets", f"{harness.name}-config") is not None
    pod = harness.pod()
    assert pod is not None
    assert pod["spec"]["securityContext"]["runAsUser"] == 1001
    first, second = pod["spec"]["containers"]
    assert first["name"] == "listener"
    assert first["securityContext"]["runAsUser"] == 1001
    assert first["imagePullPolicy"] == "Always"
    assert (second["name"], second["image"], second["imagePullPolicy"]) == (
        "sidecar",
        "busybox",
        "IfNotPresent",
    )


def test_should_re_create_pod_when_it_is_deleted(harness: ListenerHarness) -> None:
    _arcs_listener(harness, template=CUSTOM_TEMPLATE)
    harness.settle()
    pod = harness.pod()
    assert pod is not None and len(pod["spec"]["containers"]) == 2
    harness.kube.delete_object("pods", harness.namespace, harness.name)
    harness.wait_for_cache()
    harness.settle()
    after = harness.pod()
    assert after is not None and after["metadata"]["uid"] != pod["metadata"]["uid"]


def test_should_re_create_pod_when_the_listener_pod_is_terminated(
    harness: ListenerHarness,
) -> None:
    _arcs_listener(harness, template=CUSTOM_TEMPLATE)
    harness.settle()
    pod = harness.pod()
    assert pod is not None
    _terminate(
        harness,
        [
            {"name": "listener", "state": {"terminated": {"exitCode": 1}}},
            {"name": "sidecar", "state": {"running": {}}},
        ],
    )
    _replaced_after_backoff(harness, pod["metadata"]["uid"])


def test_should_re_create_pod_when_the_listener_pod_is_evicted(harness: ListenerHarness) -> None:
    _arcs_listener(harness, template=CUSTOM_TEMPLATE)
    harness.settle()
    pod = harness.pod()
    assert pod is not None
    harness.set_pod_status({"reason": "Evicted"})
    _replaced_after_backoff(harness, pod["metadata"]["uid"])


# -- Describe("Test AutoScalingListener controller with proxy") ---------------------------

ARC_PROXY = {
    "http": {"url": "http://localhost:8080", "credentialSecretRef": "proxy-credentials"},
    "https": {"url": "https://localhost:8443", "credentialSecretRef": "proxy-credentials"},
    "noProxy": ["example.com", "example.org"],
}


def _proxy_data(harness: ListenerHarness) -> dict[str, str]:
    secret = _get(harness, "secrets", f"{harness.name}-proxy")
    assert secret is not None, "no proxy Secret"
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def _arcs_secret_data(password: str) -> dict[str, str]:
    """What ARC's ``ProxyConfig.ToSecretData`` makes of :data:`ARC_PROXY`."""
    return {
        "http_proxy": f"http://test:{password}@localhost:8080",
        "https_proxy": f"https://test:{password}@localhost:8443",
        "no_proxy": "example.com,example.org",
    }


def test_should_create_a_secret_in_the_listener_namespace_containing_proxy_details(
    harness: ListenerHarness,
) -> None:
    # ... use it to populate env vars on the pod and should delete it as part of cleanup
    harness.write_proxy_credentials("password", user="test")
    _arcs_listener(harness, proxy=ARC_PROXY)
    harness.settle()
    assert _proxy_data(harness) == _arcs_secret_data("password")
    pod = harness.pod()
    assert pod is not None
    env = pod["spec"]["containers"][0]["env"]
    for var in ("http_proxy", "https_proxy", "no_proxy"):
        ref = {"secretKeyRef": {"name": f"{harness.name}-proxy", "key": var}}
        assert {"name": var, "valueFrom": ref} in env
    harness.kube.delete_object("autoscalinglisteners", harness.namespace, harness.name)
    harness.settle()
    assert _get(harness, "secrets", f"{harness.name}-proxy") is None


def test_should_propagate_rotated_proxy_credentials_into_the_mirror_proxy_secret(
    harness: ListenerHarness,
) -> None:
    harness.write_proxy_credentials("password", user="test")
    _arcs_listener(harness, proxy=ARC_PROXY)
    harness.settle()
    harness.write_proxy_credentials("rotated-password", user="test")
    _patch_listener(harness, {"metadata": {"labels": {"arc.test/rotate": "true"}}})
    harness.settle()
    assert _proxy_data(harness) == _arcs_secret_data("rotated-password")


# -- Describe("Test AutoScalingListener controller with template modification") -----------


def test_should_create_listener_pod_with_modified_spec(harness: ListenerHarness) -> None:
    # ARC's template here is the customization one, with metadata and another pod user.
    template = {
        "metadata": {
            "annotations": {"test-annotation-key": "test-annotation-value"},
            "labels": {"test-label-key": "test-label-value"},
        },
        "spec": {**CUSTOM_TEMPLATE["spec"], "securityContext": {"runAsUser": 1000}},
    }
    _arcs_listener(harness, template=template)
    harness.settle()
    pod = harness.pod()
    assert pod is not None
    assert pod["metadata"]["annotations"]["test-annotation-key"] == "test-annotation-value"
    assert pod["metadata"]["labels"]["test-label-key"] == "test-label-value"
    harness.kube.delete_object("autoscalinglisteners", harness.namespace, harness.name)
    harness.settle()
    assert _get(harness, "secrets", f"{harness.name}-proxy") is None


# -- Describe("Test GitHub Server TLS configuration") --------------------------------------


def test_it_should_set_the_certificates_in_the_config_of_the_pod(harness: ListenerHarness) -> None:
    cert = "-----BEGIN CERTIFICATE-----\nMIIBrootCA\n-----END CERTIFICATE-----\n"
    harness.kube.create_object(
        "configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "root-ca-configmap", "namespace": harness.scale_set_namespace},
            "data": {"rootCA.crt": cert},
        },
    )
    tls = {
        "certificateFrom": {"configMapKeyRef": {"name": "root-ca-configmap", "key": "rootCA.crt"}}
    }
    _arcs_listener(harness, githubServerTLS=tls)
    harness.settle()
    assert _config(harness)["server_root_ca"] == cert
