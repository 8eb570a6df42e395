"""Runner health, the I/O shell: acts on the rules of ``ersctl.ephemeralrunner.health``.

The reconciler hands each live runner's Pod to :meth:`RunnerHealer.assess` and gets back
either a ``phases`` decision to apply (a failure to record, a status to write) or the
:class:`~ersctl.kube.reconcile.Result` of an action taken here: a runner looked up at
GitHub once it ran ``--runner-online-timeout`` without a job, a lost node's Pod
force-deleted with its runner, a runner whose registration is spent deleted. It also
protects busy runners' Pods from consolidation (:meth:`RunnerHealer.protect`), notices
a Pod deleted under a live runner (:meth:`RunnerHealer.vanished`), removes the
registration of a runner that exited unused (:meth:`RunnerHealer.finished`) and
decides how a deleted runner's registration goes (:meth:`RunnerHealer.deregister`):
not at all when it went already, in the background when the runner's Pod cannot be
running a job (``ersctl.ephemeralrunner.deregistration``), else now, letting the runner go when
GitHub keeps failing to remove it. Each mode is reported with its Event reason
(``modes.EVENT_REASONS``) and counted in ``ersctl_runner_faults_total{mode}``.

In memory, per runner: the Pod whose runner GitHub said was online (each Pod is looked
up once: a replacement Pod runs a new process, which GitHub's word about the old one
says nothing of) and the runner uid and Pod uid last seen. A new leader starts without
them: it looks idle runners up once more, and a Pod deleted while no controller ran is
made again without an Event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from ersctl.api import EphemeralRunner, FieldError
from ersctl.ephemeralrunner import health
from ersctl.ephemeralrunner.deregistration import BUSY_RETRY, BackgroundRemovals
from ersctl.ephemeralrunner.health import Abandon, CheckOnline, HealthPolicy, NodeLost, Replace
from ersctl.ephemeralrunner.modes import EVENT_REASONS, Mode
from ersctl.ephemeralrunner.phases import Decision, Finished, PodState
from ersctl.ephemeralrunner.pods import DISRUPTION_ANNOTATIONS
from ersctl.ephemeralrunner.ports import PodStore, RunnerMetricsSink, RunnerStore
from ersctl.ephemeralrunner.registration import Registrations
from ersctl.kube.reconcile import EventRecorder, Result
from ersctl.reasons import Reason
from ersctl.scaleset.ports import ServiceError

log = logging.getLogger(__name__)


class RunnerHealer:
    """See the module docstring. Thread-safe as the reconciler needs it: the runtime
    never reconciles one runner in two threads, and each memo entry is one runner's."""

    def __init__(
        self,
        *,
        runners: RunnerStore,
        pods: PodStore,
        registrations: Registrations,
        events: EventRecorder,
        metrics: RunnerMetricsSink,
        policy: HealthPolicy,
        clock: Callable[[], datetime],
        removal_workers: int = 0,
    ) -> None:
        self._runners = runners
        self._pods = pods
        self._registrations = registrations
        self._events = events
        self._metrics = metrics
        self._policy = policy
        self._clock = clock
        self._online: dict[str, str] = {}  # runner key -> uid of the Pod seen online
        self._seen: dict[str, tuple[str, str]] = {}  # runner key -> (its uid, its Pod's uid)
        self._removals = BackgroundRemovals(
            registrations=registrations,
            policy=policy,
            clock=clock,
            on_abandoned=self._abandoned,
            workers=removal_workers,
        )

    def close(self) -> None:
        """Stop removing registrations in the background."""
        self._removals.close()

    def forget(self, key: str) -> None:
        """Drop what is kept about runner ``key`` (it is gone)."""
        self._online.pop(key, None)
        self._seen.pop(key, None)

    def assess(self, runner: EphemeralRunner, pod: PodState) -> Decision | Result:
        """What to do about ``runner``'s ``pod``: a decision for the reconciler to apply,
        or the result of an action taken here."""
        self._seen[runner.key] = (runner.uid, pod.uid)
        assessment = health.assess(
            runner,
            pod,
            now=self._clock(),
            policy=self._policy,
            online_confirmed=self._online.get(runner.key) == pod.uid,
        )
        if isinstance(assessment, CheckOnline):
            verdict = health.online_verdict(
                runner, assessment, self._registrations.lookup(runner), policy=self._policy
            )
            if verdict is None:
                self._online[runner.key] = assessment.pod_uid
                return assessment.then
            assessment = verdict
        if isinstance(assessment, NodeLost):
            return self._node_lost(runner, assessment)
        if isinstance(assessment, Abandon):
            return self.abandon(runner, assessment.mode, assessment.detail)
        return assessment

    def vanished(self, runner: EphemeralRunner) -> Result | None:
        """``runner`` has no Pod: deleted under it? With a job it is deleted (Result);
        without one the deletion is reported, and None lets a new Pod be made."""
        seen_runner, seen_pod = self._seen.pop(runner.key, ("", ""))
        found = health.vanished_pod(runner, seen_pod if seen_runner == runner.uid else "")
        if isinstance(found, Abandon):
            return self.abandon(runner, found.mode, found.detail)
        if isinstance(found, Replace):
            self.report(runner, found.mode, found.detail, warning=False)
        return None

    def protect(self, runner: EphemeralRunner, pod: PodState) -> None:
        """Annotate a busy runner's Pod so consolidation leaves its node alone."""
        if health.protection_due(runner, pod, self._policy):
            patch = {"metadata": {"annotations": dict(DISRUPTION_ANNOTATIONS)}}
            self._pods.patch_pod(runner.namespace, runner.name, patch)
            log.info("runner %s is busy: its pod is protected from disruption", runner.key)

    def finished(self, runner: EphemeralRunner, decision: Finished) -> Finished:
        """``decision`` for a runner whose Pod ended, saying in its reason
        (``RunnerExitedWithoutJob``) that it exited 0 without ever running a job."""
        if health.exit_to_check(runner, decision) and self._exited_unused(runner):
            message = "the runner exited without running a job"
            return replace(decision, reason=Reason.RUNNER_EXITED_WITHOUT_JOB, message=message)
        return decision

    def _exited_unused(self, runner: EphemeralRunner) -> bool:
        """Whether a runner that exited 0 with no job recorded never ran one: GitHub
        still lists it idle. Then its registration is removed now (ARC #4709); it would
        stay listed until its runner is deleted. Unknown to GitHub (an ephemeral runner
        is removed after its job), or busy: it ran one, the listener was late saying so.
        Best effort: on a service error it counts as used (the registration finalizer
        removes the registration when the set deletes the runner)."""
        try:
            found = self._registrations.lookup(runner)
            if found is None or found.busy or not self._registrations.unregister(runner):
                return False
        except (ServiceError, FieldError) as exc:
            log.warning("runner %s keeps its registration until deleted: %s", runner.key, exc)
            return False
        detail = (
            f"the runner exited without running a job; removed runner {runner.runner_id} "
            "from the service"
        )
        self.report(runner, Mode.EXITED_WITHOUT_JOB, detail, warning=False)
        return True

    def deregister(self, runner: EphemeralRunner) -> bool:
        """Let a deleted ``runner``'s registration go; True when its registration
        finalizer may go now, False while its job runs.

        Gone already (``health.registration_released``): nothing is asked. A Pod that
        cannot be running a job (``health.may_run_a_job``): the removal is handed to the
        background and the runner goes now. Else it is removed now, before the Pod goes
        (a job GitHub assigned meanwhile must not die with it). A service or credentials
        error raises (retried with backoff) until ``--runner-deregistration-timeout``
        has passed since the deletion; then the runner is let go with a Warning naming
        its runner id."""
        if health.registration_released(runner):
            return True
        pod = self._pods.get_pod(runner.namespace, runner.name)
        try:
            if health.may_run_a_job(None if pod is None else PodState.from_pod(pod)):
                return self._registrations.unregister(runner)
            runner_id = self._registrations.runner_id(runner)
        except (ServiceError, FieldError) as exc:
            if health.deregistration_left(runner, now=self._clock(), policy=self._policy) > 0:
                raise
            self._abandoned(runner, exc)
            return True
        if runner_id:
            self._removals.push(runner, runner_id)
        return True

    def remove_in_background(self, runner: EphemeralRunner) -> None:
        """Have ``runner``'s registration removed in the background: it can never run a
        job again (its Pod is gone). Best effort: an id that cannot be found now (a
        service error) is left to the registration finalizer."""
        try:
            runner_id = self._registrations.runner_id(runner)
        except (ServiceError, FieldError) as exc:
            log.warning("runner %s keeps its registration until deleted: %s", runner.key, exc)
            return
        if runner_id:
            self._removals.push(runner, runner_id)

    def _abandoned(self, runner: EphemeralRunner, exc: Exception) -> None:
        detail = (
            f"the service failed to remove runner {runner.runner_id} ({runner.name}) for "
            f"{self._policy.deregistration_timeout:g}s after the runner was deleted "
            f"(last: {exc}); letting it go: remove runner {runner.runner_id} at GitHub "
            "if it is still listed"
        )
        self.report(runner, Mode.DEREGISTRATION_TIMEOUT, detail)

    def abandon(
        self, runner: EphemeralRunner, mode: Mode, detail: str, reason: Reason | None = None
    ) -> Result:
        """Delete ``runner``, reporting ``mode`` (under Event ``reason``, when given):
        its finalizer removes the registration once the service lets it go, and the set
        makes another runner."""
        self.report(runner, mode, detail, reason=reason)
        self._runners.delete_runner(runner)
        return Result()

    def report(
        self,
        runner: EphemeralRunner,
        mode: Mode,
        message: str,
        *,
        warning: bool = True,
        reason: Reason | None = None,
    ) -> None:
        """Count ``mode`` and record its Event (``reason``, else the mode's) on ``runner``."""
        self._metrics.runner_fault(runner.namespace, mode)
        if warning:
            log.warning("runner %s: %s: %s", runner.key, mode, message)
        else:
            log.info("runner %s: %s: %s", runner.key, mode, message)
        self._events.event(
            runner,
            type="Warning" if warning else "Normal",
            reason=reason or EVENT_REASONS[mode],
            message=message,
        )

    def _node_lost(self, runner: EphemeralRunner, lost: NodeLost) -> Result:
        found = self._registrations.lookup(runner)
        if found is not None and found.busy:
            # A job may still run on a node that only lost its way to the API server.
            log.info("runner %s: %s, but its job still runs; waiting", runner.key, lost.detail)
            return Result(requeue_after=BUSY_RETRY)
        self._pods.delete_pod(runner.namespace, runner.name, uid=lost.pod_uid, force=True)
        return self.abandon(runner, Mode.NODE_LOST, f"{lost.detail}; deleting the runner")
