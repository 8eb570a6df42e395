"""The EphemeralRunner reconciler: one registration, one Secret, one Pod per runner.

``reconcile(Request(namespace, name))`` for an EphemeralRunner (ER), in order:

1. Gone -> done. Being deleted -> :meth:`RunnerReconciler._finalize`: the registration
   finalizer first lets the registration go (``RunnerHealer.deregister``: not at all,
   in the background, or now, before a Pod that may run a job), then
   the ER finalizer deletes the Pod and the Secret, and in Kubernetes container mode
   the job Pods and Secrets the container hooks made for it (retried every 5 s until
   they are gone, as ARC does), and lets the ER go.
2. Done (Succeeded, Failed, Outdated) -> delete its Pod and Secret; nothing else.
3. Both finalizers present (added in one patch).
4. Registration: the JIT Secret exists, else a JIT config is generated (runner name =
   ER name, RunnerExists handled as ``ersctl.ephemeralrunner.registration`` says) and stored in
   a new Secret owned by the ER. ``status.runnerId``/``runnerName`` follow the Secret.
5. Failures: with ``max_failures`` recorded the ER turns Failed (and its registration
   is removed); otherwise a new Pod waits out the backoff since the latest failure.
6. The Pod: created when absent (unless deleted under a runner with a job); otherwise
   its state, the runner's job fields (``ersctl.ephemeralrunner.phases``) and the timed rules
   (``ersctl.ephemeralrunner.health``, acted on by ``ersctl.ephemeralrunner.healing``) decide: an idle
   runner is Pending, one with a job Running (its Pod protected from disruption). A Pod
   that fails while its runner holds a job is not replaced (a JIT registration serves
   one job): the ER is deleted, as ARC does, and the set makes another.

Phase and finalizer writes carry the ER's resourceVersion, so a decision made on a
stale read fails with a conflict and is retried on fresh state; the exception is a
failed Pod's record, which must land once its Pod is deleted, and the Failed phase that
rides in it when that failure reaches the limit. Nothing here logs,
records or raises the JIT config: only runner names and ids.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from ersctl.api import (
    ER_FINALIZER,
    ER_REGISTRATION_FINALIZER,
    EphemeralRunner,
    ERPhase,
    FieldError,
)
from ersctl.ephemeralrunner import pods
from ersctl.ephemeralrunner.deregistration import BUSY_RETRY
from ersctl.ephemeralrunner.healing import RunnerHealer
from ersctl.ephemeralrunner.health import HealthPolicy
from ersctl.ephemeralrunner.phases import (
    Decision,
    FailurePolicy,
    Finished,
    PodFailed,
    PodState,
    SyncStatus,
    Wait,
    format_time,
    seconds_until_next_pod,
)
from ersctl.ephemeralrunner.ports import (
    HookResources,
    NoRunnerMetrics,
    PodStore,
    RunnerMetricsSink,
    RunnerServices,
    RunnerStore,
    SecretStore,
)
from ersctl.ephemeralrunner.registration import (
    Registrations,
    RunnerNameTaken,
    scale_set_id,
)
from ersctl.kube.errors import ConflictError, NotFoundError
from ersctl.kube.reconcile import EventRecorder, Request, Result
from ersctl.reasons import Reason
from ghalistener.actions.types import JitConfig

log = logging.getLogger(__name__)

FINALIZERS: Final = (ER_FINALIZER, ER_REGISTRATION_FINALIZER)
POD_EXISTS_RETRY: Final = 5.0
HOOK_CLEANUP_RETRY: Final = 5.0
"""Seconds between looks at container hook resources still being deleted (ARC: 5 s)."""


class RunnerReconciler:
    """Implements ``ersctl.kube.reconcile.Reconciler`` for EphemeralRunners. Thread-safe if its
    ports are; the runtime never runs two reconciles of one runner at once."""

    def __init__(
        self,
        *,
        runners: RunnerStore,
        pods: PodStore,
        secrets: SecretStore,
        hooks: HookResources,
        services: RunnerServices,
        events: EventRecorder,
        policy: FailurePolicy | None = None,
        health: HealthPolicy | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        metrics: RunnerMetricsSink | None = None,
        removal_workers: int = 0,
    ) -> None:
        self._runners = runners
        self._pods = pods
        self._secrets = secrets
        self._hooks = hooks
        self._events = events
        self._policy = policy or FailurePolicy()
        self._clock = clock
        self._metrics = metrics or NoRunnerMetrics()
        # Runner key -> uid of a runner whose JIT Secret this controller deleted or
        # found absent after it was done (see _delete_resources).
        self._secret_gone: dict[str, str] = {}
        # Runner key -> uid of the Pod last deleted for it (a finished runner's, a failed
        # one's): the cache can still show that Pod to the next look (the set's deletion
        # of the runner a moment later, the failure limit's cleanup), which would delete
        # it again and get a 404.
        self._pod_deleted: dict[str, str] = {}
        self._registrations = Registrations(
            services=services, get_secret=secrets.get_secret, events=events
        )
        self._health = RunnerHealer(
            runners=runners,
            pods=pods,
            registrations=self._registrations,
            events=events,
            metrics=self._metrics,
            policy=health or HealthPolicy(),
            clock=clock,
            removal_workers=removal_workers,
        )

    def close(self) -> None:
        """Stop the background work (registrations not yet removed are dropped)."""
        self._health.close()

    def reconcile(self, request: Request) -> Result:
        """See the module docstring. Raises to be retried with backoff."""
        runner = self._runners.get_runner(request.namespace, request.name)
        if runner is None:
            self._secret_gone.pop(str(request), None)
            self._pod_deleted.pop(str(request), None)
            self._health.forget(str(request))
            return Result()
        try:
            return self._reconcile(runner)
        except FieldError as exc:
            # Unusable credentials or spec: say which field, and retry with backoff
            # (a Secret that appears later is not watched, so the retry finds it). The
            # Event only: the runtime logs the failed reconcile (a line here made two).
            self._events.event(
                runner, type="Warning", reason=Reason.INVALID_RUNNER, message=str(exc)
            )
            raise

    def _reconcile(self, runner: EphemeralRunner) -> Result:
        if runner.is_deleting:
            return self._finalize(runner)
        if runner.is_done:
            self._delete_resources(runner)
            return Result()
        runner = self._ensure_finalizers(runner)
        pod = self._pods.get_pod(runner.namespace, runner.name)
        if pod is not None and runner.runner_id:
            # The common case, a runner with its Pod: only the Pod's state matters, so
            # the Secret is not read (a steady-state reconcile is one GET of the runner).
            return self._follow(runner, PodState.from_pod(pod))
        secret = self._ensure_registration(runner)
        runner = self._record_registration(runner, secret)
        if pod is not None:
            return self._follow(runner, PodState.from_pod(pod))
        abandoned = self._health.vanished(runner)
        if abandoned is not None:
            return abandoned
        return self._new_pod(runner, secret=secret)

    # -- deletion -------------------------------------------------------------------

    def _finalize(self, runner: EphemeralRunner) -> Result:
        """Both finalizers go in one patch when nothing has to wait between them (the
        usual case: a second patch would only repeat the first's resourceVersion bump)."""
        done: list[str] = []
        if runner.has_finalizer(ER_REGISTRATION_FINALIZER):
            if not self._health.deregister(runner):
                log.info("runner %s is still running a job; retrying removal", runner.key)
                return Result(requeue_after=BUSY_RETRY)
            done.append(ER_REGISTRATION_FINALIZER)
        if runner.has_finalizer(ER_FINALIZER):
            self._delete_resources(runner)
            if pods.uses_container_hooks(runner) and self._hooks.delete_linked(
                runner.namespace, runner.name
            ):
                # Not tied to the runner by an ownerReference: once the finalizer goes,
                # nothing would ever delete the job Pods (and their Secrets) it started.
                # The registration is gone: its finalizer need not wait with this one.
                log.info("runner %s: waiting for its container hook resources", runner.key)
                self._remove_finalizers(runner, done)
                return Result(requeue_after=HOOK_CLEANUP_RETRY)
            done.append(ER_FINALIZER)
        self._remove_finalizers(runner, done)
        return Result()

    def _remove_finalizers(self, runner: EphemeralRunner, finalizers: list[str]) -> None:
        if finalizers:
            kept = [f for f in runner.finalizers if f not in finalizers]
            patch = _locked(runner, {"metadata": {"finalizers": kept}})
            try:
                self._runners.patch_runner(runner, patch)
            except NotFoundError:
                # Gone meanwhile (someone else released it, or a store without the
                # manager's memory of its own releases read it again): its removal is
                # done, and a retry could only fail again; no WARNING for it.
                log.debug("already deleted: nothing left to finalize")

    def _delete_resources(self, runner: EphemeralRunner) -> None:
        """Delete the runner's Pod and JIT Secret when they exist.

        The owner references would let the garbage collector do this once the ER is
        gone; deleting now frees the node and the JIT config as soon as the runner
        ends. Reading first keeps a done runner's later reconciles free of writes.
        """
        pod = self._pods.get_pod(runner.namespace, runner.name)
        meta = (pod or {}).get("metadata") or {}
        uid = str(meta.get("uid") or "")
        going = bool(meta.get("deletionTimestamp")) or self._pod_deleted.get(runner.key) == uid
        if pod is not None and not going:
            self._pods.delete_pod(runner.namespace, runner.name)
            self._pod_deleted[runner.key] = uid
        # Secrets are not watched, so whether one exists is a GET; a done runner waits
        # for its set to delete it, and without this record every resync would GET
        # its Secret again. Only this controller creates it, and never for a done runner.
        if self._secret_gone.get(runner.key) == runner.uid:
            return
        if self._secrets.get_secret(runner.namespace, runner.name) is not None:
            self._secrets.delete_secret(runner.namespace, runner.name)
        self._secret_gone[runner.key] = runner.uid

    # -- registration -----------------------------------------------------------------

    def _ensure_finalizers(self, runner: EphemeralRunner) -> EphemeralRunner:
        missing = [f for f in FINALIZERS if not runner.has_finalizer(f)]
        if not missing:
            return runner
        patch = {"metadata": {"finalizers": [*runner.finalizers, *missing]}}
        return self._runners.patch_runner(runner, _locked(runner, patch))

    def _ensure_registration(self, runner: EphemeralRunner) -> dict[str, Any]:
        """The runner's JIT Secret, registering the runner first when there is none."""
        secret = self._secrets.get_secret(runner.namespace, runner.name)
        if secret is not None and pods.registration_from_secret(secret) is None:
            log.warning("JIT Secret of %s is unreadable; registering again", runner.key)
            self._secrets.delete_secret(runner.namespace, runner.name)
            secret = None
        if secret is not None:
            return secret
        jit = self._register(runner)
        body = pods.build_jit_secret(
            runner,
            runner_id=int(jit.runner_id),
            runner_name=jit.runner_name,
            scale_set_id=scale_set_id(runner),
            encoded_jit_config=jit.encoded_jit_config,
        )
        created = self._secrets.create_secret(body)
        self._metrics.registered(runner.namespace)
        log.info("registered runner %s (id %d)", runner.key, jit.runner_id)
        return created

    def _register(self, runner: EphemeralRunner) -> JitConfig:
        try:
            return self._registrations.register(runner)
        except RunnerNameTaken as exc:
            # It can never register under this name: let the set make another runner.
            message = f"{exc}; deleting this runner"
            self._events.event(
                runner, type="Warning", reason=Reason.RUNNER_NAME_TAKEN, message=message
            )
            self._runners.delete_runner(runner)
            raise  # logged by the runtime, once

    def _record_registration(
        self, runner: EphemeralRunner, secret: dict[str, Any]
    ) -> EphemeralRunner:
        found = pods.registration_from_secret(secret)
        assert found is not None  # _ensure_registration returns only readable Secrets
        runner_id, runner_name = found
        if (int(runner.runner_id), runner.runner_name) == (runner_id, runner_name):
            return runner
        status: dict[str, Any] = {"runnerId": runner_id, "runnerName": runner_name}
        if not runner.phase:
            status["phase"] = ERPhase.PENDING  # what its new Pod will say: saves a write
        return self._runners.patch_runner_status(runner, _locked(runner, {"status": status}))

    # -- the pod ----------------------------------------------------------------------

    def _new_pod(self, runner: EphemeralRunner, *, secret: dict[str, Any]) -> Result:
        """Create the runner's Pod unless its failures are exhausted or backing off."""
        failures = runner.failures
        if self._policy.exhausted(len(failures)):
            self._mark_failed(runner, len(failures))
            return Result()
        wait = seconds_until_next_pod(failures, now=self._clock(), policy=self._policy)
        if wait > 0:
            return Result(requeue_after=wait)
        return self._create_pod(runner, secret=secret)

    def _create_pod(self, runner: EphemeralRunner, *, secret: dict[str, Any]) -> Result:
        try:
            body = pods.build_runner_pod(runner, secret=secret)
        except FieldError as exc:
            self._warn(runner, Reason.INVALID_POD_TEMPLATE, str(exc))
            self._set_status(
                runner, phase=ERPhase.FAILED, reason=Reason.INVALID_POD_TEMPLATE, message=str(exc)
            )
            return Result()
        try:
            self._pods.create_pod(body)
        except ConflictError:
            # A Pod of that name not yet in our (cached) view: ours from an earlier
            # pass, whose watch event will bring it, or a stranger's, which no event
            # maps to this runner, hence the timed retry (as ARC: 5 s).
            log.info("pod %s exists already; waiting for it", runner.key)
            return Result(requeue_after=POD_EXISTS_RETRY)
        self._metrics.pod_created(runner.namespace)
        log.info("created pod for runner %s", runner.key)
        return Result()

    def _follow(self, runner: EphemeralRunner, pod: PodState) -> Result:
        """Act on the state of ``runner``'s existing ``pod``."""
        decision = self._health.assess(runner, pod)
        if isinstance(decision, Result):
            return decision
        if isinstance(decision, Wait | SyncStatus):
            self._health.protect(runner, pod)
        return self._apply(runner, decision)

    def _apply(self, runner: EphemeralRunner, decision: Decision) -> Result:
        if isinstance(decision, PodFailed):
            return self._record_failure(runner, decision)
        if isinstance(decision, Finished):
            self._finish(runner, decision)
            return Result()
        if isinstance(decision, SyncStatus):
            self._set_status(
                runner,
                phase=decision.phase,
                ready=decision.ready,
                reason=decision.reason,
                message=decision.message,
            )
        return Result(requeue_after=decision.requeue_after)

    def _finish(self, runner: EphemeralRunner, decision: Finished) -> None:
        decision = self._health.finished(runner, decision)
        self._set_status(
            runner,
            phase=decision.phase,
            reason=decision.reason,
            message=decision.message,
        )
        if decision.phase == ERPhase.OUTDATED:
            self._warn(runner, Reason.RUNNER_VERSION_DEPRECATED, decision.message)
        self._delete_resources(runner)

    def _record_failure(self, runner: EphemeralRunner, failed: PodFailed) -> Result:
        detail = failed.detail or f"the runner pod failed ({failed.reason})"
        if runner.has_job:
            # A JIT registration serves one job: no new Pod. Delete the runner (as ARC
            # does): its finalizer waits for the service to let the job go.
            message = f"{detail} during job {runner.job_id}; deleting the runner"
            return self._health.abandon(runner, failed.mode, message, Reason.RUNNER_FAILED_WITH_JOB)
        self._pods.delete_pod(runner.namespace, runner.name, uid=failed.pod_uid)
        self._pod_deleted[runner.key] = failed.pod_uid  # the limit's cleanup may still see it
        count = len({*runner.failures, failed.pod_uid})
        status: dict[str, Any] = {
            "failures": {failed.pod_uid: format_time(self._clock())},
            "ready": False,
            "reason": failed.reason,
            "message": failed.message,
        }
        exhausted = self._policy.exhausted(count)
        if exhausted:
            # The failure and the Failed phase it decides go in one write, not two a
            # millisecond apart. Unlocked, as the failure record always was: once its
            # Pod is deleted the record must land, or the count would lose it.
            status.update(_failed_status(count, failed.reason, failed.message))
        runner = self._runners.patch_runner_status(runner, {"status": status})
        self._metrics.pod_failed(runner.namespace)
        message = f"{detail}; failure {count} of {self._policy.max_failures}"
        self._health.report(runner, failed.mode, message)
        if exhausted:
            self._phase_written(runner, ERPhase.FAILED)
            self._failed(runner, str(status["message"]))
            return Result()
        return Result(requeue_after=self._policy.delay(count))

    def _mark_failed(self, runner: EphemeralRunner, count: int) -> None:
        reason, message = (str(runner.status.get(k) or "") for k in ("reason", "message"))
        status = _failed_status(count, reason, message)
        self._set_status(
            runner, phase=ERPhase.FAILED, reason=status["reason"], message=status["message"]
        )
        self._failed(runner, status["message"])

    def _failed(self, runner: EphemeralRunner, message: str) -> None:
        """What follows a runner's Failed status: its Warning, its registration's removal
        and its resources' deletion."""
        self._warn(runner, Reason.TOO_MANY_POD_FAILURES, message)
        # Its registration can never run a job now: removed in the background, as ARC
        # 0.15 does; the registration finalizer tries again when the set deletes it.
        self._health.remove_in_background(runner)
        self._delete_resources(runner)

    # -- helpers ----------------------------------------------------------------------

    def _set_status(
        self, runner: EphemeralRunner, *, phase: str, reason: str, message: str, ready: bool = False
    ) -> None:
        status = {"phase": phase, "ready": ready, "reason": reason, "message": message}
        self._runners.patch_runner_status(runner, _locked(runner, {"status": status}))
        self._phase_written(runner, phase)

    def _phase_written(self, runner: EphemeralRunner, phase: str) -> None:
        log.info("runner %s is %s", runner.key, phase)
        if phase in (ERPhase.SUCCEEDED, ERPhase.FAILED, ERPhase.OUTDATED):
            self._metrics.runner_finished(runner.namespace, phase)

    def _warn(self, runner: EphemeralRunner, reason: Reason, message: str) -> None:
        log.warning("runner %s: %s: %s", runner.key, reason, message)
        self._events.event(runner, type="Warning", reason=reason, message=message)


def _failed_status(count: int, reason: str, message: str) -> dict[str, Any]:
    """The status of a runner whose Pods failed ``count`` times, the last for ``reason``
    with ``message``. That last reason goes along: the set's Event about this runner,
    once it is collected, quotes this status and is often all that is left to read."""
    last = ": ".join((reason, message)).strip(": ")
    return {
        "phase": ERPhase.FAILED,
        "ready": False,
        "reason": Reason.TOO_MANY_POD_FAILURES,
        "message": f"the runner pod failed {count} times" + (f"; last: {last}" if last else ""),
    }


def _locked(runner: EphemeralRunner, patch: dict[str, Any]) -> dict[str, Any]:
    """``patch`` with ``runner``'s resourceVersion as an optimistic lock."""
    metadata = dict(patch.get("metadata") or {})
    metadata["resourceVersion"] = runner.resource_version
    return {**patch, "metadata": metadata}
