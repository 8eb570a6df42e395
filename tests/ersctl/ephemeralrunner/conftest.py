"""Fixtures for the runner controller: the test's Kubernetes API (``kube`` from
tests/conftest.py), the GitHub simulator over HTTP, and a reconciler wired to both
through their real interfaces (the official Kubernetes client, ``ActionsClient``)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from ersctl.api import ER_PLURAL, GROUP, VERSION, EphemeralRunner, job_status_fields
from ersctl.arcclient.reader import ApiReader
from ersctl.ephemeralrunner.health import HealthPolicy
from ersctl.ephemeralrunner.metrics import RunnerMetrics
from ersctl.ephemeralrunner.phases import FailurePolicy
from ersctl.ephemeralrunner.ports import PodStore, RunnerStore
from ersctl.ephemeralrunner.reconciler import RunnerReconciler
from ersctl.ephemeralrunner.stores import KubeRunnerResources
from ersctl.kube.client import Reader
from ersctl.kube.events import EventRecorder
from ersctl.kube.reconcile import Request, Result
from ersctl.scaleset.clients import SecretRunnerServices, controller_client
from ersctl.scaleset.network import DEFAULT_NETWORK, NetworkSettings
from ersctl.testing.apiserver import ApiServer
from ghalistener.actions.auth import Credentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.retry import RetryPolicy
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve
from tests.clock import FakeClock
from tests.kubeapi import KubeApi
from tests.kubeclient import SentRequests

CREDENTIALS = "github-credentials"
TOKEN = "ghp_pat_that_must_never_be_logged"
NO_SCHEDULER = "gha-scaleset-tests-no-scheduler"
HEALTH = HealthPolicy(
    start_timeout=600.0, online_timeout=900.0, node_lost_timeout=300.0, deregistration_timeout=900.0
)
"""The harness's health rules, whose deadlines the tests pass by moving the clock: longer
than any other wait a test moves it by (a failure backoff), since the Pods made after a
move are stamped with the API server's real time, as if made that long ago."""


@dataclass
class Harness:
    """Everything a runner-controller test touches."""

    kube: KubeApi
    sim: GitHubSimulator
    scale_set_id: int
    config_url: str
    clock: FakeClock
    reconciler: RunnerReconciler
    registry: CollectorRegistry
    clients: list[ActionsClient]
    """Every service client the reconciler's ``SecretRunnerServices`` built, in order."""
    sent: SentRequests
    """What the reconciler's Kubernetes client sent."""
    build: Callable[..., RunnerReconciler]
    """A reconciler like :attr:`reconciler` with other health rules (``build(health,
    runners=..., pods=...)``: and another runner or Pod store)."""
    resources: KubeRunnerResources
    """The stores :attr:`reconciler` reads and writes through."""

    @property
    def namespace(self) -> str:
        return self.kube.namespace

    @property
    def server(self) -> ApiServer:
        """The embedded server, for tests marked ``embedded_only`` (its hooks)."""
        assert self.kube.embedded is not None, "a test of the server's hooks: embedded_only"
        return self.kube.embedded

    def metric(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, {"namespace": self.namespace, **labels}) or 0.0

    def create_runner(self, name: str = "arc-runner-abcde", **spec: Any) -> EphemeralRunner:
        return EphemeralRunner(
            self.kube.create_object("ephemeralrunners", self.runner_body(name, **spec))
        )

    def runner_body(self, name: str = "arc-runner-abcde", **spec: Any) -> dict[str, Any]:
        """The EphemeralRunner :meth:`create_runner` creates."""
        return {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunner",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/component": "runner"},
                "annotations": {"actions.github.com/patch-id": "3"},
            },
            "spec": {
                "githubConfigUrl": self.config_url,
                "githubConfigSecret": CREDENTIALS,
                "runnerScaleSetId": self.scale_set_id,
                "spec": {
                    "restartPolicy": "Never",
                    # No scheduler of that name runs, so on a cluster no kubelet runs the
                    # Pod either: the test plays the kubelet (set_pod_status).
                    "schedulerName": NO_SCHEDULER,
                    "containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner"}],
                },
                **spec,
            },
        }

    def runner(self, name: str = "arc-runner-abcde") -> EphemeralRunner | None:
        doc = self.kube.get_object("ephemeralrunners", self.namespace, name)
        return EphemeralRunner(doc) if doc is not None else None

    def pod(self, name: str = "arc-runner-abcde") -> dict[str, Any] | None:
        return self.kube.get_object("pods", self.namespace, name)

    def secret(self, name: str = "arc-runner-abcde") -> dict[str, Any] | None:
        return self.kube.get_object("secrets", self.namespace, name)

    def reconcile(self, name: str = "arc-runner-abcde") -> Result:
        return self.reconciler.reconcile(Request(namespace=self.namespace, name=name))

    def settle(self, name: str = "arc-runner-abcde", *, passes: int = 10) -> Result:
        """Reconcile until a pass writes nothing (what the watch-driven runtime converges
        to): no object of the namespace changed its resourceVersion."""
        for _ in range(passes):
            before = self._versions()
            result = self.reconcile(name)
            if self._versions() == before:
                return result
        raise AssertionError(f"no steady state after {passes} reconciles")

    def _versions(self) -> dict[tuple[str, str], str]:
        return {
            (plural, o["metadata"]["name"]): o["metadata"]["resourceVersion"]
            for plural in ("ephemeralrunners", "pods", "secrets", "events")
            for o in self.kube.list_objects(plural, self.namespace)
        }

    def set_pod_status(self, status: dict[str, Any], name: str = "arc-runner-abcde") -> None:
        """What the kubelet reports for the Pod."""
        self.kube.patch_object(
            "pods", self.namespace, name, {"status": status}, subresource="status"
        )

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
        with self.kube.api_client() as api_client:
            client.CustomObjectsApi(api_client).patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                self.namespace,
                ER_PLURAL,
                name,
                {"status": fields},
                _content_type="application/merge-patch+json",
            )

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [
            e for e in self.kube.list_objects("events", self.namespace) if e.get("reason") == reason
        ]

    def sim_runners(self) -> dict[str, int]:
        """name -> id of the runners the simulator has registered."""
        return {r["name"]: int(r["id"]) for r in self.sim.state()["runners"]}


def actions_client(
    config_url: str, credentials: Credentials, network: NetworkSettings = DEFAULT_NETWORK
) -> ActionsClient:
    """The production client (the set's proxy and CA honoured) with a retry policy that
    never sleeps."""
    return controller_client(
        config_url, credentials, network, retry=RetryPolicy(max_retries=1, sleep=lambda _: None)
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
def harness(kube: KubeApi, sim: GitHubSimulator) -> Iterator[Harness]:
    github = serve(sim, port=0)
    scale_set = sim.create_scale_set(name="arc-runners")
    scale_set_id = int(scale_set["id"])
    kube.create_object(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": CREDENTIALS},
            "data": {"github_token": b64(TOKEN)},
        },
    )
    api_client = kube.api_client()
    sent = SentRequests(api_client)
    resources = KubeRunnerResources(api_client)
    factory = RecordingFactory()
    services = SecretRunnerServices(
        get_secret=resources.get_secret,
        get_configmap=ApiReader(Reader(api_client)).get_configmap,
        client_factory=factory,
    )
    clock = FakeClock.from_real_now()
    registry = CollectorRegistry()
    metrics = RunnerMetrics(registry)

    built: list[RunnerReconciler] = []

    def build(
        health: HealthPolicy, runners: RunnerStore | None = None, pods: PodStore | None = None
    ) -> RunnerReconciler:
        reconciler = RunnerReconciler(
            runners=runners or resources,
            pods=pods or resources,
            secrets=resources,
            hooks=resources,
            services=services,
            events=EventRecorder(api_client),
            policy=FailurePolicy(max_failures=3),
            health=health,
            clock=clock.datetime,
            metrics=metrics,
        )
        built.append(reconciler)
        return reconciler

    try:
        yield Harness(
            kube=kube,
            sim=sim,
            scale_set_id=scale_set_id,
            config_url=f"{github.url}/my-org",
            clock=clock,
            reconciler=build(HEALTH),
            registry=registry,
            clients=factory.built,
            sent=sent,
            build=build,
            resources=resources,
        )
    finally:
        # Their removal threads first: left running, one went on removing this test's
        # runner after its server had stopped and logged into the next test.
        for reconciler in built:
            reconciler.close()
        services.close()
        api_client.close()  # type: ignore[no-untyped-call]
        github.stop()


@pytest.fixture
def h(harness: Harness) -> Harness:
    """Short name for :func:`harness` in test bodies."""
    return harness
