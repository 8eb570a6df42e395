"""Which message statistics the listener may publish (pure, no I/O).

A count published from statistics older than the count in force creates runners for
jobs that are gone (or drops runners still wanted). Messages are ordered (their ids
grow), a session's statistics are current when it opens, and a message's statistics are
those of the moment the service made it. Two kinds of old statistics follow:

- **Delivered again**: a message whose id is not above the newest message whose
  statistics were published (by this process, or by the scale set's previous listener,
  which the set's ``actions.github.com/last-message-id`` annotation says) was handled
  before, and its statistics are older than those published since.
  :attr:`Verdict.REDELIVERED`: handle its jobs (idempotent), ignore its statistics.
- **Queued before the session**: when a session opens after a listener ran, the queue
  may hold messages made before the session's statistics (one the previous listener
  never acknowledged, or one the service made for a long poll whose listener had died).
  Nothing in a message tells them from new ones. But the service delivers what it has
  queued at once, and if the statistics changed after such a message was made, a newer
  message is queued behind it. So for a short catch-up window after the session opens,
  a message that would *raise* the count is held back (:attr:`Verdict.HOLD_BACK`): its
  jobs are handled and the count in force is published again (unless that tells the
  controller nothing new, ``ghalistener.scaler.tells_nothing_new``); a newer message replaces
  it, and when the window ends, or a long poll ends empty, the one held back is current
  after all and is published (:meth:`caught_up`). A lower count is taken at once: it
  creates no runner, and a newer message corrects it. The window bounds what a real rise
  in demand can wait, however busy the queue stays.

The first listener of a scale set has nothing to catch up with: nothing is held back.
"""

from __future__ import annotations

from enum import Enum

from ghalistener.actions.types import RunnerScaleSetMessage


class Verdict(Enum):
    CURRENT = "current"
    """Publish the message's statistics."""
    REDELIVERED = "delivered again"
    """Handled before: publish from the statistics already taken."""
    HOLD_BACK = "may predate the session: held back"
    """It may predate the session: publish the count in force until :meth:`caught_up`."""


class StatisticsAge:
    """What the listener knows of the age of the statistics it is handed. Times are
    ``time.monotonic()`` seconds, passed in.

    ``last_message_id``: the newest message whose statistics the scale set's previous
    listener published (0: none known).
    """

    def __init__(self, *, last_message_id: int = 0) -> None:
        self.newest_message_id = last_message_id
        """The newest message whose statistics were judged current (published, or left
        unpublished because they repeated the count in force)."""
        self.catch_up_until = 0.0
        """When the catch-up window after the last session's opening ends (0: none)."""
        self.held_back: RunnerScaleSetMessage | None = None

    def session_opened(self, *, now: float, window: float) -> None:
        """A new session: its statistics are the newest; catch up if a listener ran."""
        self.catch_up_until = now + window if self.newest_message_id > 0 else 0.0
        self.held_back = None

    def judge(self, message: RunnerScaleSetMessage, *, raises_count: bool) -> Verdict:
        """Whether ``message``'s statistics may be published (``raises_count``: they ask for
        more runners than the count in force). A held-back message is superseded by any
        newer one. The window is open until :meth:`caught_up` (the listener calls it once
        ``catch_up_until`` has passed, before it takes the next message)."""
        if message.message_id <= self.newest_message_id:
            return Verdict.REDELIVERED
        if raises_count and self.catch_up_until:
            self.held_back = message
            return Verdict.HOLD_BACK
        self.held_back = None
        self.newest_message_id = message.message_id
        return Verdict.CURRENT

    def caught_up(self) -> RunnerScaleSetMessage | None:
        """The catch-up window ended (or a long poll ended empty): the message held back,
        if any, is current; its id is now the newest published."""
        self.catch_up_until = 0.0
        held, self.held_back = self.held_back, None
        if held is not None:
            self.newest_message_id = held.message_id
        return held
