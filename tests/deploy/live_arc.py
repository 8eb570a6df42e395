"""A live ARC install, as ARC's Helm charts and ARC's controller leave it, in the
embedded API server and the GitHub simulator, for ARC 0.14.2 and 0.15.1: the state a
switch of the controller image meets, and what ARC meets when switched back.

:func:`live_arc`, after :func:`tests.deploy.chart_manager.install_chart` (ARC's
own CRDs of the line) made the controller's chart:

- the scale-set chart's objects: the GitHub Secret and the no-permission
  ServiceAccount, manager Role and RoleBinding under ``actions.github.com/cleanup-
  protection``, named in the ARS's ``actions.github.com/cleanup-*`` annotations;
- the AutoscalingRunnerSet with the chart's labels and values hash, and what ARC's
  controller adds: its finalizer and the scale set's id, group and name annotations;
- the EphemeralRunnerSet: 0.15 names it after the ARS, 0.14 generated its name; ARC's
  labels, its Go hash under the line's key, its finalizer, owned by the ARS, its
  runner spec as Go serializes the ARS's template (``resources: {}``,
  ``creationTimestamp: null``);
- two EphemeralRunners, each with its JIT Secret and Pod as ARC's runner controller
  makes them, registered and online at GitHub: one **busy** (a job assigned by the
  listener and started on it, its job fields written by the listener), one **idle**;
- the AutoscalingListener in the controller's namespace (ARC >= 0.13.1's name), its
  config Secret (the config ARC writes), ServiceAccount, the Role and RoleBinding in
  the runners' namespace (0.15 names them after the listener; 0.14 after the scale set
  and its namespace's hash), and its Pod, whose listener runs (the simulation's
  listener kubelet, ``examples/simulation/listeners.py``) and holds the scale set's
  message session.

ARC's objects are ``arc_objects.py``'s.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulation.listeners import ListenerKubelet

from ersctl import api
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.podsim import RunnerPods
from ghalistener.testing import GitHubSimulator
from tests.arc_chart import rbac_object
from tests.deploy.arc_objects import (
    ARS,
    CHART_OBJECTS,
    GITHUB_SECRET,
    GO_HASH,
    MAX_RUNNERS,
    MIN_RUNNERS,
    RUNNER_POD_LABEL,
    TOKEN,
    VALUES_HASH,
    arc_labels,
    arc_listener_name,
    arc_rbac_name,
    chart_labels,
    go_rendering,
    listener_pod,
    listener_rbac,
    owner,
)
from tests.deploy.chart_manager import CONTROLLER_NS, RUNNERS_NS, WAIT, arc_image
from tests.ersctl.autoscalingrunnerset.conftest import runner_template
from tests.ghalistener.arc_configs import pat_config_metrics_off
from tests.polling import eventually


@dataclass
class LiveArc:
    """One live install (see the module docstring): where everything is, and the
    listener kubelet and runner Pods that stand in for the kubelet."""

    server: ApiServer
    sim: GitHubSimulator
    version: str
    config_url: str
    kubelet: ListenerKubelet
    pods: RunnerPods
    scale_set_id: int = 0
    ers: str = ""
    listener: str = ""
    runners: dict[str, int] = field(default_factory=dict)
    """Runner (EphemeralRunner) name -> its runner id at GitHub."""
    busy: str = ""
    idle: str = ""
    job: int = 0
    """The busy runner's job (request id)."""

    @property
    def line(self) -> str:
        return self.version.rpartition(".")[0]

    @property
    def rbac_name(self) -> str:
        return arc_rbac_name(self.line, self.listener, RUNNERS_NS, ARS)

    @property
    def spec_hash_key(self) -> str:
        """Where ARC keeps its hash of a runner set's and a listener's spec."""
        return (
            api.RUNNER_SPEC_HASH_ANNOTATION
            if self.line == "0.14"
            else api.INTEGRITY_HASH_ANNOTATION
        )

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        found = self.server.get_object(plural, namespace, name)
        assert found is not None, f"{plural} {namespace}/{name} not found"
        return found

    def step(self) -> None:
        """What the kubelet does now for the listener Pods."""
        self.kubelet.step()


@contextmanager
def live_arc(
    server: ApiServer, sim: GitHubSimulator, version: str, *, github_url: str, workdir: Path
) -> Iterator[LiveArc]:
    """See the module docstring: the install, once the busy runner's job fields are
    written; its listener stopped when the block ends."""
    kubeconfig = server.write_kubeconfig(workdir / "listener-kubeconfig")
    live = LiveArc(
        server=server,
        sim=sim,
        version=version,
        config_url=f"{github_url}/my-org",
        kubelet=ListenerKubelet(
            server, kubeconfig=kubeconfig, workdir=workdir, namespace=CONTROLLER_NS
        ),
        pods=RunnerPods(server, namespace=RUNNERS_NS, connect=sim.connect_runner),
    )
    try:
        live.scale_set_id = int(sim.create_scale_set(ARS, labels=[ARS])["id"])
        ars = _scale_set_chart(live)
        ers = _runner_set(live, ars)
        live.ers = ers["metadata"]["name"]
        for _ in range(2):
            name, runner_id = _runner(live, ers)
            live.runners[name] = runner_id
        _listener(live, ars)
        live.busy, live.idle = sorted(live.runners)
        live.job = _busy(live)
        yield live
    finally:
        live.kubelet.close()


def _scale_set_chart(live: LiveArc) -> dict[str, Any]:
    token = base64.b64encode(TOKEN.encode()).decode()
    live.server.create_object(
        "secrets",
        {
            "metadata": {
                "name": GITHUB_SECRET,
                "namespace": RUNNERS_NS,
                "finalizers": [api.CLEANUP_PROTECTION_FINALIZER],
            },
            "data": {"github_token": token},
        },
    )
    for plural, name in CHART_OBJECTS.values():
        live.server.create_object(plural, rbac_object(plural, name, RUNNERS_NS))
    annotations = {
        api.VALUES_HASH_ANNOTATION: VALUES_HASH,
        api.CLEANUP_SECRET_ANNOTATION: GITHUB_SECRET,
        **{annotation: name for annotation, (_, name) in CHART_OBJECTS.items()},
        # ARC's controller: the scale set it registered.
        api.RUNNER_SCALE_SET_ID_ANNOTATION: str(live.scale_set_id),
        api.RUNNER_GROUP_NAME_ANNOTATION: "Default",
        api.RUNNER_SCALE_SET_NAME_ANNOTATION: ARS,
    }
    if live.line == "0.15":
        annotations[api.INTEGRITY_HASH_ANNOTATION] = GO_HASH
    return live.server.create_object(
        api.ARS_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.ARS_KIND,
            "metadata": {
                "name": ARS,
                "namespace": RUNNERS_NS,
                "labels": chart_labels(live.version),
                "annotations": annotations,
                "finalizers": [api.ARS_FINALIZER],
            },
            "spec": {
                "githubConfigUrl": live.config_url,
                "githubConfigSecret": GITHUB_SECRET,
                "minRunners": MIN_RUNNERS,
                "maxRunners": MAX_RUNNERS,
                "template": runner_template(),
            },
        },
    )


def _runner_set(live: LiveArc, ars: dict[str, Any]) -> dict[str, Any]:
    naming = {"generateName": f"{ARS}-"} if live.line == "0.14" else {"name": ARS}
    return live.server.create_object(
        api.ERS_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.ERS_KIND,
            "metadata": {
                **naming,
                "namespace": RUNNERS_NS,
                "labels": arc_labels(live.version, "runner-set"),
                "annotations": {
                    api.RUNNER_GROUP_NAME_ANNOTATION: "Default",
                    api.RUNNER_SCALE_SET_NAME_ANNOTATION: ARS,
                    live.spec_hash_key: GO_HASH,
                },
                "finalizers": [api.ERS_FINALIZER],
                "ownerReferences": [owner(api.ARS_KIND, ars)],
            },
            "spec": {
                "replicas": 2,
                "patchID": 0,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": live.config_url,
                    "githubConfigSecret": GITHUB_SECRET,
                    "runnerScaleSetId": live.scale_set_id,
                    "metadata": {"creationTimestamp": None},
                    "spec": go_rendering(runner_template()["spec"]),
                },
            },
        },
    )


def _runner(live: LiveArc, ers: dict[str, Any]) -> tuple[str, int]:
    """One runner as ARC's set and runner controllers make it, online at GitHub."""
    server = live.server
    runner = server.create_object(
        api.ER_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.ER_KIND,
            "metadata": {
                "generateName": f"{live.ers}-runner-",
                "namespace": RUNNERS_NS,
                "labels": {**ers["metadata"]["labels"], api.COMPONENT_LABEL: "runner"},
                "annotations": {
                    **ers["metadata"]["annotations"],
                    api.PATCH_ID_ANNOTATION: str(ers["spec"]["patchID"]),
                },
                "finalizers": [api.ER_FINALIZER, api.ER_REGISTRATION_FINALIZER],
                "ownerReferences": [owner(api.ERS_KIND, ers)],
            },
            "spec": ers["spec"]["ephemeralRunnerSpec"],
        },
    )
    name = runner["metadata"]["name"]
    jit = live.sim.generate_jit_config(live.scale_set_id, name)
    runner_id = int(jit["runner"]["id"])
    data = {"jitToken": jit["encodedJITConfig"], "runnerName": name, "runnerId": str(runner_id)}
    server.create_object(
        "secrets",
        {
            "metadata": {
                "name": name,
                "namespace": RUNNERS_NS,
                "ownerReferences": [owner(api.ER_KIND, runner)],
            },
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        },
    )
    spec = go_rendering(runner["spec"]["spec"])
    (container,) = spec["containers"]
    container["env"] = [
        {
            "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
            "valueFrom": {"secretKeyRef": {"name": name, "key": "jitToken"}},
        },
        {"name": "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE", "value": "1"},
    ]
    server.create_object(
        "pods",
        {
            "metadata": {
                "name": name,
                "namespace": RUNNERS_NS,
                "labels": {**runner["metadata"]["labels"], RUNNER_POD_LABEL: "True"},
                "annotations": runner["metadata"]["annotations"],
                "ownerReferences": [owner(api.ER_KIND, runner)],
            },
            "spec": {**spec, "restartPolicy": "Never"},
        },
    )
    assert live.pods.start(name) == runner_id
    status = {"phase": "Running", "ready": True, "runnerId": runner_id, "runnerName": name}
    server.patch_object(api.ER_PLURAL, RUNNERS_NS, name, {"status": status}, subresource="status")
    return name, runner_id


def _listener(live: LiveArc, ars: dict[str, Any]) -> None:
    """The AutoscalingListener and what ARC's listener controller makes for it; its
    listener started (a message session at GitHub)."""
    server, line = live.server, live.line
    live.listener = arc_listener_name(RUNNERS_NS, "", live.config_url, ARS)
    labels = arc_labels(live.version, api.LISTENER_COMPONENT)
    hashes = (
        {api.RUNNER_SPEC_HASH_ANNOTATION: GO_HASH, api.VALUES_HASH_ANNOTATION: VALUES_HASH}
        if line == "0.14"
        else {api.INTEGRITY_HASH_ANNOTATION: GO_HASH}
    )
    listener = server.create_object(
        api.AL_PLURAL,
        {
            "apiVersion": api.API_VERSION,
            "kind": api.AL_KIND,
            "metadata": {
                "name": live.listener,
                "namespace": CONTROLLER_NS,
                "labels": labels,
                "annotations": hashes,
                "finalizers": [api.AL_FINALIZER],
            },
            "spec": {
                "githubConfigUrl": live.config_url,
                "githubConfigSecret": GITHUB_SECRET,
                "runnerScaleSetId": live.scale_set_id,
                "autoscalingRunnerSetNamespace": RUNNERS_NS,
                "autoscalingRunnerSetName": ARS,
                "ephemeralRunnerSetName": live.ers,
                "minRunners": MIN_RUNNERS,
                "maxRunners": MAX_RUNNERS,
                "image": arc_image(live.version),
            },
        },
    )
    owned = [owner(api.AL_KIND, listener)]
    integrity = {} if line == "0.14" else {api.INTEGRITY_HASH_ANNOTATION: GO_HASH}
    for plural, doc in listener_rbac(
        live.version,
        listener=live.listener,
        ers=live.ers,
        owned=owned,
        labels=labels,
        integrity=integrity,
    ):
        server.create_object(plural, doc)
    config = pat_config_metrics_off(
        live.config_url,
        RUNNERS_NS,
        token=TOKEN,
        ers_name=live.ers,
        min_runners=MIN_RUNNERS,
        max_runners=MAX_RUNNERS,
        scale_set_id=live.scale_set_id,
        scale_set_name=ARS,
    )
    server.create_object(
        "secrets",
        {
            "metadata": {
                "name": f"{live.listener}-config",
                "namespace": CONTROLLER_NS,
                "annotations": integrity,
                "ownerReferences": owned,
            },
            "data": {"config.json": base64.b64encode(config.encode()).decode()},
        },
    )
    pod = listener_pod(
        live.version, listener=live.listener, owned=owned, labels=labels, integrity=integrity
    )
    server.create_object("pods", pod)
    live.step()
    eventually(lambda: live.sim.state()["sessions"], timeout=WAIT, what="ARC's listener's session")


def _busy(live: LiveArc) -> int:
    """A job queued at GitHub, assigned through ARC's listener, started on the first
    runner; returns once the listener wrote its job fields on that runner."""
    job = live.sim.enqueue_job(live.scale_set_id)
    eventually(
        lambda: any(
            j["requestId"] == job and j["state"] == "assigned" for j in live.sim.state()["jobs"]
        ),
        timeout=WAIT,
        what="the job assigned to the scale set",
    )
    live.sim.start_job(live.runners[live.busy], job)
    eventually(
        lambda: live.get(api.ER_PLURAL, RUNNERS_NS, live.busy).get("status", {}).get("jobId"),
        timeout=WAIT,
        what="the busy runner's job fields, written by the listener",
    )
    return job
