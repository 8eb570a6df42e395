"""The EphemeralRunnerSet reconciler: the reconcile contract (README "How a reconcile
decides"), in order.

1. Read the ERS from the cache; gone -> done.
2. Being deleted: clean up its runners; once none are left, drop our finalizer.
3. Malformed (replicas/patchID not a non-negative integer, no runner spec): a Warning
   Event naming the field, and nothing else until it is fixed. A malformed status
   field the controller owns (counts, phase, marker, applied revision) is instead
   overwritten through a locked write (``ersctl.ephemeralrunnerset.markers.repair_status``).
4. No finalizer yet: add it and return.
5. A new runner spec revision: clean up idle runners, advance the applied revision
   (API reader, only upward, clears the marker, optimistic lock) and return.
6. Phase Outdated: clean up runners and return.
7. Classify the cached runners; delete stale Outdated ones and return. Then bring the
   set's proxy Secret in step with its proxy (``ersctl.ephemeralrunnerset.proxysecret``), before
   any runner it would create could start a Pod that reads it.
8. The scaling decision (``ersctl.ephemeralrunnerset.scaling``): the finished-runner cleanup is an early
   return that records the marker *before* deleting, and the scale-up guard reads
   the marker through the API reader only. Finished runners the listener names as
   completions its count leaves out are instead deleted and replaced in one pass,
   without a marker (``ReplaceFinished``: why it is safe, and when it falls back to the
   above, is in ``ersctl.ephemeralrunnerset.scaling``).
9. The status update (``ersctl.ephemeralrunnerset.status``), which never carries a marker this
   reconcile did not change.

Why each rule of step 8 exists is argued in ARC PR #4642 and in ``ersctl.ephemeralrunnerset.scaling``
and ``ersctl.ephemeralrunnerset.markers``.
Raising means "requeue with backoff"; a Warning Event is recorded first.

Failed runners (``ersctl.ephemeralrunnerset.failurepolicy``), between steps 7 and 8: each is kept
``--failed-runner-ttl`` seconds, then removed from the service and deleted (a Warning
Event names it and its last reason), so step 8 refills its slot. While most of the
set's recent runners failed, the set's ``RunnersFailing`` condition says so and step 8
holds its scale-ups for an exponentially growing, capped backoff; a new applied
revision resets it. Neither touches the marker or the patch-ID rules of step 8: a
held scale-up creates nothing and writes nothing, so the next reconcile decides anew.

Before the first scale-up of a set in this process, its runners are confirmed with one
uncached list: runners the cache does not show yet are recorded as expected creates
(deletes likewise). They were written by someone else, typically the previous leader,
whose creates this process's expectations never saw; without this, a new leader whose
watch lags creates them a second time (``confirm_runners`` in ``expectations``).

Every runner listing (steps 2 and 5-8) is the cache's, corrected by this controller's
own creates and deletes that the cache has not shown yet (``ersctl.ephemeralrunnerset.expectations``):
unobserved creates count as pending runners, unobserved deletes as deleting ones, so
no step creates or deletes a second time on a lagging cache. While any is pending
the set is requeued shortly, as a backstop to the watch event that will show it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Final

from ersctl.api import (
    ERS_FINALIZER,
    EphemeralRunner,
    EphemeralRunnerSet,
    ERSPhase,
    FieldError,
    PatchID,
)
from ersctl.arcclient.errors import PrunedFieldsError
from ersctl.ephemeralrunnerset import status
from ersctl.ephemeralrunnerset.classification import RunnerStates, classify
from ersctl.ephemeralrunnerset.cleanup import (
    Removal,
    clean_up_runners,
    delete_runners,
    scale_down,
)
from ersctl.ephemeralrunnerset.creation import create_runners, runner_body
from ersctl.ephemeralrunnerset.expectations import (
    ConfirmedSets,
    Expectations,
    ExpectingWriter,
    confirm_runners,
    owned_runners,
)
from ersctl.ephemeralrunnerset.failedrunners import FailedRunners
from ersctl.ephemeralrunnerset.failurepolicy import FailedRunnerPolicy
from ersctl.ephemeralrunnerset.markers import (
    ConflictRetry,
    advance_applied_revision,
    record_cleanup_patch_id,
    repair_status,
)
from ersctl.ephemeralrunnerset.ports import (
    ApiReader,
    CachedReader,
    NoMetrics,
    ReconcileMetrics,
    RunnerServices,
    Writer,
)
from ersctl.ephemeralrunnerset.proxysecret import ProxySecrets
from ersctl.ephemeralrunnerset.scaling import (
    AlreadyServiced,
    CleanUpFinished,
    Decision,
    Hold,
    ReplaceFinished,
    ScaleDown,
    ScaleUp,
    ScalingDecision,
    ThenDelete,
    decide_for,
    scale_up_suppressed,
)
from ersctl.kube.errors import ConflictError, NotFoundError, NotLeaderError
from ersctl.kube.ownwrites import OwnWrites
from ersctl.kube.reconcile import EventRecorder, Request, Result
from ersctl.platform.errors import Failure
from ersctl.reasons import Reason
from ersctl.scaleset.ports import CredentialsFieldError

log = logging.getLogger(__name__)

NORMAL: Final = "Normal"
WARNING: Final = "Warning"
_QUIET_ACTIONS: Final = frozenset({"hold", "none"})
MOVED_ON_RETRY: Final = 1.0
"""Seconds before a cleanup decided on a superseded patch ID is looked at again, should
the watch event of the newer patch be lost."""
CREATE_CONCURRENCY: Final = 8
"""Runner creates of one scale-up in flight at once."""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What one reconcile did: ``action`` is a short keyword, ``detail`` one line for humans."""

    action: str
    detail: str = ""
    result: Result = field(default_factory=Result)

    def __str__(self) -> str:
        return f"{self.action}: {self.detail}" if self.detail else self.action


class EphemeralRunnerSetReconciler:
    """Implements ``ersctl.kube.reconcile.Reconciler`` for EphemeralRunnerSets. Thread-safe.

    Holds no per-reconcile state, so the runtime may reconcile different keys on
    different threads at once (never the same key twice at once). Across reconciles it
    keeps, per set, this process's writes its cache has not shown yet: runner creates and
    deletes in ``expectations`` (give one instance per reconciler; the default is fine),
    the answer to its latest set write (``ersctl.kube.ownwrites``); the patch ID whose
    suppression it last reported; and each set's recent runner outcomes
    (``failed_runners`` says how Failed runners are kept and backed off).
    ``expectation_requeue`` is the delay of the backstop requeue while any runner
    expectation is pending. ``scaling`` is step 8's decision (``ersctl.ephemeralrunnerset.scaling``). ``clock`` is wall-clock seconds: it is compared with the
    runners' timestamps.
    """

    def __init__(
        self,
        *,
        cache: CachedReader,
        api: ApiReader,
        writer: Writer,
        events: EventRecorder,
        services: RunnerServices,
        metrics: ReconcileMetrics | None = None,
        create_concurrency: int = CREATE_CONCURRENCY,
        conflict_retry: ConflictRetry | None = None,
        credentials_retry_after: float = 30.0,
        expectations: Expectations | None = None,
        expectation_requeue: float = 1.0,
        failed_runners: FailedRunnerPolicy | None = None,
        clock: Callable[[], float] = time.time,
        scaling: ScalingDecision = decide_for,
    ) -> None:
        self._cache = cache
        self._decide = scaling
        self._api = api
        self._expectations = expectations or Expectations()
        self._expectation_requeue = expectation_requeue
        self._set_writes = OwnWrites[EphemeralRunnerSet]()
        self._writer = ExpectingWriter(writer, self._expectations, self._set_writes)
        # Per set key: the patch ID whose suppression was last reported, so a patch ID
        # reconciled again and again while suppressed records one Event, not one each.
        self._suppression_reported: dict[str, PatchID] = {}
        self._proxy_secrets = ProxySecrets(api=api, writer=writer)
        self._events = events
        self._services = services
        self._metrics = metrics or NoMetrics()
        self._create_concurrency = create_concurrency
        self._retry = conflict_retry or ConflictRetry()
        # The credentials Secret is not watched, so fixing it enqueues nothing: retry.
        self._credentials_retry_after = credentials_retry_after
        self._failed = FailedRunners(
            services=services,
            writer=self._writer,
            events=events,
            metrics=self._metrics,
            policy=failed_runners or FailedRunnerPolicy(),
            clock=clock,
        )
        self._confirmed = ConfirmedSets()

    def reconcile(self, request: Request) -> Result:
        """Reconcile one ERS. Raises (after a Warning Event) to requeue with backoff."""
        return self.reconcile_with_outcome(request).result

    def reconcile_with_outcome(self, request: Request) -> Outcome:
        """Like :meth:`reconcile`, returning what was done (``ersctl reconcile --once``)."""
        cached = self._cache.get_ers(request.namespace, request.name)
        if cached is None:
            self._expectations.forget(str(request))
            self._failed.forget(str(request))
            self._confirmed.forget(str(request))
            self._set_writes.forget(str(request))
            self._suppression_reported.pop(str(request), None)
            self._proxy_secrets.forget(request.namespace, request.name)
            return Outcome(action="none", detail="not found")
        # Our own last write when the cache does not show it yet: the status diff of
        # step 9 then starts from what the server holds, not from what we replaced.
        ers = self._set_writes.newest(cached)
        try:
            outcome = self._reconcile(ers)
        except FieldError as exc:
            # Bad input: say which field, change no runner, keep the worker healthy.
            self._event(ers, WARNING, Reason.INVALID_SPEC, str(exc))
            retry = isinstance(exc, CredentialsFieldError)
            after = self._credentials_retry_after if retry else None
            outcome = Outcome(action="invalid", detail=str(exc), result=Result(after))
            return self._requeue_while_expecting(ers, outcome)
        except (ConflictError, NotLeaderError):
            # Optimistic concurrency doing its job (the cache was behind), or the lease
            # is gone: end quietly; a Warning here would only alarm people.
            raise
        except PrunedFieldsError as exc:
            # The served CRD dropped a marker or revision write (ARC's CRD, installed
            # over ours while running): the guard cannot work for this set, so it gets
            # no cleanup and no scale-up until the CRD is fixed; the message names it.
            self._event(ers, WARNING, Reason.FIELDS_PRUNED, str(exc))
            raise
        except Failure as exc:
            self._event(ers, WARNING, Reason.RECONCILE_FAILED, str(exc))
            raise
        level = logging.DEBUG if outcome.action in _QUIET_ACTIONS else logging.INFO
        log.log(level, "reconciled: %s", outcome)  # the set: the reconcile's log fields
        return self._requeue_while_expecting(ers, outcome)

    def _requeue_while_expecting(self, ers: EphemeralRunnerSet, outcome: Outcome) -> Outcome:
        # The watch event that shows the write normally enqueues the set first; this
        # backstop also lets an expectation expire when that event is lost.
        if not self._expectations.unsatisfied(ers.key):
            return outcome
        after = outcome.result.requeue_after
        soon = self._expectation_requeue if after is None else min(after, self._expectation_requeue)
        return replace(outcome, result=Result(requeue_after=soon))

    # -- steps 2-7 ---------------------------------------------------------------------

    def _reconcile(self, ers: EphemeralRunnerSet) -> Outcome:
        if ers.is_deleting:
            return self._finalize(ers)
        validate(ers)
        if status.malformed(ers):
            repaired = self._repair_status(ers)
            if repaired is None:
                return Outcome(action="none", detail="gone")
            ers = repaired
        if not ers.has_finalizer(ERS_FINALIZER):
            self._set_finalizers(ers, [*ers.finalizers, ERS_FINALIZER])
            return Outcome(action="finalizer-added")
        if ers.actionable_revision > ers.applied_actionable_revision:
            return self._apply_revision(ers)
        before = status.observed(ers)
        states = self._classify(ers)
        if ers.phase == ERSPhase.OUTDATED:
            removal = self._clean_up(ers, states)
            return Outcome(action="outdated", detail=_removal_text(removal))
        if states.stale_outdated:
            deleted = delete_runners(self._writer, states.stale_outdated)
            self._deleted(ers, deleted, Reason.STALE_OUTDATED_DELETED, "stale Outdated")
            status.update_status(self._writer, ers, before=before, states=states)
            return Outcome(action="stale-outdated-deleted", detail=f"{deleted} runners")
        self._proxy_secrets.sync(ers)
        self._failed.observe(ers, states)
        collected, next_due = self._failed.collect(ers, states)
        if collected is not None:
            status.update_status(self._writer, ers, before=before, states=states)
            detail = _removal_text(collected)
            return Outcome(action="failed-runners-deleted", detail=detail, result=Result(next_due))
        return _requeue_by(self._scale(ers, states, before), next_due)

    def _finalize(self, ers: EphemeralRunnerSet) -> Outcome:
        if not ers.has_finalizer(ERS_FINALIZER):
            return Outcome(action="none", detail="being deleted; no finalizer of ours")
        # Unobserved creates included: dropping the finalizer while runners this
        # controller just created exist would let the set go before they do.
        runners, deleted = self._owned_runners(ers)
        if not runners:
            try:
                self._set_finalizers(ers, [f for f in ers.finalizers if f != ERS_FINALIZER])
            except NotFoundError:
                return Outcome(action="none", detail="gone")
            return Outcome(action="finalizer-removed")
        removal = self._clean_up(ers, classify(runners, applied_revision=0, deleting=deleted))
        left = len(runners) - removal.deleted
        return Outcome(action="deleting", detail=f"{_removal_text(removal)}; {left} left")

    def _repair_status(self, ers: EphemeralRunnerSet) -> EphemeralRunnerSet | None:
        # The controller's own bookkeeping: overwrite it, never stop the set over it.
        problems = "; ".join(str(exc) for exc in status.malformed(ers).values())
        live = repair_status(
            api=self._api,
            writer=self._writer,
            namespace=ers.namespace,
            name=ers.name,
            retry=self._retry,
        )
        if live is not None:
            self._event(ers, WARNING, Reason.STATUS_REPAIRED, f"Overwrote {problems}")
        return live

    def _apply_revision(self, ers: EphemeralRunnerSet) -> Outcome:
        target = ers.actionable_revision
        removal = self._clean_up(ers, self._classify(ers))
        # Written last, after the cleanup succeeded: a crash midway leaves the applied
        # revision behind the spec, so the next reconcile redoes the cleanup.
        written = advance_applied_revision(
            api=self._api,
            writer=self._writer,
            namespace=ers.namespace,
            name=ers.name,
            target=target,
            retry=self._retry,
        )
        if written is None:
            return Outcome(action="none", detail="gone")
        if not written.advanced:
            # A lagging cache: the live set had applied this revision (or a newer one).
            applied = written.ers.applied_actionable_revision
            detail = f"revision {target} superseded (applied {applied}): {_removal_text(removal)}"
            return Outcome(action="revision-superseded", detail=detail)
        message = f"Applied runner spec revision {target}: {_removal_text(removal)}"
        self._event(ers, NORMAL, Reason.REVISION_APPLIED, message)
        return Outcome(action="revision-applied", detail=message)

    def _clean_up(self, ers: EphemeralRunnerSet, states: RunnerStates) -> Removal:
        removal = clean_up_runners(self._services, self._writer, ers, states)
        self._deleted(ers, removal.deleted, Reason.RUNNERS_CLEANED_UP, "idle or terminated")
        return removal

    # -- step 8 ------------------------------------------------------------------------

    def _scale(
        self, ers: EphemeralRunnerSet, states: RunnerStates, before: status.StatusView
    ) -> Outcome:
        decision = self._decide(ers, states)
        if _may_create(decision) and not self._confirmed.check(ers.key, ers.uid):
            # Once per set and process: the runners written by a previous leader
            # become expectations, then the decision is taken again on that basis.
            confirm_runners(self._cache, self._api, self._expectations, ers)
            self._confirmed.add(ers.key, ers.uid)
            return self._scale(ers, self._classify(ers), before)
        return self._act(ers, states, decision, before)

    def _act(
        self,
        ers: EphemeralRunnerSet,
        states: RunnerStates,
        decision: Decision,
        before: status.StatusView,
    ) -> Outcome:
        match decision:
            case CleanUpFinished():
                return self._clean_up_finished(ers, states, decision, before)
            case ScaleUp():
                held = self._held_by_failures(ers, decision.count)
                if held is None:
                    return self._scale_up(ers, states, decision, before)
                outcome = held
            case ReplaceFinished():
                held = self._held_by_failures(ers, decision.gap) if decision.gap else None
                if held is None:
                    return self._replace_finished(ers, states, decision, before)
                outcome = held
            case ScaleDown():
                outcome = self._scale_down(ers, decision)
            case AlreadyServiced():
                outcome = Outcome(action="hold", detail=f"patch {ers.patch_id} already serviced")
            case Hold(reason=reason):
                outcome = Outcome(action="hold", detail=reason)
            case ThenDelete(then=then, runners=runners):
                try:
                    return self._act(ers, states, then, before)
                finally:
                    self._metrics.runners_deleted(ers, delete_runners(self._writer, runners))
        status.update_status(self._writer, ers, before=before, states=states)
        return outcome

    def _clean_up_finished(
        self,
        ers: EphemeralRunnerSet,
        states: RunnerStates,
        decision: CleanUpFinished,
        before: status.StatusView,
    ) -> Outcome:
        # The marker first: a crash between the two steps then leaves a recorded
        # marker and finished runners (redone next time), never deleted runners and
        # no marker (which would let the next reconcile refill the gap).
        live = record_cleanup_patch_id(
            api=self._api,
            writer=self._writer,
            namespace=ers.namespace,
            name=ers.name,
            patch_id=decision.patch_id,
            retry=self._retry,
        )
        if live is None:
            return Outcome(action="none", detail="gone")
        if live.patch_id != decision.patch_id:
            # Decided on a cached copy the listener has patched since: no marker, no
            # deletion; its watch event brings the set back (the requeue is a backstop).
            detail = f"patch ID {decision.patch_id} replaced by {live.patch_id}; deciding again"
            return Outcome(action="patch-moved-on", detail=detail, result=Result(MOVED_ON_RETRY))
        # The server holds the marker now; mirror it so step 9 neither repeats nor
        # reverts it.
        ers.finished_runner_cleanup_patch_id = decision.patch_id
        before = replace(before, cleanup_patch_id=decision.patch_id)
        deleted = delete_runners(self._writer, decision.runners)
        # No Event per batch: the guard's cost is its marker write (the count of
        # deleted runners is in the metrics and the log line of this reconcile).
        self._metrics.runners_deleted(ers, deleted)
        status.update_status(self._writer, ers, before=before, states=states)
        return Outcome(action="cleanup-finished", detail=f"{deleted} runners")

    def _held_by_failures(self, ers: EphemeralRunnerSet, count: int) -> Outcome | None:
        """The outcome when most recent runners failed and replacements must wait."""
        wait, why = self._failed.replacement_wait(ers)
        if not wait:
            return None
        detail = f"runners failing ({why}): {count} replacements wait {wait:.1f}s"
        return Outcome(action="backed-off", detail=detail, result=Result(wait))

    def _replace_finished(
        self,
        ers: EphemeralRunnerSet,
        states: RunnerStates,
        decision: ReplaceFinished,
        before: status.StatusView,
    ) -> Outcome:
        # The listener's published count already leaves these runners' jobs out, so the
        # gap their removal opens is demand: refilled now, no marker, nothing held.
        marker = PatchID(0)
        if decision.needs_marker:
            # Uncached, as the guard reads it: a marker recorded for this patch ID means
            # an earlier cleanup removed runners the count may still hold jobs for.
            live = self._api.get_ers(ers.namespace, ers.name)
            if live is None:
                return Outcome(action="none", detail="gone")
            marker = live.finished_runner_cleanup_patch_id
        deleted = delete_runners(self._writer, decision.runners)
        self._metrics.runners_deleted(ers, deleted)
        count = decision.count(marker=marker)
        created = self._create(ers, count=count, patch_id=decision.patch_id) if count else 0
        status.update_status(self._writer, ers, before=before, states=states)
        detail = f"{deleted} finished runners deleted, {created} runners created"
        return Outcome(action="replace-finished", detail=detail)

    def _scale_up(
        self,
        ers: EphemeralRunnerSet,
        states: RunnerStates,
        decision: ScaleUp,
        before: status.StatusView,
    ) -> Outcome:
        if decision.guarded:
            # Uncached, always: the cleanup that wrote the marker is what triggered this
            # reconcile, often before the informer saw the write; and the marker can be
            # cleared, so a cached hit is not trustworthy either.
            live = self._api.get_ers(ers.namespace, ers.name)
            if live is None:
                return Outcome(action="none", detail="gone")
            marker = live.finished_runner_cleanup_patch_id
            if scale_up_suppressed(patch_id=decision.patch_id, marker=marker):
                return self._suppress(
                    ers, states, decision, replace(before, cleanup_patch_id=marker)
                )
        created = self._create(ers, count=decision.count, patch_id=decision.patch_id)
        status.update_status(self._writer, ers, before=before, states=states)
        return Outcome(action="scale-up", detail=f"{created} runners created")

    def _create(self, ers: EphemeralRunnerSet, *, count: int, patch_id: PatchID) -> int:
        """Create ``count`` runners for ``patch_id``; how many were created (raises the
        first create error, after a Warning Event)."""
        created = create_runners(
            self._writer, runner_body(ers), count=count, concurrency=self._create_concurrency
        )
        self._metrics.runners_created(ers, created.created)
        if created.created:
            message = f"Created {created.created} runners for patch {patch_id}"
            self._event(ers, NORMAL, Reason.SCALED_UP, message)
        if created.errors:
            message = f"{len(created.errors)} of {count} runner creates failed"
            self._event(ers, WARNING, Reason.CREATE_FAILED, f"{message}: {created.errors[0]}")
            raise created.errors[0]
        return created.created

    def _suppress(
        self,
        ers: EphemeralRunnerSet,
        states: RunnerStates,
        decision: ScaleUp,
        before: status.StatusView,
    ) -> Outcome:
        ers.finished_runner_cleanup_patch_id = before.cleanup_patch_id
        message = (
            f"Not creating {decision.count} runners: patch {decision.patch_id} was already "
            "serviced by a finished-runner cleanup; waiting for the next patch"
        )
        self._metrics.scale_up_suppressed(ers)
        # Once per patch ID: every runner event re-reconciles a suppressed set, and
        # each would otherwise be an Event write about the same decision.
        if self._suppression_reported.get(ers.key) != decision.patch_id:
            self._suppression_reported[ers.key] = decision.patch_id
            self._event(ers, NORMAL, Reason.SCALE_UP_SUPPRESSED, message)
        status.update_status(self._writer, ers, before=before, states=states)
        return Outcome(action="suppressed", detail=message)

    def _scale_down(self, ers: EphemeralRunnerSet, decision: ScaleDown) -> Outcome:
        removal = scale_down(self._services, self._writer, ers, decision)
        self._metrics.runners_deleted(ers, removal.deleted)
        if removal.deleted:
            message = f"Removed {removal.deleted} of {decision.count} excess runners"
            self._event(ers, NORMAL, Reason.SCALED_DOWN, message)
        return Outcome(action="scale-down", detail=_removal_text(removal))

    # -- helpers -----------------------------------------------------------------------

    def _classify(self, ers: EphemeralRunnerSet) -> RunnerStates:
        runners, deleted = self._owned_runners(ers)
        return classify(runners, applied_revision=ers.applied_actionable_revision, deleting=deleted)

    def _owned_runners(
        self, ers: EphemeralRunnerSet
    ) -> tuple[list[EphemeralRunner], frozenset[str]]:
        """The cached runners plus unobserved creates, and the names of unobserved deletes."""
        return owned_runners(self._cache, self._api, self._expectations, ers)

    def _set_finalizers(self, ers: EphemeralRunnerSet, finalizers: list[str]) -> None:
        # A merge patch replaces the whole list: lock it so a finalizer someone else
        # added meanwhile is not dropped (a 409 requeues and re-reads).
        metadata = {"finalizers": finalizers, "resourceVersion": ers.resource_version}
        self._writer.patch_ers(ers, {"metadata": metadata})

    def _deleted(self, ers: EphemeralRunnerSet, count: int, reason: Reason, what: str) -> None:
        self._metrics.runners_deleted(ers, count)
        if count:
            self._event(ers, NORMAL, reason, f"Deleted {count} {what} runners")

    def _event(self, ers: EphemeralRunnerSet, type_: str, reason: Reason, message: str) -> None:
        self._events.event(ers, type=type_, reason=reason, message=message)


def _may_create(decision: Decision) -> bool:
    if isinstance(decision, ThenDelete):
        return _may_create(decision.then)
    if isinstance(decision, ScaleUp):
        return decision.count > 0
    return isinstance(decision, ReplaceFinished) and decision.gap > 0


def validate(ers: EphemeralRunnerSet) -> None:
    """Raise FieldError naming the first spec field of ``ers`` the controller cannot act on.

    Status fields are not judged here: those the controller owns are overwritten when
    malformed (``ersctl.ephemeralrunnerset.status.malformed``), not reported as bad input.
    """
    _ = (ers.replicas, ers.patch_id, ers.actionable_revision, ers.ephemeral_runner_spec)


def _requeue_by(outcome: Outcome, seconds: float | None) -> Outcome:
    """``outcome``, requeued within ``seconds`` at the latest (None: as it was)."""
    if seconds is None:
        return outcome
    after = outcome.result.requeue_after
    soonest = seconds if after is None else min(after, seconds)
    return replace(outcome, result=replace(outcome.result, requeue_after=soonest))


def _removal_text(removal: Removal) -> str:
    return f"{removal.deleted} runners deleted, {removal.busy} busy kept"
