"""Failed runners: when to collect them, and when a set's replacements back off (pure).

A runner turns Failed after ``--runner-max-failures`` failed Pods (``ersctl.ephemeralrunner.phases``)
and never runs a job again, yet it counts toward ``spec.replicas`` (the set counts its
pending, running and failed runners against it, as ARC does). Left alone it holds its
slot forever, and a set's capacity shrinks silently (ARC issues #3619, #4102). So a
Failed runner is kept for :attr:`FailedRunnerPolicy.ttl` seconds (for people to
inspect), then removed from the service and deleted; the set refills the slot through
its ordinary scale-up.

A set whose runners keep failing (a bad image, a broken template) would then churn Pods
at full speed: every collected runner is replaced by one that fails the same way (a
runner that exits 0 without running a job counts as failed too: ``exited_unused``). A
:class:`FailureHistory` keeps the outcome of the set's recent runners of the applied
revision; when most of them failed (:meth:`FailedRunnerPolicy.failing`), replacements
wait an exponentially growing, capped delay after the latest collection of a Failed
runner (the moment its slot opened; measured from the failure itself, any delay shorter
than the TTL would have passed already). A new applied revision (a changed runner spec)
starts a fresh history, which resets the backoff.

Times are seconds since the epoch (``float``), from the runners' own timestamps.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from ersctl.api import EphemeralRunner, FieldError, parse_time
from ersctl.reasons import Reason

DEFAULT_TTL: Final = 300.0
"""Seconds a Failed runner is kept before it is collected (``--failed-runner-ttl``)."""


@dataclass(frozen=True, kw_only=True)
class FailedRunnerPolicy:
    """How long Failed runners are kept, and how a failing set backs off.

    A set is *failing* when at least ``min_failures`` of its last ``window`` finished
    runners failed and they are more than half of them. Its replacements then wait
    ``min(backoff_base * 2**(failed - min_failures), backoff_cap)`` seconds after its
    latest collection of a Failed runner: 10, 20, 40 ... capped at 300 s by default.
    """

    ttl: float = DEFAULT_TTL
    window: int = 10
    min_failures: int = 3
    backoff_base: float = 10.0
    backoff_cap: float = 300.0

    def __post_init__(self) -> None:
        if self.ttl < 0 or self.backoff_base < 0 or self.backoff_cap < 0:
            raise ValueError("failed-runner durations must be >= 0")
        if not 1 <= self.min_failures <= self.window:
            raise ValueError(f"min_failures must be in 1..window, got {self.min_failures}")

    def failing(self, history: FailureHistory) -> bool:
        """Most of the recent runners failed (see the class docstring)."""
        failed = history.failed
        return failed >= self.min_failures and failed * 2 > len(history.outcomes)

    def backoff(self, history: FailureHistory) -> float:
        """Seconds a failing set's replacements wait after a collection (0: not failing)."""
        if not self.failing(history):
            return 0.0
        exponent = min(history.failed - self.min_failures, 62)
        return min(self.backoff_base * float(2**exponent), self.backoff_cap)

    def replacements_allowed_at(self, history: FailureHistory) -> float:
        """When a failing set may create runners again (0: at once, it is not failing)."""
        if not self.failing(history):
            return 0.0
        return history.collected_at + self.backoff(history)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How one runner of the set ended."""

    runner: str
    failed: bool
    at: float
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class FailureHistory:
    """The outcomes of a set's most recent runners of one applied ``revision``, oldest
    first (at most the policy's window), and the names already recorded (so a runner
    seen on many reconciles counts once)."""

    revision: int = 0
    outcomes: tuple[Outcome, ...] = ()
    seen: frozenset[str] = field(default_factory=frozenset)
    collected_at: float = 0.0
    """When a Failed runner of this revision was last collected, or one that exited
    unused was first seen (0: never): when the slot of a failed runner last opened."""

    @property
    def failed(self) -> int:
        return sum(1 for outcome in self.outcomes if outcome.failed)

    @property
    def latest_failure(self) -> Outcome | None:
        return next((o for o in reversed(self.outcomes) if o.failed), None)


def record(
    history: FailureHistory,
    *,
    revision: int,
    failed: Iterable[EphemeralRunner],
    succeeded: Iterable[EphemeralRunner],
    window: int,
    now: float = 0.0,
) -> FailureHistory:
    """``history`` with the runners not recorded yet added (failed ones in failure order).

    A runner that exited 0 without a job is recorded as failed, and its slot counts as
    opened ``now`` (its set deletes it with the finished runners, not after the TTL).

    A different ``revision`` starts from an empty history: failures of a replaced runner
    spec say nothing about the new one. Runners created for an older revision are not
    recorded. ``seen`` is bounded too, keeping only the names of runners just recorded
    and still listed, so it does not grow with the set's lifetime.
    """
    if history.revision != revision:
        history = FailureHistory(revision=revision)
    failed, succeeded = list(failed), list(succeeded)
    listed = {runner.name for runner in (*failed, *succeeded)}
    # Exiting 0 without a job is what a broken entrypoint does: counted as a success, a
    # set of such runners would replace them at full speed, for ever.
    unused = [runner for runner in succeeded if runner.exited_unused]
    failed += unused
    succeeded = [runner for runner in succeeded if not runner.exited_unused]
    if any(_fresh(history, runner, revision) for runner in unused):
        history = replace(history, collected_at=max(history.collected_at, now))
    fresh = [
        _outcome(runner, failed=is_failed)
        for runners, is_failed in ((failed, True), (succeeded, False))
        for runner in runners
        if _fresh(history, runner, revision)
    ]
    if not fresh:
        return replace(history, seen=history.seen & listed)
    fresh.sort(key=lambda outcome: (outcome.at, outcome.runner))
    outcomes = (*history.outcomes, *fresh)[-window:]
    seen = (history.seen & listed) | {outcome.runner for outcome in fresh}
    return replace(history, outcomes=outcomes, seen=frozenset(seen))


def _fresh(history: FailureHistory, runner: EphemeralRunner, revision: int) -> bool:
    """Not recorded yet, and made for the applied revision (or a newer one)."""
    return runner.name not in history.seen and runner.actionable_revision >= revision


def failed_at(runner: EphemeralRunner) -> float:
    """When ``runner`` failed: its latest recorded Pod failure (``status.failures``), else
    its creation (a runner that failed before any Pod, e.g. on an invalid template).
    An unreadable time counts as long past, so it never keeps a runner around."""
    times = [_epoch(value) for value in runner.failures.values()]
    known = [t for t in times if t is not None]
    if known:
        return max(known)
    return _created_at(runner)


def _created_at(runner: EphemeralRunner) -> float:
    try:
        created = _epoch(runner.creation_timestamp)
    except FieldError:
        created = None
    return created if created is not None else 0.0


def due_for_collection(
    failed: Iterable[EphemeralRunner], *, now: float, ttl: float
) -> tuple[tuple[EphemeralRunner, ...], float | None]:
    """The Failed runners kept ``ttl`` seconds already, and the seconds until the next
    of the others is (None when none is left waiting)."""
    due: list[EphemeralRunner] = []
    waits: list[float] = []
    for runner in failed:
        left = failed_at(runner) + ttl - now
        if left <= 0:
            due.append(runner)
        else:
            waits.append(left)
    return tuple(due), (min(waits) if waits else None)


def describe_failure(runner: EphemeralRunner) -> str:
    """``name (reason: message)`` from the runner's status, for Events and conditions."""
    reason = str(runner.status.get("reason") or "") or "Failed"
    message = str(runner.status.get("message") or "")
    return f"{runner.name} ({reason}: {message})" if message else f"{runner.name} ({reason})"


def _outcome(runner: EphemeralRunner, *, failed: bool) -> Outcome:
    at = failed_at(runner) if failed else _created_at(runner)
    return Outcome(
        runner=runner.name,
        failed=failed,
        at=at,
        reason=str(runner.status.get("reason") or ""),
        message=str(runner.status.get("message") or ""),
    )


def _epoch(value: object) -> float | None:
    moment = parse_time(value)
    return moment.timestamp() if moment is not None else None


class FailureHistories:
    """Each set's :class:`FailureHistory`, keyed by set key and tied to its uid (a set
    recreated under the same name starts afresh). Thread-safe; in memory, like the
    expectations: a new leader rebuilds it from the Failed runners still listed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._histories: dict[str, tuple[str, FailureHistory]] = {}

    def update(
        self,
        key: str,
        uid: str,
        *,
        revision: int,
        failed: Iterable[EphemeralRunner],
        succeeded: Iterable[EphemeralRunner],
        window: int,
        now: float = 0.0,
    ) -> tuple[FailureHistory, FailureHistory]:
        """Record the listed runners (:func:`record`, at ``now``); returns (before, after)."""
        with self._lock:
            owner, before = self._histories.get(key, (uid, FailureHistory(revision=revision)))
            if owner != uid:
                before = FailureHistory(revision=revision)
            after = record(
                before,
                revision=revision,
                failed=failed,
                succeeded=succeeded,
                window=window,
                now=now,
            )
            self._histories[key] = (uid, after)
            return before, after

    def collected(self, key: str, uid: str, *, at: float) -> None:
        """Record that a Failed runner of set ``key`` was collected at ``at``."""
        with self._lock:
            owner, history = self._histories.get(key, (uid, FailureHistory()))
            if owner == uid:
                self._histories[key] = (uid, replace(history, collected_at=at))

    def get(self, key: str, uid: str) -> FailureHistory:
        """Set ``key``'s history as last updated (empty for another ``uid``)."""
        with self._lock:
            owner, history = self._histories.get(key, (uid, FailureHistory()))
            return history if owner == uid else FailureHistory()

    def forget(self, key: str) -> None:
        """Drop the history of set ``key`` (the set is gone)."""
        with self._lock:
            self._histories.pop(key, None)


CONDITION_TYPE: Final = "RunnersFailing"


@dataclass(frozen=True, kw_only=True)
class ConditionState:
    """What the set's ``RunnersFailing`` condition says: ``status`` "True" or "False"."""

    status: str
    reason: str
    message: str


def condition_state(history: FailureHistory, policy: FailedRunnerPolicy) -> ConditionState:
    """The ``RunnersFailing`` condition ``history`` calls for."""
    failed, total = history.failed, len(history.outcomes)
    latest = history.latest_failure
    if latest is None or not policy.failing(history):
        summary = (
            f"{failed} of the last {total} runners of revision {history.revision} failed"
            if total
            else f"no runner of revision {history.revision} has finished yet"
        )
        return ConditionState(status="False", reason=Reason.RUNNERS_RECOVERED, message=summary)
    detail = f"{latest.reason}: {latest.message}" if latest.message else latest.reason or "Failed"
    message = (
        f"{failed} of the last {total} runners failed, latest {latest.runner} ({detail}); "
        f"a replacement waits {policy.backoff(history):g}s after each Failed runner is "
        "deleted, until runners succeed again or the runner spec changes"
    )
    return ConditionState(status="True", reason=Reason.RUNNERS_FAILING, message=message)
