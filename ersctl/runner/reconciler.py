"""The EphemeralRunner reconciler: one registration, one Secret, one Pod per runner.

``reconcile(Request(namespace, name))`` for an EphemeralRunner (ER), in order:

1. Gone -> done. Being deleted -> :meth:`RunnerReconciler._finalize`: the registration
   finalizer first removes the runner from the service (RunnerNotFound counts as done;
   JobStillRunning waits and retries later, it never forces a busy runner off), then
   the ER finalizer deletes the Pod and the Secret and lets the ER go.
2. Done (Succeeded, Failed, Outdated) -> delete its Pod and Secret; nothing else.
3. Both finalizers present (added in one patch).
4. Registration: the JIT Secret exists, else a JIT config is generated (runner name =
   ER name) and stored in a new Secret owned by the ER. A RunnerExists answer means a
   registration of that name outlived its JIT config (a crash between generating it
   and storing it); its config cannot be fetched again, so the stale registration is
   looked up by name, removed when it belongs to this scale set, and the name is
   registered anew. ``status.runnerId``/``runnerName`` follow the Secret.
5. Failures: with ``max_failures`` recorded the ER turns Failed; otherwise a new Pod
   waits out the backoff since the latest failure.
6. The Pod: created when absent; otherwise its state decides (``ersctl.runner.phases``).

Phase and finalizer writes carry the ER's resourceVersion, so a decision made on a
stale read fails with a conflict and is retried on fresh state. Nothing here logs,
records or raises the JIT config: only runner names and ids.
"""

from __future__ import annotations

import contextlib
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
from ersctl.errors import ConflictError
from ersctl.ports import EventRecorder, Request, Result
from ersctl.runner import pods
from ersctl.runner.phases import (
    REASON_TOO_MANY_FAILURES,
    FailurePolicy,
    Finished,
    PodFailed,
    PodState,
    SyncStatus,
    decide,
    format_time,
    seconds_until_next_pod,
)
from ersctl.runner.ports import PodStore, RunnerService, RunnerServices, RunnerStore, SecretStore
from ghalistener.actions.errors import JobStillRunningError, RunnerExistsError, RunnerNotFoundError
from ghalistener.actions.types import JitConfig

log = logging.getLogger(__name__)

FINALIZERS: Final = (ER_FINALIZER, ER_REGISTRATION_FINALIZER)
BUSY_RETRY: Final = 30.0
"""Seconds between attempts to remove a runner that is still running a job (ARC: 30 s)."""
REASON_INVALID_TEMPLATE: Final = "InvalidPodTemplate"


class RetryLater(Exception):
    """A transient state: the runtime requeues the key with backoff."""


class RunnerReconciler:
    """Implements ``ersctl.ports.Reconciler`` for EphemeralRunners. Thread-safe if its
    ports are; the runtime never runs two reconciles of one runner at once."""

    def __init__(
        self,
        *,
        runners: RunnerStore,
        pods: PodStore,
        secrets: SecretStore,
        services: RunnerServices,
        events: EventRecorder,
        policy: FailurePolicy | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._runners = runners
        self._pods = pods
        self._secrets = secrets
        self._services = services
        self._events = events
        self._policy = policy or FailurePolicy()
        self._clock = clock

    def reconcile(self, request: Request) -> Result:
        """See the module docstring. Raises to be retried with backoff."""
        runner = self._runners.get_runner(request.namespace, request.name)
        if runner is None:
            return Result()
        if runner.is_deleting:
            return self._finalize(runner)
        if runner.is_done:
            self._delete_resources(runner)
            return Result()
        runner = self._ensure_finalizers(runner)
        try:
            secret = self._ensure_registration(runner)
            runner = self._record_registration(runner, secret)
            return self._drive_pod(runner, secret_name=secret["metadata"]["name"])
        except FieldError as exc:
            self._warn(runner, "InvalidRunner", str(exc))
            raise

    # -- deletion -------------------------------------------------------------------

    def _finalize(self, runner: EphemeralRunner) -> Result:
        if runner.has_finalizer(ER_REGISTRATION_FINALIZER):
            if not self._unregister(runner):
                log.info("runner %s is still running a job; retrying removal", runner.key)
                return Result(requeue_after=BUSY_RETRY)
            runner = self._remove_finalizer(runner, ER_REGISTRATION_FINALIZER)
        if runner.has_finalizer(ER_FINALIZER):
            self._delete_resources(runner)
            self._remove_finalizer(runner, ER_FINALIZER)
        return Result()

    def _unregister(self, runner: EphemeralRunner) -> bool:
        """Remove ``runner``'s registration; False while it runs a job."""
        runner_id = int(runner.runner_id) or self._registered_id(runner)
        if not runner_id:
            return True  # never registered: nothing to remove
        try:
            self._service(runner).remove_runner(runner_id)
        except RunnerNotFoundError:
            pass  # already gone (an ephemeral runner deregisters after its job)
        except JobStillRunningError:
            return False
        log.info("removed runner %s (id %d) from the service", runner.key, runner_id)
        return True

    def _registered_id(self, runner: EphemeralRunner) -> int:
        """The id of a registration the status never recorded (a crash before it did)."""
        secret = self._secrets.get_secret(runner.namespace, runner.name)
        found = pods.registration_from_secret(secret) if secret else None
        if found:
            return found[0]
        existing = self._service(runner).get_runner_by_name(runner.name)
        if existing is None or existing.runner_scale_set_id not in (0, _scale_set_id(runner)):
            return 0  # none, or another scale set's runner of the same name: not ours
        return int(existing.id)

    def _remove_finalizer(self, runner: EphemeralRunner, finalizer: str) -> EphemeralRunner:
        kept = [f for f in runner.finalizers if f != finalizer]
        return self._runners.patch_runner(
            runner, _locked(runner, {"metadata": {"finalizers": kept}})
        )

    def _delete_resources(self, runner: EphemeralRunner) -> None:
        """Delete the runner's Pod and JIT Secret when they exist.

        The owner references would let the garbage collector do this once the ER is
        gone; deleting now frees the node and the JIT config as soon as the runner
        ends. Reading first keeps a done runner's later reconciles free of writes.
        """
        pod = self._pods.get_pod(runner.namespace, runner.name)
        if pod is not None and not (pod.get("metadata") or {}).get("deletionTimestamp"):
            self._pods.delete_pod(runner.namespace, runner.name)
        if self._secrets.get_secret(runner.namespace, runner.name) is not None:
            self._secrets.delete_secret(runner.namespace, runner.name)

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
        jit = self._generate(runner)
        body = pods.build_jit_secret(
            runner,
            runner_id=int(jit.runner_id),
            runner_name=jit.runner_name,
            scale_set_id=_scale_set_id(runner),
            encoded_jit_config=jit.encoded_jit_config,
        )
        created = self._secrets.create_secret(body)
        log.info("registered runner %s (id %d)", runner.key, jit.runner_id)
        return created

    def _generate(self, runner: EphemeralRunner) -> JitConfig:
        service, scale_set = self._service(runner), _scale_set_id(runner)
        try:
            return service.generate_jit_runner_config(scale_set, runner.name, _work_folder(runner))
        except RunnerExistsError:
            self._replace_stale_registration(runner, service, scale_set)
        return service.generate_jit_runner_config(scale_set, runner.name, _work_folder(runner))

    def _replace_stale_registration(
        self, runner: EphemeralRunner, service: RunnerService, scale_set: int
    ) -> None:
        existing = service.get_runner_by_name(runner.name)
        if existing is None:
            raise RetryLater(f"runner name {runner.name} was taken and is free again: retry")
        if existing.runner_scale_set_id not in (0, scale_set):
            message = (
                f"a runner named {runner.name} is registered to scale set "
                f"{existing.runner_scale_set_id}, not {scale_set}; deleting this runner"
            )
            self._warn(runner, "RunnerNameTaken", message)
            self._runners.delete_runner(runner)
            raise RetryLater(message)
        log.info("replacing stale registration %d of %s", existing.id, runner.key)
        self._events.event(
            runner,
            type="Normal",
            reason="RegistrationReplaced",
            message=f"runner id {existing.id} had lost its JIT config; registering anew",
        )
        with contextlib.suppress(RunnerNotFoundError):
            service.remove_runner(existing.id)

    def _record_registration(
        self, runner: EphemeralRunner, secret: dict[str, Any]
    ) -> EphemeralRunner:
        found = pods.registration_from_secret(secret)
        assert found is not None  # _ensure_registration returns only readable Secrets
        runner_id, runner_name = found
        if (int(runner.runner_id), runner.runner_name) == (runner_id, runner_name):
            return runner
        patch = {"status": {"runnerId": runner_id, "runnerName": runner_name}}
        return self._runners.patch_runner_status(runner, _locked(runner, patch))

    # -- the pod ----------------------------------------------------------------------

    def _drive_pod(self, runner: EphemeralRunner, *, secret_name: str) -> Result:
        failures = runner.failures
        if self._policy.exhausted(len(failures)):
            self._mark_failed(runner, len(failures))
            return Result()
        doc = self._pods.get_pod(runner.namespace, runner.name)
        if doc is None:
            wait = seconds_until_next_pod(failures, now=self._clock(), policy=self._policy)
            if wait > 0:
                return Result(requeue_after=wait)
            return self._create_pod(runner, secret_name=secret_name)
        return self._apply(runner, decide(runner, PodState.from_pod(doc)))

    def _create_pod(self, runner: EphemeralRunner, *, secret_name: str) -> Result:
        try:
            body = pods.build_runner_pod(runner, secret_name=secret_name)
        except FieldError as exc:
            self._warn(runner, REASON_INVALID_TEMPLATE, str(exc))
            self._set_status(
                runner, phase=ERPhase.FAILED, reason=REASON_INVALID_TEMPLATE, message=str(exc)
            )
            return Result()
        try:
            self._pods.create_pod(body)
        except ConflictError as exc:
            # A Pod of that name we did not see: it is ours from an earlier pass, or a
            # stranger's. Either way its next event (or this retry) decides.
            raise RetryLater(f"pod {runner.key} exists already") from exc
        log.info("created pod for runner %s", runner.key)
        return Result()

    def _apply(self, runner: EphemeralRunner, decision: object) -> Result:
        if isinstance(decision, SyncStatus):
            self._set_status(
                runner,
                phase=decision.phase,
                ready=decision.ready,
                reason=decision.reason,
                message=decision.message,
            )
        elif isinstance(decision, Finished):
            self._set_status(
                runner,
                phase=decision.phase,
                ready=False,
                reason=decision.reason,
                message=decision.message,
            )
            if decision.phase == ERPhase.OUTDATED:
                self._warn(runner, decision.reason, decision.message)
            self._delete_resources(runner)
        elif isinstance(decision, PodFailed):
            return self._record_failure(runner, decision)
        return Result()

    def _record_failure(self, runner: EphemeralRunner, failed: PodFailed) -> Result:
        self._pods.delete_pod(runner.namespace, runner.name, uid=failed.pod_uid)
        count = len({*runner.failures, failed.pod_uid})
        status: dict[str, Any] = {
            "failures": {failed.pod_uid: format_time(self._clock())},
            "ready": False,
            "reason": failed.reason,
            "message": failed.message,
        }
        runner = self._runners.patch_runner_status(runner, {"status": status})
        self._events.event(
            runner,
            type="Warning",
            reason="RunnerPodFailed",
            message=f"runner pod failed ({failed.reason}); failure {count} of "
            f"{self._policy.max_failures}",
        )
        if self._policy.exhausted(count):
            self._mark_failed(runner, count)
            return Result()
        return Result(requeue_after=self._policy.delay(count))

    def _mark_failed(self, runner: EphemeralRunner, count: int) -> None:
        message = f"the runner pod failed {count} times"
        self._set_status(
            runner, phase=ERPhase.FAILED, reason=REASON_TOO_MANY_FAILURES, message=message
        )
        self._warn(runner, REASON_TOO_MANY_FAILURES, message)
        self._delete_resources(runner)

    # -- helpers ----------------------------------------------------------------------

    def _set_status(
        self,
        runner: EphemeralRunner,
        *,
        phase: str,
        reason: str,
        message: str,
        ready: bool = False,
    ) -> None:
        status = {"phase": phase, "ready": ready, "reason": reason, "message": message}
        self._runners.patch_runner_status(runner, _locked(runner, {"status": status}))
        log.info("runner %s is %s", runner.key, phase)

    def _service(self, runner: EphemeralRunner) -> RunnerService:
        return self._services.for_runner(runner)

    def _warn(self, runner: EphemeralRunner, reason: str, message: str) -> None:
        log.warning("runner %s: %s: %s", runner.key, reason, message)
        self._events.event(runner, type="Warning", reason=reason, message=message)


def _locked(runner: EphemeralRunner, patch: dict[str, Any]) -> dict[str, Any]:
    """``patch`` with ``runner``'s resourceVersion as an optimistic lock."""
    metadata = dict(patch.get("metadata") or {})
    metadata["resourceVersion"] = runner.resource_version
    return {**patch, "metadata": metadata}


def _scale_set_id(runner: EphemeralRunner) -> int:
    value = runner.spec.get("runnerScaleSetId")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise FieldError("spec.runnerScaleSetId", f"must be a positive integer, got {value!r}")
    return value


def _work_folder(runner: EphemeralRunner) -> str:
    """The runner container's workingDir when set (as ARC), else the service default."""
    for container in (runner.spec.get("spec") or {}).get("containers") or ():
        if isinstance(container, dict) and container.get("name") == pods.RUNNER_CONTAINER:
            return str(container.get("workingDir") or "_work")
    return "_work"
