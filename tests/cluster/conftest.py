"""Fixtures for the runner controller: the embedded API server (``apiserver`` from
tests/conftest.py), the GitHub simulator over HTTP, and a reconciler wired to both
through their real interfaces (the official Kubernetes client, ``ActionsClient``)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from ersctl.api import ER_PLURAL, GROUP, VERSION, EphemeralRunner, job_status_fields
from ersctl.kube.apireader import ApiReader
from ersctl.kube.events import EventRecorder
from ersctl.kube.reconcile import Request, Result
from ersctl.runner.metrics import RunnerMetrics
from ersctl.runner.phases import FailurePolicy
from ersctl.runner.reconciler import RunnerReconciler
from ersctl.runner.stores import KubeRunnerResources
from ersctl.scaleset.clients import SecretRunnerServices
from ersctl.scaleset.network import DEFAULT_NETWORK, NetworkSettings
from ersctl.testing.apiserver import ApiServer
from ghalistener.actions.auth import Credentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.retry import RetryPolicy
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve

NAMESPACE = "ci"
CREDENTIALS = "github-credentials"
TOKEN = "ghp_pat_that_must_never_be_logged"
WRITES = frozenset({"create", "update", "patch", "delete"})


@dataclass
class Clock:
    """An injected wall clock the tests move by hand."""

    now: datetime = field(default_factory=lambda: datetime(2026, 1, 1, 12, 0, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Harness:
    """Everything a runner-controller test touches."""

    server: ApiServer
    sim: GitHubSimulator
    scale_set_id: int
    config_url: str
    clock: Clock
    reconciler: RunnerReconciler
    registry: CollectorRegistry
    clients: list[ActionsClient]
    """Every service client the reconciler's ``SecretRunnerServices`` built, in order."""

    def metric(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, {"namespace": NAMESPACE, **labels}) or 0.0

    def create_runner(self, name: str = "arc-runner-abcde", **spec: Any) -> EphemeralRunner:
        body = {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunner",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "labels": {"app.kubernetes.io/component": "runner"},
                "annotations": {"actions.github.com/patch-id": "3"},
            },
            "spec": {
                "githubConfigUrl": self.config_url,
                "githubConfigSecret": CREDENTIALS,
                "runnerScaleSetId": self.scale_set_id,
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner"}],
                },
                **spec,
            },
        }
        return EphemeralRunner(self.server.create_object("ephemeralrunners", body))

    def runner(self, name: str = "arc-runner-abcde") -> EphemeralRunner | None:
        doc = self.server.get_object("ephemeralrunners", NAMESPACE, name)
        return EphemeralRunner(doc) if doc is not None else None

    def pod(self, name: str = "arc-runner-abcde") -> dict[str, Any] | None:
        return self.server.get_object("pods", NAMESPACE, name)

    def secret(self, name: str = "arc-runner-abcde") -> dict[str, Any] | None:
        return self.server.get_object("secrets", NAMESPACE, name)

    def reconcile(self, name: str = "arc-runner-abcde") -> Result:
        return self.reconciler.reconcile(Request(namespace=NAMESPACE, name=name))

    def settle(self, name: str = "arc-runner-abcde", *, passes: int = 10) -> Result:
        """Reconcile until a pass writes nothing (what the watch-driven runtime converges to)."""
        for _ in range(passes):
            self.server.request_log.clear()
            result = self.reconcile(name)
            if not any(r.verb in WRITES for r in self.server.request_log.records()):
                return result
        raise AssertionError(f"no steady state after {passes} reconciles")

    def set_pod_status(self, status: dict[str, Any], name: str = "arc-runner-abcde") -> None:
        self.server.patch_object("pods", NAMESPACE, name, {"status": status}, subresource="status")

    def record_job_started(self, job_id: str = "job-1", name: str = "arc-runner-abcde") -> None:
        """What the listener writes on JobStarted: a JSON merge patch of the job fields on
        the runner's ``/status``, through the official client, without a lock."""
        fields = job_status_fields(
            job_request_id=1,
            job_id=job_id,
            repository="my-org/my-repo",
            workflow_ref="my-org/my-repo/.github/workflows/ci.yaml@refs/heads/main",
            workflow_run_id=7,
            display_name="build",
        )
        with self.server.api_client() as api_client:
            client.CustomObjectsApi(api_client).patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                NAMESPACE,
                ER_PLURAL,
                name,
                {"status": fields},
                _content_type="application/merge-patch+json",
            )

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [
            e for e in self.server.list_objects("events", NAMESPACE) if e.get("reason") == reason
        ]

    def sim_runners(self) -> dict[str, int]:
        """name -> id of the runners the simulator has registered."""
        return {r["name"]: int(r["id"]) for r in self.sim.state()["runners"]}


def actions_client(
    config_url: str, credentials: Credentials, network: NetworkSettings = DEFAULT_NETWORK
) -> ActionsClient:
    """The production client (the set's proxy and CA honoured) with a retry policy that
    never sleeps."""
    return ActionsClient(
        config_url=config_url,
        credentials=credentials,
        proxy=network.proxy,
        root_ca=network.root_ca,
        retry=RetryPolicy(max_retries=1, sleep=lambda _: None),
    )


@dataclass
class RecordingFactory:
    """:func:`actions_client`, keeping every client it builds."""

    built: list[ActionsClient] = field(default_factory=list)

    def __call__(
        self, config_url: str, credentials: Credentials, network: NetworkSettings
    ) -> ActionsClient:
        built = actions_client(config_url, credentials, network)
        self.built.append(built)
        return built


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def sim() -> Iterator[GitHubSimulator]:
    simulator = GitHubSimulator()
    try:
        yield simulator
    finally:
        simulator.close()


@pytest.fixture
def harness(apiserver: ApiServer, sim: GitHubSimulator) -> Iterator[Harness]:
    github = serve(sim, port=0)
    scale_set = sim.create_scale_set(name="arc-runners")
    scale_set_id = int(scale_set["id"])
    apiserver.create_object("namespaces", {"metadata": {"name": NAMESPACE}})
    apiserver.create_object(
        "secrets",
        {
            "metadata": {"name": CREDENTIALS, "namespace": NAMESPACE},
            "data": {"github_token": b64(TOKEN)},
        },
    )
    api_client = apiserver.api_client()
    resources = KubeRunnerResources(api_client)
    factory = RecordingFactory()
    services = SecretRunnerServices(
        get_secret=resources.get_secret,
        get_configmap=ApiReader(api_client).get_configmap,
        client_factory=factory,
    )
    clock = Clock()
    registry = CollectorRegistry()
    reconciler = RunnerReconciler(
        runners=resources,
        pods=resources,
        secrets=resources,
        hooks=resources,
        services=services,
        events=EventRecorder(api_client),
        policy=FailurePolicy(max_failures=3),
        clock=clock,
        metrics=RunnerMetrics(registry),
    )
    try:
        yield Harness(
            server=apiserver,
            sim=sim,
            scale_set_id=scale_set_id,
            config_url=f"{github.url}/my-org",
            clock=clock,
            reconciler=reconciler,
            registry=registry,
            clients=factory.built,
        )
    finally:
        services.close()
        api_client.close()
        github.stop()


@pytest.fixture
def h(harness: Harness) -> Harness:
    """Short name for :func:`harness` in test bodies."""
    return harness
