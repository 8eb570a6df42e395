"""The two status writers that carry an optimistic lock.

Both re-read the EphemeralRunnerSet through the *API reader*, decide against that
live copy, and send a merge patch on ``/status`` whose ``metadata.resourceVersion``
is the live copy's: the API server accepts it only while the decision still holds,
and a 409 re-reads and decides again (:class:`ConflictRetry`). A merge patch without
that precondition can never conflict, so a retry-on-conflict around it would be
inert while reading as protection.

- :func:`record_cleanup_patch_id` writes ``status.finishedRunnerCleanupPatchID``.
  It skips on *equality* and otherwise writes whatever patch ID it is given, lower
  ones included: listener patch IDs go down (0 when idle at minimum, a restart
  renumbers from 0, a wrap after 2^31-1), and a marker that refused to descend would
  strand above every later ID, so the exact-match guard would never fire again.
- :func:`advance_applied_revision` writes ``status.appliedActionableRevision``. It
  only ever moves up (revisions derive from spec changes and only climb; moving it
  back would redo the idle-runner cleanup), clears the marker when it advances
  (patch IDs belong to one listener incarnation, and a spec change restarts the
  listener), and derives the phase from an API-reader list of owned runners judged
  against the new applied revision (the lock vouches for the ERS, not for a cached
  list).

Each checks the server's answer: a written value the answer lacks was pruned by a CRD
without the field (ARC 0.14's has neither the marker nor the applied revision), and
``PrunedFieldsError`` then stops this set (no cleanup, no scale-up) rather than let the
guard run with a marker that is never stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import tenacity

from ersctl.api import ERS_CRD, EphemeralRunnerSet, ERSPhase, PatchID
from ersctl.arcclient.errors import PrunedFieldsError
from ersctl.ephemeralrunnerset.classification import classify
from ersctl.ephemeralrunnerset.ports import ApiReader, Writer
from ersctl.ephemeralrunnerset.status import RESET_VALUES, malformed
from ersctl.kube.errors import ConflictError

T = TypeVar("T")

CLEANUP_MARKER_FIELD = "finishedRunnerCleanupPatchID"
APPLIED_REVISION_FIELD = "appliedActionableRevision"


def _default_wait() -> tenacity.wait.wait_base:
    return tenacity.wait_exponential(multiplier=0.01, max=0.5)


@dataclass(frozen=True, kw_only=True)
class ConflictRetry:
    """How often an optimistic-locked write re-reads and retries after a 409.

    ``wait`` is a tenacity wait strategy (``tenacity.wait_none()`` in tests that
    provoke conflicts on purpose). When attempts run out the ``ConflictError``
    propagates, and the runtime requeues the key with backoff: fail closed.
    """

    attempts: int = 5
    wait: tenacity.wait.wait_base = field(default_factory=_default_wait)

    def run(self, attempt: Callable[[], T]) -> T:
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(ConflictError),
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=self.wait,
            reraise=True,
        )
        return retrying(attempt)


def record_cleanup_patch_id(
    *,
    api: ApiReader,
    writer: Writer,
    namespace: str,
    name: str,
    patch_id: PatchID,
    retry: ConflictRetry,
) -> EphemeralRunnerSet | None:
    """Make the live marker equal ``patch_id``; return the live ERS (None when it is gone).

    Nothing is written when the live spec no longer carries ``patch_id`` (the listener
    patched after the cached copy the cleanup was decided on): a marker for a patch ID
    that is gone suppresses nothing, and the newer count may name the finished runners
    (then they are refilled with no marker at all). The caller compares the live
    ``spec.patchID`` and decides again on it.

    Raises ``ConflictError`` when every attempt lost the race, other ``KubeError``s as
    they come.
    """

    def attempt() -> EphemeralRunnerSet | None:
        live = api.get_ers(namespace, name)
        if live is None or live.patch_id != patch_id:
            return live
        # Equality, not >=: the marker must be able to move down with the patch ID.
        if live.finished_runner_cleanup_patch_id == patch_id:
            return live
        return _write(writer, live, {CLEANUP_MARKER_FIELD: patch_id})

    return retry.run(attempt)


@dataclass(frozen=True, kw_only=True)
class RevisionWrite:
    """What :func:`advance_applied_revision` found: the live ERS after it, and whether
    this call moved the applied revision (False: it was already at or past the target)."""

    ers: EphemeralRunnerSet
    advanced: bool


def advance_applied_revision(
    *,
    api: ApiReader,
    writer: Writer,
    namespace: str,
    name: str,
    target: int,
    retry: ConflictRetry,
) -> RevisionWrite | None:
    """Raise the live applied revision to ``target`` (never lower it); fix the phase.

    On an advance the marker is cleared. The phase is Outdated when an API-reader list
    of owned runners holds an Outdated runner created at or after the applied revision
    (``max(live, target)``), Running otherwise. Returns the live ERS after the write and
    whether it advanced, or None when the ERS is gone.
    """

    def attempt() -> RevisionWrite | None:
        live = api.get_ers(namespace, name)
        if live is None:
            return None
        changes = _revision_changes(live, target)
        advanced = APPLIED_REVISION_FIELD in changes
        applied = max(live.applied_actionable_revision, target)
        states = classify(api.list_owned_runners(live), applied_revision=applied)
        phase = ERSPhase.OUTDATED if states.outdated else ERSPhase.RUNNING
        if live.phase != phase:
            changes["phase"] = phase.value
        if changes:
            live = _write(writer, live, changes)
        return RevisionWrite(ers=live, advanced=advanced)

    return retry.run(attempt)


def repair_status(
    *, api: ApiReader, writer: Writer, namespace: str, name: str, retry: ConflictRetry
) -> EphemeralRunnerSet | None:
    """Overwrite the live ERS's malformed controller-owned status fields; return it.

    Decided on the live copy and locked like the writers above, so only values that are
    malformed on the server are replaced (``ersctl.ephemeralrunnerset.status.RESET_VALUES``): a lagging
    cache that still shows a bad marker never overwrites a good one written since.
    Returns the live ERS after the write (unchanged when nothing is malformed), or None
    when it is gone.
    """

    def attempt() -> EphemeralRunnerSet | None:
        live = api.get_ers(namespace, name)
        if live is None:
            return None
        fields = {field: RESET_VALUES[field] for field in malformed(live)}
        if not fields:
            return live
        return _write(writer, live, fields)

    return retry.run(attempt)


def _revision_changes(live: EphemeralRunnerSet, target: int) -> dict[str, Any]:
    # Only an advance means the idle runners were just rebuilt and the listener
    # restarted; a stale reconcile holding an older target must change nothing.
    if live.applied_actionable_revision >= target:
        return {}
    changes: dict[str, Any] = {APPLIED_REVISION_FIELD: target}
    if live.finished_runner_cleanup_patch_id != 0:
        changes[CLEANUP_MARKER_FIELD] = 0
    return changes


def _write(writer: Writer, live: EphemeralRunnerSet, status: dict[str, Any]) -> EphemeralRunnerSet:
    """Send ``status`` locked on ``live``; return the answer once it holds every value
    written (None: absent). Raises PrunedFieldsError naming those it lacks."""
    written = writer.patch_ers_status(live, _locked(live, status))
    dropped = [f"status.{key}" for key, value in status.items() if written.status.get(key) != value]
    if dropped:
        raise PrunedFieldsError({ERS_CRD: dropped})
    return written


def _locked(live: EphemeralRunnerSet, status: dict[str, Any]) -> dict[str, Any]:
    """A status merge patch whose resourceVersion makes the server reject a stale write."""
    return {"metadata": {"resourceVersion": live.resource_version}, "status": status}
