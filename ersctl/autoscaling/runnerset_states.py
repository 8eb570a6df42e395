"""What an AutoscalingRunnerSet reports: its ``status.phase``, and the reasons of its
Events, which ``status.state`` repeats. Pure."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

NORMAL: Final = "Normal"
WARNING: Final = "Warning"


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    FAILED = "Failed"
    DELETING = "Deleting"


class Reason(StrEnum):
    """Event reasons, and the ``status.state`` values they stand for."""

    RUNNING = "Running"
    INVALID_SPEC = "InvalidSpec"
    SECRET_UNUSABLE = "CredentialsUnusable"  # noqa: S105
    RUNNER_GROUP_NOT_FOUND = "RunnerGroupNotFound"
    NAME_TAKEN = "ScaleSetNameTaken"
    GITHUB_FAILED = "GitHubCallFailed"
    RECONCILE_FAILED = "ReconcileFailed"
    SCALE_SET_CREATED = "ScaleSetCreated"
    SCALE_SET_FOUND = "ScaleSetFound"
    SCALE_SET_UPDATED = "ScaleSetUpdated"
    SCALE_SET_GONE = "ScaleSetGone"
    SCALE_SET_DELETED = "ScaleSetDeleted"
    RUNNER_SET_CREATED = "RunnerSetCreated"
    RUNNER_SET_ADOPTED = "RunnerSetAdopted"
    RUNNER_SET_NAME_TAKEN = "RunnerSetNameTaken"
    RUNNER_SET_REMOVED = "ExtraRunnerSetDeleted"
    TEMPLATE_CHANGED = "RunnerTemplateChanged"
    LISTENER_CREATED = "ListenerCreated"
    LISTENER_UPDATED = "ListenerUpdated"
    STRAY_LISTENER_DELETED = "StrayListenerDeleted"
    REPLACING_LISTENER = "ReplacingListener"
    WAITING_FOR_LISTENER = "WaitingForListener"
    LISTENER_CANNOT_START = "ListenerCannotStart"
    STOPPING_LISTENER = "StoppingListener"
    DRAINING_RUNNERS = "DrainingRunners"
