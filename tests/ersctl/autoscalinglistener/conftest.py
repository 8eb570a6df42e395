"""Fixtures for the AutoscalingListener controller: the test's Kubernetes API (``kube``),
two namespaces as ARC lays them out (the listener in the controller's, the scale set,
its set and credentials Secret in its own), and the listener reconciler wired by the
production function onto a manager whose informers run (``manager.caches()``, as
``ersctl reconcile --once`` runs them) while the test calls ``reconcile`` itself.
Pods never run: the test plays the kubelet (``set_pod_status``)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from ersctl.api import AL_FINALIZER, AutoscalingListener
from ersctl.autoscalinglistener.controller import add_listener_controller
from ersctl.autoscalinglistener.objects import ListenerSettings
from ersctl.autoscalinglistener.reconciler import ListenerReconciler
from ersctl.autoscalinglistener.restarts import RestartPolicy
from ersctl.ephemeralrunnerset.metrics import LISTENER_SELECTOR, ArcListenerGauge
from ersctl.kube.informer import PodInformer
from ersctl.kube.manager import Manager
from ersctl.kube.reconcile import Request, Result
from ersctl.wiring import LISTENER_PODS
from tests.clock import FakeClock
from tests.ersctl.ephemeralrunner.conftest import NO_SCHEDULER
from tests.ghalistener.arc_configs import PAT
from tests.kubeapi import KubeApi
from tests.kubeclient import SentRequests, json_object
from tests.polling import eventually

CREDENTIALS = "github-credentials"
SCALE_SET = "arc-runners"
RUNNER_SET = "arc-runners-abcde"
IMAGE = "registry.example.com/gha-scaleset:0.1.0"
CONFIG_URL = "https://github.com/my-org"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def listener_body(namespace: str, scale_set_namespace: str, **spec: Any) -> dict[str, Any]:
    """An AL as ARC's AutoscalingRunnerSet controller writes it (its labels included);
    ``spec`` overrides. Its Pods name a scheduler that does not exist: no kubelet runs
    them, even on a cluster."""
    name = f"{SCALE_SET}-listener"
    template = {"spec": {"schedulerName": NO_SCHEDULER, "containers": [{"name": "listener"}]}}
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingListener",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/component": "runner-scale-set-listener",
                "app.kubernetes.io/part-of": "gha-runner-scale-set",
                "actions.github.com/scale-set-name": SCALE_SET,
                "actions.github.com/scale-set-namespace": scale_set_namespace,
                "actions.github.com/organization": "my-org",
            },
        },
        "spec": {
            "githubConfigUrl": CONFIG_URL,
            "githubConfigSecret": CREDENTIALS,
            "runnerScaleSetId": 1,
            "autoscalingRunnerSetNamespace": scale_set_namespace,
            "autoscalingRunnerSetName": SCALE_SET,
            "ephemeralRunnerSetName": RUNNER_SET,
            "minRunners": 0,
            "maxRunners": 2147483647,
            "template": template,
            **spec,
        },
    }


@dataclass
class ListenerHarness:
    """Everything a listener-controller test touches."""

    kube: KubeApi
    scale_set_namespace: str
    reconciler: ListenerReconciler
    manager: Manager
    pods: PodInformer
    clock: FakeClock
    registry: CollectorRegistry
    sent: SentRequests
    """What the reconciler's Kubernetes client sent."""
    name: str = f"{SCALE_SET}-listener"

    @property
    def namespace(self) -> str:
        return self.kube.namespace

    def create_listener(self, **spec: Any) -> AutoscalingListener:
        body = listener_body(self.namespace, self.scale_set_namespace, **spec)
        return AutoscalingListener(self.kube.create_object("autoscalinglisteners", body))

    def listener(self) -> AutoscalingListener | None:
        doc = self.kube.get_object("autoscalinglisteners", self.namespace, self.name)
        return None if doc is None else AutoscalingListener(doc)

    def reconcile(self) -> Result:
        return self.reconciler.reconcile(Request(self.namespace, self.name))

    def pod(self) -> dict[str, Any] | None:
        return self.kube.get_object("pods", self.namespace, self.name)

    def cached_pod_version(self) -> str:
        """The resourceVersion of the listener Pod in the informer's cache ("" = none)."""
        raw = self.pods.store.get(self.namespace, self.name)
        return "" if raw is None else str(raw["metadata"]["resourceVersion"])

    def wait_for_cache(self) -> None:
        """Until the Pod informer shows the Pod as the API server has it (or its absence)."""
        live = self.pod()
        want = "" if live is None else str(live["metadata"]["resourceVersion"])
        eventually(lambda: self.cached_pod_version() == want, what="the pod cache")

    def settle(self, *, passes: int = 8) -> Result:
        """Reconcile, the cache caught up after each pass, until a pass writes nothing."""
        for _ in range(passes):
            before = self._versions()
            result = self.reconcile()
            self.wait_for_cache()
            if self._versions() == before:
                return result
        raise AssertionError(f"no steady state after {passes} reconciles")

    def _versions(self) -> dict[tuple[str, str, str], str]:
        out = {}
        for plural, namespace in (
            ("autoscalinglisteners", self.namespace),
            ("pods", self.namespace),
            ("secrets", self.namespace),
            ("serviceaccounts", self.namespace),
            ("roles", self.scale_set_namespace),
            ("rolebindings", self.scale_set_namespace),
        ):
            for o in self.kube.list_objects(plural, namespace):
                out[(plural, namespace, o["metadata"]["name"])] = o["metadata"]["resourceVersion"]
        return out

    def set_pod_status(self, status: dict[str, Any]) -> None:
        """What the kubelet reports for the listener Pod; the cache then shows it."""
        self.kube.patch_object(
            "pods", self.namespace, self.name, {"status": status}, subresource="status"
        )
        self.wait_for_cache()

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [
            e for e in self.kube.list_objects("events", self.namespace) if e.get("reason") == reason
        ]

    def write_credentials(self, data: dict[str, str]) -> None:
        encoded: dict[str, str | None] = {key: b64(value) for key, value in data.items()}
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": CREDENTIALS, "namespace": self.scale_set_namespace},
            "data": encoded,
        }
        existing = self.kube.get_object("secrets", self.scale_set_namespace, CREDENTIALS)
        if existing is None:
            self.kube.create_object("secrets", body)
        else:  # a rotation: the keys not given go
            dropped = {key: None for key in existing.get("data") or {} if key not in data}
            self.kube.patch_object(
                "secrets",
                self.scale_set_namespace,
                CREDENTIALS,
                {"data": {**dropped, **encoded}},
            )

    def write_proxy_credentials(self, password: str, *, user: str = "listener") -> None:
        """Create or replace the proxy credentials Secret ``proxy-credentials`` in the
        scale set's namespace (a rotation replaces it)."""
        data = {"username": b64(user), "password": b64(password)}
        existing = self.kube.get_object("secrets", self.scale_set_namespace, "proxy-credentials")
        if existing is None:
            meta = {"name": "proxy-credentials", "namespace": self.scale_set_namespace}
            body = {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": data}
            self.kube.create_object("secrets", body)
        else:
            self.kube.patch_object(
                "secrets", self.scale_set_namespace, "proxy-credentials", {"data": data}
            )

    def sent_pod(self) -> dict[str, Any]:
        """The listener Pod as the reconciler last created it: what the controller
        decided, before the API server filled in its defaults (a real one fills in many,
        the embedded one as well)."""
        bodies = [
            s.body for s in self.sent.records() if s.method == "POST" and s.resource == "pods"
        ]
        assert bodies, "the reconciler created no Pod"
        body = bodies[-1]
        return json_object(json.loads(body) if isinstance(body, str | bytes) else body)

    def config_json(self) -> str:
        secret = self.kube.get_object("secrets", self.namespace, f"{self.name}-config")
        assert secret is not None, "no config Secret"
        return base64.b64decode(secret["data"]["config.json"]).decode()


def running(started_at: str = "2026-01-01T12:00:00Z") -> dict[str, Any]:
    return {
        "phase": "Running",
        "containerStatuses": [
            {"name": "listener", "ready": True, "state": {"running": {"startedAt": started_at}}}
        ],
    }


def exited(
    code: int = 1,
    *,
    started_at: str = "2026-01-01T12:00:00Z",
    finished_at: str = "2026-01-01T12:00:03Z",
) -> dict[str, Any]:
    return {
        "phase": "Failed" if code else "Succeeded",
        "containerStatuses": [
            {
                "name": "listener",
                "ready": False,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Error" if code else "Completed",
                        "startedAt": started_at,
                        "finishedAt": finished_at,
                    }
                },
            }
        ],
    }


def listener_settings(**changes: Any) -> ListenerSettings:
    return ListenerSettings(**{"image": IMAGE, "metrics_addr": "", **changes})


@pytest.fixture
def settings() -> ListenerSettings:
    """The controller's listener flags of a test (override the fixture to change them)."""
    return listener_settings()


@pytest.fixture
def harness(kube: KubeApi, settings: ListenerSettings) -> Iterator[ListenerHarness]:
    scale_set_namespace = kube.create_namespace("scaleset")
    api_client: client.ApiClient = kube.api_client()
    sent = SentRequests(api_client)
    manager = Manager(api_client)
    pods = PodInformer(api_client, selector=LISTENER_SELECTOR)
    manager.add_informer(LISTENER_PODS, pods)
    registry = CollectorRegistry()
    registry.register(ArcListenerGauge(pods.store.values))
    clock = FakeClock.from_real_now()
    reconciler = add_listener_controller(
        manager,
        api_client,
        pods=pods,
        pods_name=LISTENER_PODS,
        settings=settings,
        policy=RestartPolicy(),
        clock=clock.datetime,
    )
    harness = ListenerHarness(
        kube=kube,
        scale_set_namespace=scale_set_namespace,
        reconciler=reconciler,
        manager=manager,
        pods=pods,
        clock=clock,
        registry=registry,
        sent=sent,
    )
    harness.write_credentials({"github_token": PAT})
    try:
        with manager.caches():
            yield harness
    finally:
        listener = harness.listener()
        if listener is not None and listener.has_finalizer(AL_FINALIZER):
            kube.patch_object(
                "autoscalinglisteners",
                kube.namespace,
                harness.name,
                {"metadata": {"finalizers": None}},
            )
        api_client.close()  # type: ignore[no-untyped-call]
