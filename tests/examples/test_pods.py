"""The Pod-mode agent (kubelet + runner binary) against the embedded API server.

The runner Pod and its JIT Secret are built by ersctl's own builders, as the runner
controller would create them; the service side is an in-memory fake of the agent's
own port. What this pins is the agent's part: when a runner starts, takes its one
job, exits, and that a Pod deleted under a running job loses the job.
"""

from __future__ import annotations

from typing import Any

import pytest
from simulation.agent import AgentTiming
from simulation.cluster import NAMESPACE
from simulation.disruptions import Disruptions
from simulation.pods import PULL_FAILURE_SECONDS, PodAgent, StartFault

from ersctl.api import EphemeralRunner
from ersctl.ephemeralrunner.pods import DISRUPTION_ANNOTATIONS, build_jit_secret, build_runner_pod
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.podsim import RunnerPods
from tests.clock import FakeClock

# The agent is the simulation's, which reads and writes through the embedded server's
# direct object access (and its StatusError).
pytestmark = pytest.mark.embedded_only("the simulation's pod agent uses its direct access")


class FakeRunnerService:
    def __init__(self) -> None:
        self.connected: list[str] = []
        self.queue: list[str] = []
        self.completed: list[tuple[str, bool]] = []
        self.disconnected: list[tuple[int, bool]] = []

    def connect(self, encoded_jit_config: str) -> dict[str, Any]:
        self.connected.append(encoded_jit_config)
        return {"id": 7}

    def take_job(self, runner_id: int) -> str | None:
        return self.queue.pop(0) if self.queue else None

    def complete_job(self, job_id: str, runner_id: int, *, succeeded: bool = True) -> None:
        self.completed.append((job_id, succeeded))

    def online_runners(self) -> set[str]:
        return {"r1"} if self.connected else set()  # r1 is runner 7, the only one

    def disconnect(self, runner_id: int, *, graceful: bool = False) -> None:
        self.disconnected.append((runner_id, graceful))


def _runner_with_pod(api: ApiServer) -> None:
    api.create_object("namespaces", {"metadata": {"name": NAMESPACE}})
    er = EphemeralRunner(
        api.create_object(
            "ephemeralrunners",
            {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "EphemeralRunner",
                "metadata": {"name": "r1", "namespace": NAMESPACE},
                "spec": {
                    "githubConfigUrl": "https://github.com/octo-org",
                    "githubConfigSecret": "github-config",
                    "runnerScaleSetId": 1,
                    "spec": {"containers": [{"name": "runner", "image": "runner"}]},
                },
            },
        )
    )
    secret = build_jit_secret(
        er, runner_id=7, runner_name="r1", scale_set_id=1, encoded_jit_config="jit-r1"
    )
    api.create_object("secrets", secret)
    api.create_object("pods", build_runner_pod(er, secret=secret))


def _pod(api: ApiServer) -> dict[str, Any]:
    pod = api.get_object("pods", NAMESPACE, "r1")
    assert pod is not None
    return pod


def _exit_code(pod: dict[str, Any]) -> int | None:
    (status,) = pod["status"]["containerStatuses"]
    code = status["state"].get("terminated", {}).get("exitCode")
    return None if code is None else int(code)


@pytest.fixture
def agent(apiserver: ApiServer) -> tuple[PodAgent, FakeRunnerService, FakeClock]:
    _runner_with_pod(apiserver)
    service, clock = FakeRunnerService(), FakeClock(0.0)
    pods = RunnerPods(apiserver, namespace=NAMESPACE, connect=service.connect)
    agent = PodAgent(
        pods=pods,
        api=apiserver,
        service=service,
        clock=clock,
        timing=AgentTiming(startup_delay=1.0),
        job_duration=lambda job: 5.0,
    )
    return agent, service, clock


def test_the_runner_starts_with_its_jit_config_runs_one_job_and_exits_zero(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, service, clock = agent
    service.queue.append("job-1")

    for clock.now in (0.0, 1.0):
        pod_agent.step()
    assert service.connected == ["jit-r1"]  # read through the Pod's secretKeyRef
    assert _pod(apiserver)["status"]["phase"] == "Running"
    clock.now = 1.5
    pod_agent.step()  # takes the job
    clock.now = 6.5
    pod_agent.step()

    pod = _pod(apiserver)
    assert (pod["status"]["phase"], _exit_code(pod)) == ("Succeeded", 0)
    assert service.completed == [("job-1", True)]


def test_with_an_exit_delay_the_pod_ends_after_the_job_completes_at_the_service(
    apiserver: ApiServer,
) -> None:
    _runner_with_pod(apiserver)
    service, clock = FakeRunnerService(), FakeClock(0.0)
    pod_agent = PodAgent(
        pods=RunnerPods(apiserver, namespace=NAMESPACE, connect=service.connect),
        api=apiserver,
        service=service,
        clock=clock,
        timing=AgentTiming(startup_delay=1.0, exit_delay=(1.5, 1.5)),
        job_duration=lambda job: 5.0,
    )
    service.queue.append("job-1")
    for clock.now in (0.0, 1.0, 1.5, 6.5):
        pod_agent.step()

    assert service.completed == [("job-1", True)]
    assert _pod(apiserver)["status"]["phase"] == "Running", "GitHub hears of it first"
    clock.now = 8.0
    pod_agent.step()
    pod = _pod(apiserver)
    assert (pod["status"]["phase"], _exit_code(pod)) == ("Succeeded", 0)


def test_a_pod_deleted_mid_job_loses_the_job(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, service, clock = agent
    service.queue.append("job-1")
    for clock.now in (0.0, 1.0, 1.5):
        pod_agent.step()

    apiserver.delete_object("pods", NAMESPACE, "r1")
    clock.now = 2.0
    pod_agent.step()

    assert pod_agent.killed_jobs == [("r1", "job-1")]
    assert service.completed == [("job-1", False)]


def test_a_runner_released_between_two_looks_is_traced_as_deleted(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, _, clock = agent
    pod_agent.step()

    apiserver.delete_object("ephemeralrunners", NAMESPACE, "r1")  # no finalizer: gone at once
    clock.now = 0.5
    pod_agent.step()

    (trace,) = pod_agent.traces(origin=0.0)
    assert (trace.name, trace.created_at, trace.deleted_at) == ("r1", 0.0, 0.5)


def _other_pod(api: ApiServer) -> None:
    """A Pod no runner owns (a listener's), in the runners' namespace."""
    api.create_object(
        "pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "listener", "namespace": NAMESPACE},
            "spec": {"containers": [{"name": "listener", "image": "ghalistener"}]},
        },
    )


def test_a_start_failure_fails_the_next_runner_pod_and_never_another_pod(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, service, clock = agent
    _other_pod(apiserver)
    pod_agent.fail_next_start(1)

    for clock.now in (0.0, 1.0):
        pod_agent.step()

    pod = _pod(apiserver)
    assert (pod["status"]["phase"], _exit_code(pod)) == ("Failed", 1)
    assert service.connected == []  # failed before its runner connected
    assert pod_agent.injected_runners == {"r1"}
    listener = apiserver.get_object("pods", NAMESPACE, "listener") or {}
    assert "containerStatuses" not in listener.get("status", {})  # not touched


def test_a_mid_job_failure_fails_the_job_of_a_runner_whose_job_is_recorded(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, service, clock = agent
    service.queue.append("job-1")
    for clock.now in (0.0, 1.0, 1.5):
        pod_agent.step()
    pod_agent.fail_a_busy_runner()
    clock.now = 2.0
    pod_agent.step()
    assert service.completed == []  # the listener has not recorded the job on the ER yet

    apiserver.patch_object(
        "ephemeralrunners", NAMESPACE, "r1", {"status": {"jobId": "j1"}}, subresource="status"
    )
    clock.now = 2.5
    pod_agent.step()

    pod = _pod(apiserver)
    assert (pod["status"]["phase"], _exit_code(pod)) == ("Failed", 1)
    assert service.completed == [("job-1", False)]
    assert pod_agent.failed_jobs == [("r1", "job-1")]
    assert pod_agent.killed_jobs == []  # injected, not the controllers' doing


def _status(api: ApiServer) -> dict[str, Any]:
    return dict(_pod(api).get("status") or {})


def test_an_image_that_does_not_pull_keeps_the_next_pod_pending_for_a_while(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, service, clock = agent
    pod_agent.disturb_next_start(StartFault.IMAGE_PULL)
    for clock.now in (0.0, 1.0, 1.0 + PULL_FAILURE_SECONDS - 0.1):
        pod_agent.step()

    (runner,) = _status(apiserver)["containerStatuses"]
    assert runner["state"]["waiting"]["reason"] == "ImagePullBackOff"
    assert service.connected == [] and pod_agent.injected_runners == {"r1"}
    assert pod_agent.zombie_ages["r1"] == pytest.approx(PULL_FAILURE_SECONDS + 0.9)
    clock.now = 1.0 + PULL_FAILURE_SECONDS
    pod_agent.step()  # pulled at last: the runner starts
    assert service.connected == ["jit-r1"] and _status(apiserver)["phase"] == "Running"


def test_a_runner_never_online_runs_its_pod_without_connecting(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, service, clock = agent
    service.queue.append("job-1")
    pod_agent.disturb_next_start(StartFault.NEVER_ONLINE)
    for clock.now in (0.0, 1.0, 2.0, 3.0):
        pod_agent.step()

    assert _status(apiserver)["phase"] == "Running"
    assert service.connected == [] and service.queue == ["job-1"]  # never takes it
    assert pod_agent.zombie_ages["r1"] == 3.0  # a Pod that runs, a runner not online


def test_a_runner_can_exit_zero_without_a_job(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, service, clock = agent
    service.queue.append("job-1")
    pod_agent.disturb_next_start(StartFault.EXIT_UNUSED)
    for clock.now in (0.0, 1.0, 2.0):
        pod_agent.step()

    assert (_status(apiserver)["phase"], _exit_code(_pod(apiserver))) == ("Succeeded", 0)
    assert service.connected == ["jit-r1"] and service.queue == ["job-1"]
    assert service.disconnected == [(7, True)]  # it deleted its session on the way out


@pytest.mark.parametrize("disruption", ["evict", "drain", "lose_node", "delete"])
def test_a_killed_idle_runner_is_reported_dead_to_the_service_once(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock], disruption: str
) -> None:
    """Without it, GitHub would list the dead runner online for good, and the runner
    controller's online check of its next Pod would believe it."""
    pod_agent, service, clock = agent
    for clock.now in (0.0, 1.0):
        pod_agent.step()  # online, idle

    if disruption == "delete":  # a Pod deleted under its runner (kubectl delete pod)
        apiserver.delete_object("pods", NAMESPACE, "r1")
    else:
        assert getattr(Disruptions(api=apiserver, agent=pod_agent), disruption)() is True
    for clock.now in (2.0, 3.0):
        pod_agent.step()

    assert service.disconnected == [(7, False)]  # killed: offline once its long poll lapses


def running_job(pod_agent: PodAgent, clock: FakeClock) -> None:
    for clock.now in (0.0, 1.0, 1.5):
        pod_agent.step()


@pytest.mark.parametrize("disruption", ["evict", "drain", "lose_node"])
def test_a_disrupted_busy_runner_fails_its_job_as_injected(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock], disruption: str
) -> None:
    pod_agent, service, clock = agent
    service.queue.append("job-1")
    running_job(pod_agent, clock)
    disruptions = Disruptions(api=apiserver, agent=pod_agent)

    assert getattr(disruptions, disruption)() is True
    clock.now = 2.0
    pod_agent.step()

    assert service.completed == [("job-1", False)]
    assert pod_agent.failed_jobs == [("r1", "job-1")] and pod_agent.killed_jobs == []
    assert pod_agent.running() == []


def test_an_eviction_fails_the_pod_a_lost_node_leaves_it_terminating_until_its_runner_goes(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, _, clock = agent
    running_job(pod_agent, clock)
    disruptions = Disruptions(api=apiserver, agent=pod_agent)

    assert disruptions.lose_node()
    assert _pod(apiserver)["metadata"]["deletionTimestamp"]
    disruptions.step()
    assert apiserver.get_object("pods", NAMESPACE, "r1") is not None  # its runner lives
    apiserver.delete_object("ephemeralrunners", NAMESPACE, "r1")
    disruptions.step()
    assert apiserver.get_object("pods", NAMESPACE, "r1") is None  # the Pod GC's part


def test_an_eviction_fails_the_pod_without_ending_its_runner_container(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, _, clock = agent
    running_job(pod_agent, clock)

    assert Disruptions(api=apiserver, agent=pod_agent).evict()

    status = _status(apiserver)
    assert (status["phase"], status["reason"]) == ("Failed", "Evicted")
    assert _exit_code(_pod(apiserver)) is None


def test_a_drain_leaves_a_pod_protected_from_disruption_alone(
    apiserver: ApiServer, agent: tuple[PodAgent, FakeRunnerService, FakeClock]
) -> None:
    pod_agent, _, clock = agent
    running_job(pod_agent, clock)
    apiserver.patch_object(
        "pods", NAMESPACE, "r1", {"metadata": {"annotations": dict(DISRUPTION_ANNOTATIONS)}}
    )
    disruptions = Disruptions(api=apiserver, agent=pod_agent)

    assert disruptions.drain() is False  # nothing it may take
    assert apiserver.get_object("pods", NAMESPACE, "r1") is not None
    assert disruptions.evict() is True  # node pressure respects no annotation
