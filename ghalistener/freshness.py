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
  Nothing in a message tells them from new ones. But if the statistics changed after
  such a message was made, the service has a newer message queued and delivers it at
  once. So while catching up (from the session's opening until a long poll waits), a
  message that would *raise* the count is held back (:attr:`Verdict.HOLD_BACK`): its
  jobs are handled and the count in force is published again; a newer message replaces
  it, and if none comes within the listener's catch-up wait, or a long poll ends empty,
  its statistics were current after all and are published then (:meth:`caught_up`).
  A lower count is taken at once: it creates no runner, and a newer message corrects it.

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
    """What the listener knows of the age of the statistics it is handed.

    ``last_message_id``: the newest message whose statistics the scale set's previous
    listener published (0: none known).
    """

    def __init__(self, *, last_message_id: int = 0) -> None:
        self.newest_message_id = last_message_id
        """The newest message whose statistics were published."""
        self.catching_up = False
        self.held_back: RunnerScaleSetMessage | None = None

    def session_opened(self) -> None:
        """A new session: its statistics are the newest; catch up if a listener ran."""
        self.catching_up = self.newest_message_id > 0
        self.held_back = None

    def judge(self, message: RunnerScaleSetMessage, *, raises_count: bool) -> Verdict:
        """Whether ``message``'s statistics may be published (``raises_count``: they ask for
        more runners than the count in force). A held-back message is superseded by any
        newer one."""
        if message.message_id <= self.newest_message_id:
            return Verdict.REDELIVERED
        if self.catching_up and raises_count:
            self.held_back = message
            return Verdict.HOLD_BACK
        self.held_back = None
        self.newest_message_id = message.message_id
        return Verdict.CURRENT

    def caught_up(self) -> RunnerScaleSetMessage | None:
        """The queue is drained (a long poll waited, or ended empty): stop catching up; the
        message held back, if any, is current (its id is now the newest published)."""
        self.catching_up = False
        held, self.held_back = self.held_back, None
        if held is not None:
            self.newest_message_id = held.message_id
        return held
