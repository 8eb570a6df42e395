"""Typed values exchanged with the runner scale-set service.

Frozen, keyword-only dataclasses; field names are the snake_case forms of the wire
names (``runnerRequestId`` -> ``runner_request_id``). Parsing from JSON lives in
``ghalistener.actions.messages``; nothing here does I/O. Values that hold a secret
(the session's queue token, a JIT config) keep it out of ``repr``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import NewType

ScaleSetId = NewType("ScaleSetId", int)
RunnerID = NewType("RunnerID", int)
RunnerRequestId = NewType("RunnerRequestId", int)
MessageId = NewType("MessageId", int)
SessionId = NewType("SessionId", str)

RUNNER_SCALE_SET_JOB_MESSAGES = "RunnerScaleSetJobMessages"


@dataclass(frozen=True, kw_only=True)
class Statistics:
    """Job and runner counts of one scale set. Scale on ``total_assigned_jobs``."""

    total_available_jobs: int = 0
    total_acquired_jobs: int = 0
    total_assigned_jobs: int = 0
    total_running_jobs: int = 0
    total_registered_runners: int = 0
    total_busy_runners: int = 0
    total_idle_runners: int = 0


@dataclass(frozen=True, kw_only=True)
class Label:
    """A runner label (``type`` is "System" or "User")."""

    name: str
    type: str = "System"


@dataclass(frozen=True, kw_only=True)
class RunnerSetting:
    """Settings every runner of a scale set is registered with."""

    ephemeral: bool = True
    disable_update: bool = False


@dataclass(frozen=True, kw_only=True)
class RunnerScaleSet:
    """A runner scale set as the service describes it."""

    id: ScaleSetId
    name: str
    runner_group_id: int = 0
    runner_group_name: str = ""
    labels: tuple[Label, ...] = ()
    runner_setting: RunnerSetting = field(default_factory=RunnerSetting)
    enabled: bool | None = None
    created_on: datetime | None = None
    statistics: Statistics | None = None


@dataclass(frozen=True, kw_only=True)
class RunnerGroup:
    """A runner group of the organization or enterprise."""

    id: int
    name: str
    size: int = 0
    is_default_group: bool = False


@dataclass(frozen=True, kw_only=True)
class RunnerScaleSetSession:
    """A message session: where to long-poll, and the token that authorizes it.

    ``message_queue_access_token`` is a secret and is excluded from ``repr``.
    """

    session_id: SessionId
    owner_name: str
    runner_scale_set: RunnerScaleSet | None
    message_queue_url: str
    message_queue_access_token: str = field(repr=False)
    statistics: Statistics = field(default_factory=Statistics)


@dataclass(frozen=True, kw_only=True)
class JobMessage:
    """Fields common to every job message; see the subclasses for the message kinds."""

    runner_request_id: RunnerRequestId
    repository_name: str = ""
    owner_name: str = ""
    job_id: str = ""
    job_workflow_ref: str = ""
    job_display_name: str = ""
    workflow_run_id: int = 0
    event_name: str = ""
    request_labels: tuple[str, ...] = ()
    queue_time: datetime | None = None
    scale_set_assign_time: datetime | None = None
    runner_assign_time: datetime | None = None
    finish_time: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class JobAvailable(JobMessage):
    """A job the scale set may acquire."""

    acquire_job_url: str = ""


@dataclass(frozen=True, kw_only=True)
class JobAssigned(JobMessage):
    """A job assigned to the scale set (a runner of it will pick it up)."""


@dataclass(frozen=True, kw_only=True)
class JobStarted(JobMessage):
    """A job started on a runner of the scale set."""

    runner_id: RunnerID
    runner_name: str


@dataclass(frozen=True, kw_only=True)
class JobCompleted(JobMessage):
    """A job finished (``result``: succeeded, failed, canceled, ...)."""

    result: str
    runner_id: RunnerID = RunnerID(0)
    runner_name: str = ""


@dataclass(frozen=True, kw_only=True)
class RunnerScaleSetMessage:
    """One message from the queue: statistics plus up to 50 job messages.

    ``skipped`` holds one reason per job message that could not be parsed (naming the
    entry and the field, never a value): those jobs are not in ``jobs``.
    """

    message_id: MessageId
    statistics: Statistics
    jobs: tuple[JobMessage, ...] = ()
    skipped: tuple[str, ...] = ()
    message_type: str = RUNNER_SCALE_SET_JOB_MESSAGES


@dataclass(frozen=True, kw_only=True)
class JitConfig:
    """A just-in-time runner registration. ``encoded_jit_config`` is a secret (not in repr)."""

    runner_id: RunnerID
    runner_name: str
    encoded_jit_config: str = field(repr=False)
    runner_scale_set_id: ScaleSetId = ScaleSetId(0)


@dataclass(frozen=True, kw_only=True)
class RunnerReference:
    """A registered runner (an "agent" in the service's vocabulary)."""

    id: RunnerID
    name: str
    runner_scale_set_id: ScaleSetId = ScaleSetId(0)
    busy: bool = False
    status: str = ""


@dataclass(frozen=True, kw_only=True)
class SystemInfo:
    """Who is calling: sent as the JSON User-Agent, as ARC does."""

    system: str = "gha-scaleset"
    version: str = ""
    commit_sha: str = ""
    scale_set_id: int = 0
    subsystem: str = ""

    def user_agent(self) -> str:
        """The User-Agent header value: this value as a compact JSON object."""
        return json.dumps(
            {
                "system": self.system,
                "version": self.version,
                "commit_sha": self.commit_sha,
                "scale_set_id": self.scale_set_id,
                "subsystem": self.subsystem,
            },
            separators=(",", ":"),
        )
