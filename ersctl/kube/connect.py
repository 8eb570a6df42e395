"""Building an API client: an explicit kubeconfig, else in-cluster, else the default
kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``), like kubectl and controller-runtime."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from kubernetes import client, config

from ersctl.errors import ErsctlError

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class ConnectError(ErsctlError):
    """No usable Kubernetes connection configuration was found."""


def api_client(kubeconfig: str | None = None, *, context: str | None = None) -> client.ApiClient:
    """An ``ApiClient`` from ``kubeconfig``, the in-cluster service account, or the
    default kubeconfig, in that order. Raises :class:`ConnectError` (one line)."""
    try:
        if kubeconfig:
            return _from_kubeconfig(kubeconfig, context)
        if in_cluster():
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return client.ApiClient(configuration)
        default = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
        return _from_kubeconfig(default, context)
    except (config.ConfigException, OSError, ValueError) as exc:
        where = kubeconfig or ("in-cluster" if in_cluster() else "the default kubeconfig")
        raise ConnectError(f"cannot load Kubernetes configuration from {where}: {exc}") from exc


def _from_kubeconfig(path: str, context: str | None) -> client.ApiClient:
    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=path, context=context, persist_config=False
    )
    return api


def in_cluster() -> bool:
    """True inside a pod with a mounted service account token."""
    return (
        bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
        and (SERVICE_ACCOUNT_DIR / "token").is_file()
    )


def pod_namespace(default: str = "default") -> str:
    """The namespace this pod runs in (``$POD_NAMESPACE``, else the service account's),
    or ``default`` outside a cluster."""
    env = os.environ.get("POD_NAMESPACE")
    if env:
        return env
    try:
        return (SERVICE_ACCOUNT_DIR / "namespace").read_text(encoding="utf-8").strip() or default
    except OSError:
        return default
