"""Deleting runners: terminated ones directly, live ones after the service lets them go.

A live runner (pending or running) is first removed from GitHub's scale-set service
and only then deleted, so the service never keeps a registration for a runner that
no longer exists; a runner whose removal is refused with JobStillRunning is left to
finish its job. A runner that never registered (``runnerId`` 0) has nothing to
remove and is deleted directly. A batch resolves the set's credentials once (one
Secret read, ``RunnerServices.service_for``), not once per runner.

Every function tries all the runners it was given before it raises: one refused
delete must not strand the rest. The first ``Failure`` is re-raised at the end
(the runtime requeues with backoff). A ``FieldError`` (unusable credentials) and a
``NotLeaderError`` (the lease is lost) stop at once: every other runner would fail the
same way, and the second must not be retried at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from ersctl.api import EphemeralRunner, EphemeralRunnerSet
from ersctl.ephemeralrunnerset.classification import RunnerStates, is_busy, registered_id
from ersctl.ephemeralrunnerset.ports import Writer
from ersctl.ephemeralrunnerset.scaling import ScaleDown
from ersctl.kube.errors import NotLeaderError
from ersctl.platform.errors import Failure
from ersctl.scaleset.ports import RunnerService, RunnerServices
from ghalistener.actions.types import JitConfig, RunnerReference

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Removal:
    """What a cleanup did: runners deleted, and runners left alone because they are busy."""

    deleted: int = 0
    busy: int = 0


def delete_runners(writer: Writer, runners: Iterable[EphemeralRunner]) -> int:
    """Delete ``runners`` (terminated ones: no service call); return how many were deleted."""
    return sum(_attempt_all(runners, lambda runner: _delete(writer, runner)))


def remove_and_delete(service: RunnerService, writer: Writer, runner: EphemeralRunner) -> bool:
    """Remove ``runner`` from the service, then delete it. False when it is busy (kept)."""
    runner_id = registered_id(runner)
    if runner_id != 0 and not service.remove_runner(runner_id):
        log.info("runner %s is still running a job; leaving it", runner.key)
        return False
    return _delete(writer, runner)


def clean_up_runners(
    services: RunnerServices, writer: Writer, ers: EphemeralRunnerSet, states: RunnerStates
) -> Removal:
    """Delete terminated runners; remove pending and idle running ones; keep busy ones
    (``ersctl.ephemeralrunnerset.classification.is_busy``, the rule scale-down uses too).

    Used when the set is deleted, when a new runner spec is applied, and while the set
    is Outdated. Runners already being deleted are left to their finalizers. When a
    registered runner needs the service, the credentials are resolved before anything
    is deleted: a ``FieldError`` for an absent or malformed Secret leaves every runner
    as it was.
    """
    with_job = [r for r in (*states.pending, *states.running) if is_busy(r)]
    live = [r for r in (*states.pending, *states.running) if not is_busy(r)]
    # Credentials first: unusable ones must stop the pass before its first write.
    with _service(services, ers, live) as service:
        deleted = delete_runners(writer, states.terminated)
        outcomes = _attempt_all(live, lambda r: remove_and_delete(service, writer, r))
    return Removal(deleted=deleted + sum(outcomes), busy=len(with_job) + outcomes.count(False))


def collect_failed(
    services: RunnerServices,
    writer: Writer,
    ers: EphemeralRunnerSet,
    runners: Sequence[EphemeralRunner],
    on_deleted: Callable[[EphemeralRunner], None],
) -> Removal:
    """Remove Failed ``runners`` from the service and delete them, calling ``on_deleted``
    for each one deleted (as it happens: a later failure must not hide it).

    Their registration cannot run a job any more; the runner controller removes it when
    the runner fails, best effort, so this is usually a 404 the service shrugs off. A
    runner the service still holds a job for (JobStillRunning) is kept.
    """

    def collect(runner: EphemeralRunner) -> bool:
        deleted = remove_and_delete(service, writer, runner)
        if deleted:
            on_deleted(runner)
        return deleted

    with _service(services, ers, runners) as service:
        outcomes = _attempt_all(runners, collect)
    return Removal(deleted=sum(outcomes), busy=outcomes.count(False))


def scale_down(
    services: RunnerServices, writer: Writer, ers: EphemeralRunnerSet, decision: ScaleDown
) -> Removal:
    """Remove up to ``decision.count`` runners, trying ``decision.candidates`` in order."""
    removed = busy = 0
    errors: list[Failure] = []
    with _service(services, ers, decision.candidates) as service:
        for runner in decision.candidates:
            if removed == decision.count:
                break
            try:
                if remove_and_delete(service, writer, runner):
                    removed += 1
                else:
                    busy += 1
            except NotLeaderError:
                raise
            except Failure as exc:
                errors.append(exc)
    _raise_first(errors)
    return Removal(deleted=removed, busy=busy)


class _NoService:
    """Stands in when no runner of a batch is registered: nothing to ask the service."""

    def generate_jit_config(
        self, scale_set_id: int, name: str, work_folder: str = "_work"
    ) -> JitConfig:
        raise AssertionError("a cleanup never registers runners")

    def get_runner_by_name(self, name: str) -> RunnerReference | None:
        raise AssertionError("a cleanup never looks runners up")

    def remove_runner(self, runner_id: int) -> bool:
        raise AssertionError(f"runner {runner_id} is registered; the batch needed a service")


def _service(
    services: RunnerServices, ers: EphemeralRunnerSet, runners: Sequence[EphemeralRunner]
) -> AbstractContextManager[RunnerService]:
    """The set's service for one batch (one Secret read), if any runner is registered."""
    if any(registered_id(runner) != 0 for runner in runners):
        return services.service_for(ers)
    return nullcontext(_NoService())


def _delete(writer: Writer, runner: EphemeralRunner) -> bool:
    writer.delete_runner(runner)
    return True


def _attempt_all(
    runners: Iterable[EphemeralRunner], action: Callable[[EphemeralRunner], bool]
) -> list[bool]:
    outcomes: list[bool] = []
    errors: list[Failure] = []
    for runner in runners:
        try:
            outcomes.append(action(runner))
        except NotLeaderError:
            raise
        except Failure as exc:
            log.warning("cleaning up runner %s failed: %s", runner.key, exc)
            errors.append(exc)
    _raise_first(errors)
    return outcomes


def _raise_first(errors: list[Failure]) -> None:
    if errors:
        if len(errors) > 1:
            errors[0].add_note(f"{len(errors) - 1} more runner operation(s) failed")
        raise errors[0]
