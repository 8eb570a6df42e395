"""Every Kubernetes Event reason the controllers record, in one enum. Pure.

An Event's reason is an interface: people select on it (``kubectl get events
--field-selector reason=ScaleUpSuppressed``) and alert on it. Where ARC writes the same
thing (its EphemeralRunner ``status.reason`` ``TooManyPodFailures``) it is ARC's
spelling, and a reason that doubles as a
status value (an AutoscalingRunnerSet's ``status.state``, a runner's
``status.reason``, the ``RunnersFailing`` condition's reason) is this member too, so a
string is spelled once. The event recorder takes only these members (mypy holds every
call to that), so a new reason is added here, not written at a call site.
"""

from __future__ import annotations

from ersctl.api import EXITED_WITHOUT_JOB_REASON
from ersctl.kube.reconcile import EventReason


class Reason(EventReason):
    """An Event reason (the object it is recorded on in each group's comment)."""

    # EphemeralRunnerSet
    SCALED_UP = "ScaledUp"
    SCALED_DOWN = "ScaledDown"
    SCALE_UP_SUPPRESSED = "ScaleUpSuppressed"
    STALE_OUTDATED_DELETED = "StaleOutdatedRunnersDeleted"
    REVISION_APPLIED = "RevisionApplied"
    RUNNERS_CLEANED_UP = "RunnersCleanedUp"
    STATUS_REPAIRED = "MalformedStatusOverwritten"
    CREATE_FAILED = "FailedCreateRunner"
    FIELDS_PRUNED = "GuardFieldsPruned"
    FAILED_RUNNER_DELETED = "FailedRunnerDeleted"
    RUNNERS_FAILING = "RunnersFailing"
    RUNNERS_RECOVERED = "RunnersRecovered"

    # EphemeralRunnerSet and AutoscalingRunnerSet
    INVALID_SPEC = "InvalidSpec"
    RECONCILE_FAILED = "ReconcileFailed"

    # EphemeralRunner
    INVALID_RUNNER = "InvalidRunner"
    INVALID_POD_TEMPLATE = "InvalidPodTemplate"
    RUNNER_NAME_TAKEN = "RunnerNameTaken"
    REGISTRATION_REPLACED = "RegistrationReplaced"
    TOO_MANY_POD_FAILURES = "TooManyPodFailures"
    RUNNER_VERSION_DEPRECATED = "RunnerVersionDeprecated"
    RUNNER_FAILED_WITH_JOB = "RunnerFailedWithJob"
    RUNNER_POD_FAILED = "RunnerPodFailed"
    RUNNER_POD_EVICTED = "RunnerPodEvicted"
    RUNNER_POD_REJECTED = "RunnerPodRejected"
    RUNNER_INIT_FAILED = "RunnerInitFailed"
    INIT_CONTAINER_FAILED = "InitContainerFailed"  # the runner's status.reason
    RUNNER_START_TIMEOUT = "RunnerStartTimeout"
    RUNNER_NOT_ONLINE = "RunnerNotOnline"
    RUNNER_REGISTRATION_LOST = "RunnerRegistrationLost"
    RUNNER_POD_DELETED = "RunnerPodDeleted"
    RUNNER_NODE_LOST = "RunnerNodeLost"
    RUNNER_EXITED_WITHOUT_JOB = EXITED_WITHOUT_JOB_REASON
    REGISTRATION_ABANDONED = "RegistrationAbandoned"

    # AutoscalingListener
    INVALID_LISTENER = "InvalidListener"
    LISTENER_ROLLED = "ListenerRolled"
    LISTENER_EXITED = "ListenerExited"

    # AutoscalingRunnerSet (each also a status.state value)
    RUNNING = "Running"
    SECRET_UNUSABLE = "CredentialsUnusable"  # noqa: S105
    RUNNER_GROUP_NOT_FOUND = "RunnerGroupNotFound"
    NAME_TAKEN = "ScaleSetNameTaken"
    GITHUB_FAILED = "GitHubCallFailed"
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
