"""The ways a runner fails, or never gets to run a job, as the runner controller names
them: the ``mode`` label of ``ersctl_runner_faults_total`` and the Event reason each is
reported with. README "Runner health" has one row each. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from ersctl.reasons import Reason


class Mode(StrEnum):
    """How a runner failed, or what kept it from ever running a job: the ``mode`` label
    of ``ersctl_runner_faults_total`` (README "Runner health" has one row each)."""

    EXITED = "exited"
    """The runner container exited non-zero."""
    EVICTED = "evicted"
    """The kubelet evicted the Pod (``status.reason`` Evicted)."""
    REJECTED = "rejected"
    """The node's admission rejected the Pod (``status.reason`` OutOfcpu, OutOfmemory...)."""
    POD_FAILED = "pod_failed"
    """The Pod failed for another reason before the runner container ended."""
    INIT_FAILED = "init_failed"
    """An init container exited non-zero; the runner container never started."""
    START_TIMEOUT = "start_timeout"
    """The Pod did not start its runner within ``--runner-start-timeout``."""
    NOT_ONLINE = "not_online"
    """The runner ran ``--runner-online-timeout`` without coming online at GitHub."""
    REGISTRATION_LOST = "registration_lost"
    """GitHub no longer knows the runner of an idle, running Pod: its JIT config is spent."""
    POD_DELETED = "pod_deleted"
    """The Pod was deleted (a drain, a person) while its runner lived."""
    NODE_LOST = "node_lost"
    """The Pod's node stopped answering: phase Unknown, or stuck terminating."""
    EXITED_WITHOUT_JOB = "exited_without_job"
    """The runner exited 0 without ever running a job: its registration is removed."""
    DEREGISTRATION_TIMEOUT = "deregistration_timeout"
    """GitHub kept failing to remove a deleted runner's registration for
    ``--runner-deregistration-timeout``: the finalizer is released anyway."""


EVENT_REASONS: Final[Mapping[Mode, Reason]] = {
    Mode.EXITED: Reason.RUNNER_POD_FAILED,
    Mode.EVICTED: Reason.RUNNER_POD_EVICTED,
    Mode.REJECTED: Reason.RUNNER_POD_REJECTED,
    Mode.POD_FAILED: Reason.RUNNER_POD_FAILED,
    Mode.INIT_FAILED: Reason.RUNNER_INIT_FAILED,
    Mode.START_TIMEOUT: Reason.RUNNER_START_TIMEOUT,
    Mode.NOT_ONLINE: Reason.RUNNER_NOT_ONLINE,
    Mode.REGISTRATION_LOST: Reason.RUNNER_REGISTRATION_LOST,
    Mode.POD_DELETED: Reason.RUNNER_POD_DELETED,
    Mode.NODE_LOST: Reason.RUNNER_NODE_LOST,
    Mode.EXITED_WITHOUT_JOB: Reason.RUNNER_EXITED_WITHOUT_JOB,
    Mode.DEREGISTRATION_TIMEOUT: Reason.REGISTRATION_ABANDONED,
}
"""The Event reason each mode is reported with (on the EphemeralRunner)."""
