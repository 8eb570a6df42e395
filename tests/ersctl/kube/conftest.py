"""Helpers for the runtime tests: object bodies, a free port, one reconcile through the
runtime's worker loop."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from ersctl.api import API_VERSION, ER_KIND, ERS_KIND
from ersctl.kube.controller import Controller
from ersctl.kube.metrics import ControllerMetrics
from ersctl.kube.reconcile import Reconciler, Request


def ers_body(
    name: str, *, namespace: str | None = None, replicas: int = 0, patch_id: int = 0, **spec: Any
) -> dict[str, Any]:
    """An EphemeralRunnerSet; without ``namespace``, the one it is created in."""
    return {
        "apiVersion": API_VERSION,
        "kind": ERS_KIND,
        "metadata": {"name": name} | ({"namespace": namespace} if namespace else {}),
        "spec": {
            "replicas": replicas,
            "patchID": patch_id,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": "https://github.com/octo-org",
                "githubConfigSecret": "github-secret",
                "runnerScaleSetId": 1,
            },
            **spec,
        },
    }


def runner_body(
    name: str, owner: dict[str, Any] | None, *, namespace: str | None = None, phase: str = "Running"
) -> dict[str, Any]:
    """An EphemeralRunner (its ``status`` is dropped on create: a subresource)."""
    meta: dict[str, Any] = {"name": name} | ({"namespace": namespace} if namespace else {})
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": API_VERSION,
                "kind": ERS_KIND,
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": ER_KIND,
        "metadata": meta,
        "spec": {
            "githubConfigUrl": "https://github.com/octo-org",
            "githubConfigSecret": "github-secret",
            "runnerScaleSetId": 1,
        },
        "status": {"phase": phase},
    }


def reconcile_in_the_worker_loop(reconciler: Reconciler, request: Request) -> int:
    """Reconcile ``request`` once as the runtime does (its logging, its error handling);
    the failed reconciles it counted (0 or 1)."""
    metrics = ControllerMetrics(CollectorRegistry())
    controller = Controller("test", reconciler, workers=1, metrics=metrics, kind="Test")
    controller.enqueue(request)
    controller.process_one()
    failed = metrics.registry.get_sample_value(
        "ersctl_reconcile_errors_total", {"controller": "test"}
    )
    return int(failed or 0)
