"""A runner's registration with the scale-set service: create it, find it, remove it.

- :meth:`Registrations.register` generates a JIT config named like the runner. A
  RunnerExists answer means a registration of that name outlived its JIT config (a
  crash between generating it and storing it); the config cannot be fetched again, so
  the stale registration is looked up by name, removed when it belongs to the runner's
  scale set, and the name registered anew. One of another scale set is never touched:
  :class:`RunnerNameTaken`.
- :meth:`Registrations.unregister` removes it (:meth:`Registrations.runner_id` finds
  its id, :meth:`Registrations.remove` removes that): RunnerNotFound counts as done (an
  ephemeral runner deregisters itself after its job); JobStillRunning answers False, so
  the caller retries later and never forces a busy runner off.
- :meth:`Registrations.lookup` asks whether the service knows the runner, and whether
  it is online and busy (the health rules' one question to GitHub).

Errors: ``ersctl.api.FieldError`` for unusable credentials or spec fields,
``ersctl.scaleset.ports.ServiceError`` for service failures. No JIT config is
ever logged, recorded or put in an exception message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ersctl.api import EphemeralRunner, FieldError
from ersctl.ephemeralrunner import pods
from ersctl.ephemeralrunner.ports import RunnerServices
from ersctl.kube.reconcile import EventRecorder
from ersctl.reasons import Reason
from ersctl.scaleset.ports import RunnerNameTakenError, RunnerService
from ghalistener.actions.types import JitConfig, RunnerReference

log = logging.getLogger(__name__)

SecretGetter = Callable[[str, str], "dict[str, Any] | None"]


class RetryLater(Exception):
    """A transient state: the runtime requeues the key with backoff."""


class RunnerNameTaken(RetryLater):
    """The runner's name is registered to another scale set: this runner cannot run."""


class Registrations:
    """See the module docstring. Thread-safe if its collaborators are."""

    def __init__(
        self, *, services: RunnerServices, get_secret: SecretGetter, events: EventRecorder
    ) -> None:
        self._services = services
        self._get_secret = get_secret
        self._events = events

    def register(self, runner: EphemeralRunner) -> JitConfig:
        """A fresh JIT registration named ``runner.name`` in its scale set."""
        with self._services.service_for(runner) as service:
            scale_set, folder = scale_set_id(runner), work_folder(runner)
            try:
                return service.generate_jit_config(scale_set, runner.name, folder)
            except RunnerNameTakenError:
                self._remove_stale(runner, service, scale_set)
            return service.generate_jit_config(scale_set, runner.name, folder)

    def unregister(self, runner: EphemeralRunner) -> bool:
        """Remove ``runner``'s registration; True when gone, False while it runs a job."""
        return self.remove(runner, self.runner_id(runner))

    def runner_id(self, runner: EphemeralRunner) -> int:
        """The id of ``runner``'s registration: its status's, else its JIT Secret's (a
        crash before the status recorded it), else the service's runner of its name in
        its scale set; 0 when it was never registered."""
        return int(runner.runner_id) or self._unrecorded_id(runner)

    def remove(self, runner: EphemeralRunner, runner_id: int) -> bool:
        """Remove registration ``runner_id`` of ``runner``; True when gone (or 0: never
        registered), False while it runs a job."""
        if not runner_id:
            return True
        with self._services.service_for(runner) as service:
            if not service.remove_runner(runner_id):
                return False
        log.info("removed runner %s (id %d) from the service", runner.key, runner_id)
        return True

    def lookup(self, runner: EphemeralRunner) -> RunnerReference | None:
        """The service's runner named like ``runner`` in its scale set; None when the
        service knows none (another scale set's runner of that name is not it)."""
        with self._services.service_for(runner) as service:
            found = service.get_runner_by_name(runner.name)
        if found is None or found.runner_scale_set_id not in (0, scale_set_id(runner)):
            return None
        return found

    def _unrecorded_id(self, runner: EphemeralRunner) -> int:
        """The id of a registration the status never recorded (a crash before it did)."""
        secret = self._get_secret(runner.namespace, runner.name)
        found = pods.registration_from_secret(secret) if secret else None
        if found:
            return found[0]
        try:
            with self._services.service_for(runner) as service:
                existing = service.get_runner_by_name(runner.name)
        except FieldError as exc:
            # No usable credentials, no recorded id, no JIT Secret: it was never
            # registered with these credentials. Not letting the runner go would block
            # its deletion (and its namespace's) for good.
            log.warning("runner %s: assuming it was never registered: %s", runner.key, exc)
            return 0
        if existing is None or existing.runner_scale_set_id not in (0, scale_set_id(runner)):
            return 0  # none, or another scale set's runner of the same name: not ours
        return int(existing.id)

    def _remove_stale(
        self, runner: EphemeralRunner, service: RunnerService, scale_set: int
    ) -> None:
        existing = service.get_runner_by_name(runner.name)
        if existing is None:
            raise RetryLater(f"runner name {runner.name} was taken and is free again: retry")
        if existing.runner_scale_set_id not in (0, scale_set):
            raise RunnerNameTaken(
                f"a runner named {runner.name} is registered to scale set "
                f"{existing.runner_scale_set_id}, not {scale_set}"
            )
        log.info("replacing stale registration %d of %s", existing.id, runner.key)
        self._events.event(
            runner,
            type="Normal",
            reason=Reason.REGISTRATION_REPLACED,
            message=f"runner id {existing.id} had lost its JIT config; registering anew",
        )
        service.remove_runner(existing.id)


def scale_set_id(runner: EphemeralRunner) -> int:
    """``spec.runnerScaleSetId``; FieldError unless a positive integer."""
    value = runner.spec.get("runnerScaleSetId")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise FieldError("spec.runnerScaleSetId", f"must be a positive integer, got {value!r}")
    return value


def work_folder(runner: EphemeralRunner) -> str:
    """The runner container's workingDir when set (as ARC), else the service default."""
    for container in (runner.spec.get("spec") or {}).get("containers") or ():
        if isinstance(container, dict) and container.get("name") == pods.RUNNER_CONTAINER:
            return str(container.get("workingDir") or "_work")
    return "_work"
