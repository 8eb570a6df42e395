"""Classifying an EphemeralRunnerSet's runners (pure: no I/O).

Every owned runner lands in exactly one bucket, checked in this order:

- ``deleting``: ``metadata.deletionTimestamp`` is set (or this controller's delete
  has not reached the cache yet), whatever its phase. It still exists and still holds
  its registration until its finalizers are gone.
- ``running``: phase Running.
- ``finished``: phase Succeeded.
- ``failed``: phase Failed.
- ``outdated``: phase Outdated and created at (or after) the applied actionable
  revision: evidence that the *current* runner spec is rejected by the service.
- ``stale_outdated``: phase Outdated but created before the applied revision: it says
  nothing about the current spec and is simply replaced.
- ``pending``: phase Pending, empty, or anything else (not yet reported).

``latest_patch_id`` is the highest ``actions.github.com/patch-id`` annotation over
*all* runners, deleting ones included: a patch ID that already produced runners must
not be serviced again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ersctl.api import EphemeralRunner, ERPhase, FieldError, PatchID, RunnerID

NO_PATCH_ID = PatchID(0)

_PHASE_BUCKET = {
    ERPhase.RUNNING.value: "running",
    ERPhase.SUCCEEDED.value: "finished",
    ERPhase.FAILED.value: "failed",
}


class RunnerFieldError(FieldError):
    """A field of one owned EphemeralRunner is malformed; the message names the runner,
    so the Warning Event on its set says which object to fix."""

    def __init__(self, runner: str, cause: FieldError) -> None:
        super().__init__(cause.path, cause.problem)
        self.runner = runner

    def __str__(self) -> str:
        return f"EphemeralRunner {self.runner}: {self.path}: {self.problem}"


def _naming(runner: EphemeralRunner, exc: FieldError) -> FieldError:
    return exc if isinstance(exc, RunnerFieldError) else RunnerFieldError(runner.key, exc)


@dataclass(frozen=True, kw_only=True)
class RunnerStates:
    """The owned runners of one EphemeralRunnerSet, by state (see the module docstring)."""

    pending: tuple[EphemeralRunner, ...] = ()
    running: tuple[EphemeralRunner, ...] = ()
    finished: tuple[EphemeralRunner, ...] = ()
    failed: tuple[EphemeralRunner, ...] = ()
    deleting: tuple[EphemeralRunner, ...] = ()
    outdated: tuple[EphemeralRunner, ...] = ()
    stale_outdated: tuple[EphemeralRunner, ...] = ()
    latest_patch_id: PatchID = NO_PATCH_ID

    @property
    def total(self) -> int:
        """Live runners that count toward ``spec.replicas``: pending + running + failed."""
        return len(self.pending) + len(self.running) + len(self.failed)

    @property
    def scale_up_total(self) -> int:
        """``total`` plus runners being deleted: they still hold their registration."""
        return self.total + len(self.deleting)

    @property
    def terminated(self) -> tuple[EphemeralRunner, ...]:
        """Runners that will never run a job again: deleted without asking the service."""
        return self.finished + self.failed + self.outdated + self.stale_outdated

    @property
    def count(self) -> int:
        """Every runner, whatever its state."""
        return (
            self.scale_up_total + len(self.finished) + len(self.outdated) + len(self.stale_outdated)
        )


def classify(
    runners: Iterable[EphemeralRunner],
    *,
    applied_revision: int,
    deleting: Collection[str] = frozenset(),
) -> RunnerStates:
    """Sort ``runners`` into :class:`RunnerStates`, judging Outdated against ``applied_revision``.

    Runners named in ``deleting`` count as being deleted even without a
    ``deletionTimestamp``: this controller deleted them and its cache has not shown it
    yet (``ersctl.ephemeralrunnerset.expectations``). Raises :class:`RunnerFieldError` when a runner's
    ``status.phase`` is not a string.
    """
    buckets: dict[str, list[EphemeralRunner]] = {
        "pending": [],
        "running": [],
        "finished": [],
        "failed": [],
        "deleting": [],
        "outdated": [],
        "stale_outdated": [],
    }
    latest = 0
    for runner in runners:
        latest = max(latest, runner.patch_id)
        try:
            bucket = (
                "deleting"
                if deleting and runner.name in deleting
                else _bucket(runner, applied_revision)
            )
        except FieldError as exc:
            raise _naming(runner, exc) from None
        buckets[bucket].append(runner)
    return RunnerStates(
        pending=tuple(buckets["pending"]),
        running=tuple(buckets["running"]),
        finished=tuple(buckets["finished"]),
        failed=tuple(buckets["failed"]),
        deleting=tuple(buckets["deleting"]),
        outdated=tuple(buckets["outdated"]),
        stale_outdated=tuple(buckets["stale_outdated"]),
        latest_patch_id=PatchID(latest),
    )


def _bucket(runner: EphemeralRunner, applied_revision: int) -> str:
    if runner.is_deleting:
        return "deleting"
    phase = runner.phase
    if phase == ERPhase.OUTDATED:
        # A runner that predates the applied revision reported against a spec that has
        # since been replaced; letting it drive the set Outdated would switch the set
        # off until the next spec change.
        if runner.actionable_revision < applied_revision:
            return "stale_outdated"
        return "outdated"
    return _PHASE_BUCKET.get(phase, "pending")


def is_busy(runner: EphemeralRunner) -> bool:
    """Holding a job: ``status.jobId`` non-empty (ARC's ``has_job``) or a ``jobRequestId``.

    The one rule for every path that may remove a runner (scale-down and cleanup alike).
    The request id widens ARC's rule on purpose: the listener records both fields from one
    JobStarted message, and a runner that shows only the request id (a message without a
    job id, or a status written partially) is still running that job. Mistaking a busy
    runner for an idle one costs a job; the converse only keeps a runner a little longer.
    """
    try:
        return runner.has_job or runner.job_request_id > 0
    except FieldError as exc:
        raise _naming(runner, exc) from None


def registered_id(runner: EphemeralRunner) -> RunnerID:
    """``status.runnerId`` (0: not registered with the service yet); RunnerFieldError."""
    try:
        return runner.runner_id
    except FieldError as exc:
        raise _naming(runner, exc) from None


def created_at(runner: EphemeralRunner) -> str:
    """``metadata.creationTimestamp`` (RFC 3339); RunnerFieldError when malformed."""
    try:
        return runner.creation_timestamp
    except FieldError as exc:
        raise _naming(runner, exc) from None
