"""What ARC's gha-runner-scale-set Helm chart protects for one AutoscalingRunnerSet with
``actions.github.com/cleanup-protection``, named as the chart names it, for the tests
that take such an ARS over and delete it."""

from __future__ import annotations

from typing import Any, Final

from ersctl import api

KINDS: Final = {
    "serviceaccounts": ("v1", "ServiceAccount"),
    "roles": ("rbac.authorization.k8s.io/v1", "Role"),
    "rolebindings": ("rbac.authorization.k8s.io/v1", "RoleBinding"),
}


def protected_rbac(ars: str) -> dict[str, tuple[str, str]]:
    """ARC's cleanup annotation -> (plural, name) of each ServiceAccount, Role and
    RoleBinding the chart renders for ARS ``ars`` in containerMode kubernetes, plus the
    no-permission ServiceAccount it renders in the other modes (so every annotation is
    exercised)."""
    kube_mode, manager = f"{ars}-gha-rs-kube-mode", f"{ars}-gha-rs-manager"
    return {
        "actions.github.com/cleanup-kubernetes-mode-role-binding-name": (
            "rolebindings",
            kube_mode,
        ),
        "actions.github.com/cleanup-kubernetes-mode-role-name": ("roles", kube_mode),
        "actions.github.com/cleanup-kubernetes-mode-service-account-name": (
            "serviceaccounts",
            kube_mode,
        ),
        "actions.github.com/cleanup-no-permission-service-account-name": (
            "serviceaccounts",
            f"{ars}-gha-rs-no-permission",
        ),
        "actions.github.com/cleanup-manager-role-binding": ("rolebindings", manager),
        "actions.github.com/cleanup-manager-role-name": ("roles", manager),
    }


def rbac_object(
    plural: str, name: str, namespace: str, *, also: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The chart's object ``plural``/``name``, under ARC's cleanup-protection finalizer
    (and the finalizers ``also``)."""
    api_version, kind = KINDS[plural]
    body: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "finalizers": [api.CLEANUP_PROTECTION_FINALIZER, *also],
        },
    }
    if plural == "roles":
        body["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    elif plural == "rolebindings":
        body["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
        body["subjects"] = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    return body
