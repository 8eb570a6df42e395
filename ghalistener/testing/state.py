"""The simulator's records: scale sets, sessions, jobs, runners, messages, faults.

Mutable on purpose (they are the simulated service's database); only
``ghalistener.testing.model`` changes them, under its lock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class JobState(enum.Enum):
    """Lifecycle of a job request: available -> acquired -> assigned -> running -> completed."""

    AVAILABLE = "available"
    ACQUIRED = "acquired"
    ASSIGNED = "assigned"
    RUNNING = "running"
    COMPLETED = "completed"


@dataclass(kw_only=True)
class Job:
    """A job request targeted at one scale set."""

    request_id: int
    scale_set_id: int
    job_id: str
    repository: str
    owner: str
    workflow_ref: str
    display_name: str
    workflow_run_id: int
    labels: list[str]
    queue_time: str
    state: JobState = JobState.AVAILABLE
    runner_id: int = 0
    result: str = ""
    assign_time: str = ""
    runner_assign_time: str = ""
    finish_time: str = ""
    times_requeued: int = 0

    def wire(self, message_type: str, *, runner_name: str = "") -> dict[str, Any]:
        """The job message the service would send for this job now."""
        body: dict[str, Any] = {
            "messageType": message_type,
            "runnerRequestId": self.request_id,
            "repositoryName": self.repository,
            "ownerName": self.owner,
            "jobId": self.job_id,
            "jobWorkflowRef": self.workflow_ref,
            "jobDisplayName": self.display_name,
            "workflowRunId": self.workflow_run_id,
            "eventName": "push",
            "requestLabels": list(self.labels),
            "queueTime": self.queue_time,
            "scaleSetAssignTime": self.assign_time or "0001-01-01T00:00:00Z",
            "runnerAssignTime": self.runner_assign_time or "0001-01-01T00:00:00Z",
            "finishTime": self.finish_time or "0001-01-01T00:00:00Z",
        }
        if message_type == "JobAvailable":
            body["acquireJobUrl"] = f"/acquirejob/{self.request_id}"
        if message_type in ("JobStarted", "JobCompleted"):
            body["runnerId"] = self.runner_id
            body["runnerName"] = runner_name
        if message_type == "JobCompleted":
            body["result"] = self.result
        return body


@dataclass(kw_only=True)
class Runner:
    """A runner registered through generatejitconfig."""

    id: int
    name: str
    scale_set_id: int
    jit_secret: str
    online: bool = False
    request_id: int = 0  # the job it runs; 0 = idle
    offline_at: float | None = None
    """When a runner whose process died drops offline (its last long poll lapses)."""

    @property
    def busy(self) -> bool:
        return self.request_id != 0

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "runnerScaleSetId": self.scale_set_id,
            "busy": self.busy,
            "status": "online" if self.online else "offline",
            "enabled": True,
            "ephemeral": True,
        }


@dataclass(kw_only=True)
class Message:
    """A message of a scale set's queue; removed only when acknowledged."""

    id: int
    jobs: list[dict[str, Any]]
    statistics: dict[str, int]
    deliveries: int = 0
    redelivered: bool = False  # delivered once more whatever the poll's lastMessageId


@dataclass(kw_only=True)
class ScaleSet:
    """A runner scale set and its message queue."""

    id: int
    name: str
    runner_group_id: int
    labels: list[str]
    runner_group_name: str = "Default"
    disable_update: bool = False
    created_on: str = ""
    pending: list[dict[str, Any]] = field(default_factory=list)  # job messages not yet sent
    queue: list[Message] = field(default_factory=list)  # unacknowledged messages
    last_acked: Message | None = None  # the latest acknowledged message (for redelivery)
    next_message_id: int = 1
    last_statistics: dict[str, int] | None = None
    max_capacity: int | None = None

    def wire(self, statistics: dict[str, int] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "runnerGroupId": self.runner_group_id,
            "runnerGroupName": self.runner_group_name,
            "labels": [{"name": label, "type": "System"} for label in self.labels],
            "runnerSetting": {"ephemeral": True, "disableUpdate": self.disable_update},
            "enabled": True,
            "createdOn": self.created_on,
        }
        if statistics is not None:
            body["statistics"] = statistics
        return body


@dataclass(kw_only=True)
class Session:
    """A message session; one per scale set at a time."""

    id: str
    scale_set_id: int
    owner: str
    queue_token: str
    token_valid: bool = True
    last_active: float = 0.0  # clock reading at the end of the last request using it
    polls: int = 0  # long polls being held for it right now (it is not idle meanwhile)


@dataclass(kw_only=True)
class Fault:
    """An injected misbehaviour for requests to ``endpoint`` ("*" = any)."""

    endpoint: str = "*"
    status: int | None = None  # answer with this status instead
    body: bytes | None = None  # answer 200 (or ``status``) with this raw body instead
    bom: bool = False  # prefix the normal answer with a UTF-8 BOM
    latency: float = 0.0  # seconds to wait before answering
    times: int = 1  # how many requests it affects; -1 = until cleared

    def matches(self, endpoint: str) -> bool:
        return self.times != 0 and self.endpoint in ("*", endpoint)

    def describe(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "status": self.status,
            "malformed": self.body is not None,
            "bom": self.bom,
            "latency": self.latency,
            "times": self.times,
        }
