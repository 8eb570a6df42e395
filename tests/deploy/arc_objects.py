"""ARC's objects for a scale set, as ARC's charts and controller (0.14.2, 0.15.1) write
them, for the tests of the switch (``live_arc.py`` builds a live install from them,
``arc_expects.py`` checks a cluster against them).

ARC's names are stated here on their own (:func:`arc_listener_name`,
:func:`arc_rbac_name`), not taken from ``ersctl.naming``: an install built with the code
under test would follow that code anywhere.
"""

from __future__ import annotations

from typing import Any, Final

from ersctl import api
from ersctl.naming import fnv_hash
from tests.arc_chart import protected_rbac
from tests.deploy.chart_manager import CONTROLLER_NS, RUNNERS_NS, arc_image

ARS: Final = "arc-runners"
GITHUB_SECRET: Final = "arc-runners-gha-rs-github-secret"
TOKEN: Final = "ghp_liveArcInstallTOKEN0123456789"
GO_HASH: Final = "6b9c7d8f5"
"""What ARC's Go hash wrote (ours never equals it)."""
VALUES_HASH: Final = "c1d2e3f4a5b6"
MIN_RUNNERS: Final = 1
MAX_RUNNERS: Final = 5
CHART_OBJECTS: Final = {
    annotation: target
    for annotation, target in protected_rbac(ARS).items()
    if "kubernetes-mode" not in annotation  # the default container mode renders none
}
RUNNER_POD_LABEL: Final = "actions-ephemeral-runner"


def arc_listener_name(namespace: str, runner_group: str, config_url: str, ars: str) -> str:
    """ARC >= 0.13.1's listener name: ``<ars>-<fnv("<ns>@<group>@<url>")[:8]>-listener``."""
    return f"{ars}-{fnv_hash(f'{namespace}@{runner_group}@{config_url}'.encode())[:8]}-listener"


def arc_rbac_name(line: str, listener: str, namespace: str, ars: str) -> str:
    """The listener's ServiceAccount, Role and RoleBinding name: 0.15's the listener's,
    0.14's ``<ars>-<fnv(namespace)[:8]>-listener``."""
    return listener if line == "0.15" else f"{ars}-{fnv_hash(namespace.encode())[:8]}-listener"


def go_rendering(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """A Pod spec as ARC's Go client serializes it: ``resources: {}`` on every container."""
    return {**pod_spec, "containers": [{**c, "resources": {}} for c in pod_spec["containers"]]}


def owner(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """A controller ownerReference to the document ``obj``, as ARC (controller-runtime)
    sets it."""
    return api.controller_reference(api.KubeObject(obj), kind)


def chart_labels(version: str) -> dict[str, str]:
    """The gha-runner-scale-set chart's labels of release ``arc-runners``'s ARS."""
    return {
        "app.kubernetes.io/component": "autoscaling-runner-set",
        "helm.sh/chart": f"gha-rs-{version}",
        "app.kubernetes.io/name": ARS,
        "app.kubernetes.io/instance": ARS,
        "app.kubernetes.io/version": version,
        "app.kubernetes.io/part-of": "gha-rs",
        "app.kubernetes.io/managed-by": "Helm",
        api.SCALE_SET_NAME_LABEL: ARS,
        api.SCALE_SET_NAMESPACE_LABEL: RUNNERS_NS,
    }


def arc_labels(version: str, component: str) -> dict[str, str]:
    """ARC's labels of what it makes for the ARS: the ARS's, then its own."""
    return {
        **chart_labels(version),
        api.PART_OF_LABEL: api.PART_OF_VALUE,
        api.COMPONENT_LABEL: component,
        "app.kubernetes.io/version": version,
        api.ORGANIZATION_LABEL: "my-org",
    }


def listener_rbac(
    version: str,
    *,
    listener: str,
    ers: str,
    owned: list[dict[str, Any]],
    labels: dict[str, str],
    integrity: dict[str, str],
) -> list[tuple[str, dict[str, Any]]]:
    """ARC's listener ServiceAccount (controller namespace), Role and RoleBinding
    (runners' namespace), as ``(plural, document)``: 0.15's with the listener's labels,
    integrity hashes and the ServiceAccount owned by the listener; 0.14's with its older
    labels and hashes."""
    line = version.rpartition(".")[0]
    name = arc_rbac_name(line, listener, RUNNERS_NS, ARS)
    scale_set = {api.SCALE_SET_NAMESPACE_LABEL: RUNNERS_NS, api.SCALE_SET_NAME_LABEL: ARS}
    by_listener = {
        **scale_set,
        "auto-scaling-listener-namespace": CONTROLLER_NS,
        "auto-scaling-listener-name": listener,
    }
    if line == "0.15":
        account_meta = {
            "labels": {**labels, **scale_set},
            "annotations": integrity,
            "ownerReferences": owned,
        }
        role_labels, binding_labels = {**labels, **by_listener}, {**labels, **by_listener}
    else:
        account_meta = {"labels": scale_set}
        role_labels = {**by_listener, "role-policy-rules-hash": GO_HASH}
        binding_labels = {
            **by_listener,
            "role-binding-role-ref-hash": GO_HASH,
            "role-binding-subject-hash": GO_HASH,
        }
    rules = [
        {
            "apiGroups": ["actions.github.com"],
            "resources": ["ephemeralrunnersets"],
            "resourceNames": [ers],
            "verbs": ["patch"],
        },
        {
            "apiGroups": ["actions.github.com"],
            "resources": ["ephemeralrunners", "ephemeralrunners/status"],
            "verbs": ["patch"],
        },
    ]
    rbac_meta = {"name": name, "namespace": RUNNERS_NS, "annotations": integrity}
    return [
        (
            "serviceaccounts",
            {"metadata": {"name": name, "namespace": CONTROLLER_NS, **account_meta}},
        ),
        ("roles", {"metadata": {**rbac_meta, "labels": role_labels}, "rules": rules}),
        (
            "rolebindings",
            {
                "metadata": {**rbac_meta, "labels": binding_labels},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": CONTROLLER_NS}],
            },
        ),
    ]


def listener_pod(
    version: str,
    *,
    listener: str,
    owned: list[dict[str, Any]],
    labels: dict[str, str],
    integrity: dict[str, str],
) -> dict[str, Any]:
    """ARC's listener Pod: ARC's image and listener command, its config Secret mounted."""
    rbac = arc_rbac_name(version.rpartition(".")[0], listener, RUNNERS_NS, ARS)
    return {
        "metadata": {
            "name": listener,
            "namespace": CONTROLLER_NS,
            "labels": labels,
            "annotations": integrity,
            "ownerReferences": owned,
        },
        "spec": {
            "serviceAccountName": rbac,
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "containers": [
                {
                    "name": "listener",
                    "image": arc_image(version),
                    "command": ["/ghalistener"],
                    "env": [
                        {"name": "LISTENER_CONFIG_PATH", "value": "/etc/gha-listener/config.json"}
                    ],
                    "volumeMounts": [
                        {
                            "name": "listener-config",
                            "mountPath": "/etc/gha-listener",
                            "readOnly": True,
                        }
                    ],
                    "resources": {},
                }
            ],
            "volumes": [
                {"name": "listener-config", "secret": {"secretName": f"{listener}-config"}}
            ],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 60,
        },
    }
