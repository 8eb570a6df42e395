"""Failed runners of a set: collected after the TTL, and a failing set's replacements
held back. The I/O shell over the pure rules of ``ersctl.ephemeralrunnerset.failurepolicy``; the
reconciler calls it between steps 7 and 8 (see ``ersctl.ephemeralrunnerset.reconciler``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from ersctl.api import EphemeralRunner, EphemeralRunnerSet, format_time
from ersctl.ephemeralrunnerset.classification import RunnerStates
from ersctl.ephemeralrunnerset.cleanup import Removal, collect_failed
from ersctl.ephemeralrunnerset.failurepolicy import (
    CONDITION_TYPE,
    FailedRunnerPolicy,
    FailureHistories,
    FailureHistory,
    condition_state,
    describe_failure,
    due_for_collection,
)
from ersctl.ephemeralrunnerset.ports import EventRecorder, ReconcileMetrics, RunnerServices, Writer
from ersctl.reasons import Reason


class FailedRunners:
    """One reconciler's view of its sets' failed runners. Thread-safe (the histories
    are; everything else is per call). ``clock`` is wall-clock seconds."""

    def __init__(
        self,
        *,
        services: RunnerServices,
        writer: Writer,
        events: EventRecorder,
        metrics: ReconcileMetrics,
        policy: FailedRunnerPolicy,
        clock: Callable[[], float],
    ) -> None:
        self._services = services
        self._writer = writer
        self._events = events
        self._metrics = metrics
        self._policy = policy
        self._clock = clock
        self._histories = FailureHistories()

    def observe(self, ers: EphemeralRunnerSet, states: RunnerStates) -> None:
        """Record the set's finished and Failed runners; keep its condition in step."""
        _, history = self._histories.update(
            ers.key,
            ers.uid,
            revision=ers.applied_actionable_revision,
            failed=states.failed,
            succeeded=states.finished,
            window=self._policy.window,
            now=self._clock(),
        )
        self._report(ers, history)

    def collect(
        self, ers: EphemeralRunnerSet, states: RunnerStates
    ) -> tuple[Removal | None, float | None]:
        """Remove and delete the Failed runners kept ``ttl`` seconds: (what was done, or
        None when none was due; seconds until the next one is due, or None)."""
        ttl = self._policy.ttl
        due, wait = due_for_collection(states.failed, now=self._clock(), ttl=ttl)
        if not due:
            return None, wait

        def deleted(runner: EphemeralRunner) -> None:
            self._metrics.failed_runner_deleted(ers)
            message = (
                f"Deleted Failed runner {describe_failure(runner)} after keeping it {ttl:g}s; "
                "a new runner takes its slot"
            )
            self._events.event(
                ers, type="Warning", reason=Reason.FAILED_RUNNER_DELETED, message=message
            )

        removal = collect_failed(self._services, self._writer, ers, due, deleted)
        if removal.deleted:
            self._histories.collected(ers.key, ers.uid, at=self._clock())
        self._metrics.runners_deleted(ers, removal.deleted)
        return removal, wait

    def replacement_wait(self, ers: EphemeralRunnerSet) -> tuple[float, str]:
        """Seconds the set's scale-up must still wait (0: none) and why, in a few words."""
        history = self._histories.get(ers.key, ers.uid)
        wait = self._policy.replacements_allowed_at(history) - self._clock()
        why = f"{history.failed} of the last {len(history.outcomes)} runners failed"
        return max(0.0, wait), why

    def forget(self, key: str) -> None:
        """Drop what is kept about set ``key`` (it is gone)."""
        self._histories.forget(key)

    def _report(self, ers: EphemeralRunnerSet, history: FailureHistory) -> None:
        """Keep the ``RunnersFailing`` condition in step with ``history``; an Event when
        it turns True (Warning) or back to False (Normal). No condition until needed."""
        wanted = condition_state(history, self._policy)
        conditions = [c for c in ers.status.get("conditions") or () if isinstance(c, dict)]
        current = next((c for c in conditions if c.get("type") == CONDITION_TYPE), None)
        if current is None and wanted.status == "False":
            return
        shown = None if current is None else (current.get("status"), current.get("message"))
        if shown == (wanted.status, wanted.message):
            return
        turned = current is None or current.get("status") != wanted.status
        now = format_time(datetime.fromtimestamp(self._clock(), UTC))
        condition = {
            "type": CONDITION_TYPE,
            "status": wanted.status,
            "reason": wanted.reason,
            "message": wanted.message,
            "lastTransitionTime": now if turned else (current or {}).get("lastTransitionTime"),
            "observedGeneration": ers.generation,
        }
        others = [c for c in conditions if c.get("type") != CONDITION_TYPE]
        self._writer.patch_ers_status(ers, {"status": {"conditions": [*others, condition]}})
        if turned:
            failing = wanted.status == "True"
            self._events.event(
                ers,
                type="Warning" if failing else "Normal",
                reason=Reason.RUNNERS_FAILING if failing else Reason.RUNNERS_RECOVERED,
                message=wanted.message,
            )
