"""The runner agent's life cycle per EphemeralRunner, against in-memory fakes of its ports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulation.agent import AgentTiming, RunnerAgent

from ersctl.api import EphemeralRunner
from tests.clock import FakeClock

JOB_FIELDS = {"jobId": "job-1", "jobRequestId": 1}


class FakeCluster:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}

    def add(self, name: str, patch_id: int = 1) -> None:
        self.objects[name] = {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "finalizers": ["f"],
                "annotations": {"actions.github.com/patch-id": str(patch_id)},
            },
            "status": {},
        }

    def delete(self, name: str) -> None:
        self.objects[name]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    def runners(self) -> list[EphemeralRunner]:
        return [EphemeralRunner.from_dict(o) for o in self.objects.values()]

    def patch_status(self, name: str, status: Mapping[str, Any]) -> None:
        self.objects[name]["status"].update(status)

    def release_finalizers(self, name: str) -> None:
        del self.objects[name]

    def phase(self, name: str) -> str:
        return str(self.objects[name]["status"].get("phase", ""))


class FakeService:
    def __init__(self) -> None:
        self.queue: list[str] = []
        self.registered: set[int] = set()
        self.completed: list[tuple[str, int, bool]] = []

    def register(self, runner_name: str) -> int:
        runner_id = 100 + len(self.registered) + len(self.completed)
        self.registered.add(runner_id)
        return runner_id

    def take_job(self, runner_id: int) -> str | None:
        return self.queue.pop(0) if self.queue else None

    def complete_job(self, job_id: str, runner_id: int, *, succeeded: bool = True) -> None:
        self.completed.append((job_id, runner_id, succeeded))
        self.registered.discard(runner_id)

    def unregister(self, runner_id: int) -> None:
        self.registered.discard(runner_id)


def _agent(**timing: Any) -> tuple[RunnerAgent, FakeCluster, FakeService, FakeClock]:
    cluster, service, clock = FakeCluster(), FakeService(), FakeClock(0.0)
    agent = RunnerAgent(
        cluster=cluster,
        service=service,
        clock=clock,
        timing=AgentTiming(registration_delay=1.0, startup_delay=1.0, **timing),
        job_duration=lambda job: 5.0,
    )
    return agent, cluster, service, clock


def _at(agent: RunnerAgent, clock: FakeClock, when: float) -> None:
    clock.now = when
    agent.step()


def test_a_runner_registers_idles_pending_takes_a_job_and_succeeds() -> None:
    agent, cluster, service, clock = _agent()
    cluster.add("r1")

    _at(agent, clock, 0.0)
    assert cluster.phase("r1") == ""
    _at(agent, clock, 1.0)
    assert cluster.objects["r1"]["status"] == {
        "phase": "Pending",
        "runnerId": 100,
        "runnerName": "r1",
        "ready": False,
    }
    _at(agent, clock, 2.0)  # online, but no job yet: an idle runner stays Pending
    assert (cluster.phase("r1"), cluster.objects["r1"]["status"]["ready"]) == ("Pending", True)
    service.queue.append("job-1")
    _at(agent, clock, 2.5)
    assert cluster.phase("r1") == "Pending", "busy, and Running once the listener says so"
    cluster.patch_status("r1", JOB_FIELDS)  # what ARC's listener writes on JobStarted
    _at(agent, clock, 2.6)
    assert cluster.phase("r1") == "Running"
    _at(agent, clock, 7.0)
    assert cluster.phase("r1") == "Running"
    _at(agent, clock, 7.5)
    assert cluster.phase("r1") == "Succeeded"
    assert service.completed == [("job-1", 100, True)]


def test_a_deleted_idle_runner_is_unregistered_released_and_traced_as_deleted() -> None:
    agent, cluster, service, clock = _agent()
    cluster.add("r1", patch_id=7)
    _at(agent, clock, 0.0)
    _at(agent, clock, 1.0)

    cluster.delete("r1")
    _at(agent, clock, 3.0)

    assert "r1" not in cluster.objects
    assert service.registered == set()
    (trace,) = agent.traces(origin=0.0)
    assert (trace.created_at, trace.registered_at, trace.deleted_at, trace.patch_id) == (
        0.0,
        1.0,
        3.0,
        7,
    )
    assert agent.killed_jobs == []


def test_a_runner_deleted_mid_job_loses_its_job_and_is_reported() -> None:
    agent, cluster, service, clock = _agent()
    cluster.add("r1")
    service.queue.append("job-1")
    for when in (0.0, 1.0, 2.0):
        _at(agent, clock, when)
    cluster.patch_status("r1", {**JOB_FIELDS, "phase": "Running"})  # what ours writes

    cluster.delete("r1")
    _at(agent, clock, 3.0)

    assert agent.killed_jobs == [("r1", "job-1")]
    assert service.completed == [("job-1", 100, False)]
    assert "r1" not in cluster.objects


def test_with_an_exit_delay_the_job_completes_at_the_service_before_the_runner_succeeds() -> None:
    """GitHub's order: JobCompleted first, the Pod's end (the ER Succeeded) seconds later."""
    agent, cluster, service, clock = _agent(exit_delay=(1.5, 1.5))
    cluster.add("r1")
    service.queue.append("job-1")
    for when in (0.0, 1.0, 2.0):
        _at(agent, clock, when)
    cluster.patch_status("r1", {**JOB_FIELDS, "phase": "Running"})

    _at(agent, clock, 7.0)
    assert service.completed == [("job-1", 100, True)]
    assert cluster.phase("r1") == "Running"
    _at(agent, clock, 8.4)
    assert cluster.phase("r1") == "Running"
    _at(agent, clock, 8.5)
    assert cluster.phase("r1") == "Succeeded"


def test_with_an_idle_exit_a_runner_without_a_job_ends_succeeded_and_unregistered() -> None:
    agent, cluster, service, clock = _agent(idle_exit=4.0)
    cluster.add("r1")
    for when in (0.0, 1.0, 2.0, 5.9):
        _at(agent, clock, when)
    assert (cluster.phase("r1"), service.registered) == ("Pending", {100})

    _at(agent, clock, 6.0)

    assert (cluster.phase("r1"), service.registered, service.completed) == ("Succeeded", set(), [])
    cluster.delete("r1")
    _at(agent, clock, 7.0)
    assert agent.killed_jobs == [] and "r1" not in cluster.objects
