"""The desired runner count and the patch ID state machine (pure, no I/O).

This module is the producer side of the patch ID contract (README "The patch ID contract").
The controller (``ersctl``) suppresses a scale-up while ``spec.patchID`` still equals
the ID its finished-runner cleanup serviced; that is only safe because this state
machine guarantees that any job event yields a fresh, non-zero ID on the next call.

Rules, in the order :meth:`Scaler.desired_count` applies them:

- target = min(min_runners + totalAssignedJobs, max_runners);
- the sequence starts at -1 on every construction (every process start); each call
  first wraps it to 0 when it equals 2147483647, then increments it, so the first
  published ID after a start is 0 and after 2147483647 comes 1;
- the published ID is the sequence value, except 0 when nothing was dirty since the
  last call AND target == previous target AND target == min_runners ("idle at the
  minimum: force this state"); the previous target is "none" before the first call;
- dirty is set by JobStarted and JobCompleted and cleared by every call.

A decision made for a message that :func:`tells_nothing_new` of (no job started or
completed since the last published one, the same count, the same completions, the same
kind of ID) is not published while the last publish is recent
(``ghalistener.listener.FRESH_ID_INTERVAL``): the spec already says it, and its only
news, a fresh ID, comes with the next publish, an empty long poll's or one past that
interval. A set short of runners for another reason than its cleanup is refilled under
a fresh ID, so the interval bounds how long a stream of messages without news can keep
one from coming.

Every decision also carries the completions its count leaves out
(:attr:`Decision.completed_runners`): the runner IDs of the JobCompleted messages handled
before a call whose assigned-jobs count is at least as new as those messages (``accounts``,
true unless the listener deliberately publishes an older count). The newest
:attr:`Scaler.completions_kept` are kept, duplicates dropped. The controller refills the
slot of a finished runner named there at once (its job is not in the count), and holds the
slot of any other as ARC does, until the next patch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ersctl.api import MAX_PATCH_ID, PatchID, RunnerID

_NO_TARGET: Final = -1
"""The previous target before the first call: no count has been published yet."""

COMPLETIONS_KEPT_AT_LEAST: Final = 32
"""The fewest completions a decision names: a runner finishes a second or two after its
completion is handled, and its name must still be in the count then to be refilled at once."""


@dataclass(frozen=True, kw_only=True)
class Decision:
    """One desired-count decision, ready to be published as ``spec{replicas, patchID}``.

    ``sequence`` is the internal sequence value after this call; ``patch_id`` is either
    that value or 0. ``dirty`` tells whether a job event preceded the call.
    """

    replicas: int
    patch_id: PatchID
    sequence: int
    assigned_jobs: int
    dirty: bool
    completed_runners: tuple[RunnerID, ...] = ()
    """Runner IDs whose completed jobs ``replicas`` leaves out, oldest first."""


class Scaler:
    """Turns statistics and job events into :class:`Decision` values.

    Not thread-safe: the listener calls it from its one loop thread. Constructing a new
    instance is a restart: the sequence begins again at -1. ``completed``: the completions
    the previous incarnation published (any count this one publishes is newer).
    """

    def __init__(
        self, *, min_runners: int, max_runners: int, completed: Iterable[int] = ()
    ) -> None:
        if min_runners < 0 or max_runners < min_runners:
            raise ValueError(
                f"need 0 <= min_runners <= max_runners, got {min_runners}, {max_runners}"
            )
        self.min_runners = min_runners
        self.max_runners = max_runners
        self.completions_kept = max(COMPLETIONS_KEPT_AT_LEAST, 2 * max_runners)
        self._sequence = -1
        self._previous_target = _NO_TARGET
        self._dirty = False
        self._accounted: deque[RunnerID] = deque(maxlen=self.completions_kept)
        self._unaccounted: list[RunnerID] = []
        self._account([RunnerID(runner_id) for runner_id in completed])

    @property
    def sequence(self) -> int:
        """The sequence value of the last call (-1 before the first)."""
        return self._sequence

    @property
    def dirty(self) -> bool:
        """Whether a job started or completed since the last desired-count call."""
        return self._dirty

    def job_started(self) -> None:
        """A JobStarted message was handled: the next ID must be fresh."""
        self._dirty = True

    def job_completed(self, runner_id: int = 0) -> None:
        """A JobCompleted message was handled: the next ID must be fresh.

        This is what makes the controller's cleanup guard safe: the cleanup it did for
        this job is recorded under the current ID, and a fresh ID lifts the suppression.
        ``runner_id`` (0: none, a job canceled before it ran) is named by the next
        decision that accounts for it.
        """
        self._dirty = True
        if runner_id > 0:
            self._unaccounted.append(RunnerID(runner_id))

    def target(self, assigned_jobs: int) -> int:
        """min(min_runners + assigned_jobs, max_runners); negative counts count as 0."""
        return min(self.min_runners + max(assigned_jobs, 0), self.max_runners)

    def desired_count(self, assigned_jobs: int, *, accounts: bool = True) -> Decision:
        """Advance the state machine once and return what to publish.

        ``accounts``: ``assigned_jobs`` is at least as new as every JobCompleted handled so
        far (False: an older count, published on purpose; those completions wait).
        """
        if accounts:
            self._account(self._unaccounted)
            self._unaccounted = []
        dirty, self._dirty = self._dirty, False
        if self._sequence == MAX_PATCH_ID:
            self._sequence = 0
        self._sequence += 1

        target = self.target(assigned_jobs)
        previous, self._previous_target = self._previous_target, target

        patch_id = self._sequence
        if not dirty and target == previous and target == self.min_runners:
            # Idle at the minimum with nothing happening: 0 tells the controller to
            # force this state (scale down strays), and it is never suppressed.
            patch_id = 0
        return Decision(
            replicas=target,
            patch_id=PatchID(patch_id),
            sequence=self._sequence,
            assigned_jobs=assigned_jobs,
            dirty=dirty,
            completed_runners=tuple(self._accounted),
        )

    def _account(self, runner_ids: Iterable[RunnerID]) -> None:
        for runner_id in runner_ids:
            if runner_id not in self._accounted:
                self._accounted.append(runner_id)


def tells_nothing_new(decision: Decision, published: Decision | None) -> bool:
    """Whether publishing ``decision`` after ``published`` (the last decision published;
    None: none yet) would tell the controller nothing but a fresh ID.

    Nothing new: no job started or completed since ``published`` (``decision.dirty`` is
    False), the same count and completions, and both IDs 0 or both not (0 forces the
    state at the minimum, so a change to or from it is news). A message that only
    acquired jobs, or whose statistics still count what was published, is one: ARC's
    listener patched for each (a tenth of the soak's writes per job); the controller acts
    on such a fresh ID only where its set is short for another reason than its cleanup
    (the listener's interval bounds that wait).
    """
    return (
        published is not None
        and not decision.dirty
        and decision.replicas == published.replicas
        and decision.completed_runners == published.completed_runners
        and (decision.patch_id == 0) == (published.patch_id == 0)
    )
