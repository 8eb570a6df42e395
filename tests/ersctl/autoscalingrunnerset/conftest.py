"""The AutoscalingRunnerSet controller as ``ersctl reconcile`` runs it (the manager
from ``ersctl.wiring`` with the ERS and ARS controllers, in a thread) against the
test's Kubernetes API, and the GitHub simulator over real HTTP."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from ersctl import api
from ersctl.wiring import Controller, ControllerOptions, build_controller
from ghalistener.testing import GitHubSimulator, SimulatorServer, serve
from tests.ersctl.ephemeralrunner.conftest import NO_SCHEDULER, actions_client
from tests.kubeapi import KubeApi
from tests.kubeclient import SentRequests
from tests.polling import eventually

CREDENTIALS = "github-credentials"
TOKEN = "ghp_autoscalingSECRETtoken0123456789"
RUNNER_IMAGE = "ghcr.io/actions/actions-runner:latest"


def runner_template(image: str = RUNNER_IMAGE) -> dict[str, Any]:
    return {
        "spec": {
            "schedulerName": NO_SCHEDULER,
            "containers": [{"name": "runner", "image": image, "command": ["/home/runner/run.sh"]}],
        }
    }


@dataclass
class Env:
    kube: KubeApi
    sim: GitHubSimulator
    github: SimulatorServer
    controller: Controller | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def namespace(self) -> str:
        return self.kube.namespace

    @property
    def config_url(self) -> str:
        return f"{self.github.url}/octo-org"

    def start(self, **options: Any) -> Controller:
        """Run the manager (ERS and ARS controllers) until the test ends."""
        api_client = self.kube.api_client()
        self.sent = SentRequests(api_client)
        settings = {
            "namespace": self.namespace,
            "autoscaling_runner_set_controller": True,
            # The listener objects are the listener controller's (tests/ersctl/autoscalinglistener);
            # here nothing turns them into Pods (no image would be given anyway).
            "listener_controller": False,
            "teardown_poll": 0.2,
            **options,
        }
        self.controller = build_controller(
            api_client, ControllerOptions(**settings), client_factory=actions_client
        )
        self._thread = threading.Thread(
            target=self.controller.manager.run, args=(self._stop,), daemon=True
        )
        self._thread.start()
        return self.controller

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self.controller is not None:
            self.controller.close()

    def create_secret(self, name: str = CREDENTIALS, token: str = TOKEN) -> dict[str, Any]:
        return self.kube.create_object(
            "secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name},
                "data": {"github_token": base64.b64encode(token.encode()).decode()},
            },
        )

    def ars_body(self, name: str = "arc", **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": api.API_VERSION,
            "kind": api.ARS_KIND,
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "githubConfigUrl": self.config_url,
                "githubConfigSecret": CREDENTIALS,
                "template": runner_template(),
                **spec,
            },
        }

    def create_ars(self, name: str = "arc", **spec: Any) -> dict[str, Any]:
        return self.kube.create_object(api.ARS_PLURAL, self.ars_body(name, **spec))

    def patch_ars(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self.kube.patch_object(api.ARS_PLURAL, self.namespace, name, patch)

    def ars(self, name: str = "arc") -> dict[str, Any] | None:
        return self.kube.get_object(api.ARS_PLURAL, self.namespace, name)

    def annotation(self, key: str, name: str = "arc") -> str | None:
        ars = self.ars(name) or {}
        value = (ars.get("metadata", {}).get("annotations") or {}).get(key)
        return None if value is None else str(value)

    def runner_sets(self, name: str = "arc") -> list[dict[str, Any]]:
        uid = (self.ars(name) or {}).get("metadata", {}).get("uid")
        return [
            ers
            for ers in self.kube.list_objects(api.ERS_PLURAL, self.namespace)
            if any(
                ref.get("uid") == uid and ref.get("controller")
                for ref in ers["metadata"].get("ownerReferences") or []
            )
        ]

    def runner_set(self, name: str = "arc") -> dict[str, Any]:
        (ers,) = eventually(lambda: self.runner_sets(name), what=f"the runner set of {name}")
        return ers

    def listeners(self) -> list[dict[str, Any]]:
        return self.kube.list_objects(api.AL_PLURAL, self.namespace)

    def listener(self) -> dict[str, Any]:
        (al,) = eventually(self.listeners, what="the listener")
        return al

    def events(self, reason: str, type_: str | None = None) -> list[dict[str, Any]]:
        return [
            event
            for event in self.kube.list_objects("events", self.namespace)
            if event.get("reason") == reason and (type_ is None or event.get("type") == type_)
        ]

    def state(self, name: str = "arc") -> str:
        return str(((self.ars(name) or {}).get("status") or {}).get("state") or "")

    def scale_set_calls(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.sim.events if e["kind"] in kinds]

    def launch(self, name: str = "arc", **spec: Any) -> dict[str, Any]:
        """The credentials Secret, an ARS of ``spec``, the controllers started: the ARS
        once it runs."""
        self.create_secret()
        self.create_ars(name, **spec)
        self.start()
        return self.running(name)

    def running(self, name: str = "arc") -> dict[str, Any]:
        """Wait until the ARS says Running (scale set, runner set and listener made)."""

        def running() -> dict[str, Any] | None:
            ars = self.ars(name)
            return ars if (ars or {}).get("status", {}).get("phase") == "Running" else None

        found = eventually(running, what=f"ARS {name} running", timeout=10)
        assert found is not None
        return found


@pytest.fixture
def env(kube: KubeApi, sim: GitHubSimulator) -> Iterator[Env]:
    github = serve(sim, port=0)
    environment = Env(kube=kube, sim=sim, github=github)
    try:
        yield environment
    finally:
        environment.stop()
        github.stop()
