"""The listener's liveness and readiness, as the loop reports them (no I/O here).

Liveness (``/healthz``): the main loop made progress within ``stale_after`` seconds.
Progress is: the loop started, a long poll returned (a 202 or a message), a session was
opened, or an attempt of the documented 409 wait ran (another listener holds the
session; the loop waits ``session_retry_interval`` between attempts and is alive while
it does). The default window is 3x the service's ~50 s long-poll hold plus a retry budget
(the client's and the publisher's bounded backoffs), so a slow but working service never
looks dead, while a loop stuck for minutes (a hung call, a deadlock) does.

Readiness (``/readyz``): a message session is open and, since it opened, a desired count
was published (the listener does both at start and after replacing a lost session).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

from ersctl.platform.probes import Verdict

LONG_POLL_HOLD: Final = 50.0
"""Seconds the service holds a long poll before answering 202."""
RETRY_BUDGET: Final = 150.0
"""Seconds of retries (backoffs plus timed-out attempts) a working loop may spend."""
STALE_AFTER: Final = 3 * LONG_POLL_HOLD + RETRY_BUDGET
"""Seconds without progress after which the loop counts as dead (5 minutes)."""


class ListenerHealth:
    """Progress and session state of one listener loop; thread-safe.

    The loop calls the ``record_*`` methods; the HTTP server calls :meth:`live` and
    :meth:`ready` from its own threads. ``clock`` is monotonic seconds (injectable for
    tests); construction counts as progress (the loop is starting).
    """

    def __init__(
        self, *, stale_after: float = STALE_AFTER, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stale_after = stale_after
        self._clock = clock
        self._lock = threading.Lock()
        self._progress_at = clock()
        self._session_open = False
        self._published = False

    def record_progress(self) -> None:
        """The loop moved: a poll returned, or an attempt of the 409 wait ran."""
        with self._lock:
            self._progress_at = self._clock()

    def record_session_opened(self) -> None:
        """A new session is open; not ready until its first desired count is published."""
        with self._lock:
            self._progress_at = self._clock()
            self._session_open = True
            self._published = False

    def record_published(self) -> None:
        """A desired count was published."""
        with self._lock:
            self._published = True

    def record_session_closed(self) -> None:
        """The session was dropped (being replaced) or deleted (stopping)."""
        with self._lock:
            self._session_open = False

    def live(self) -> Verdict:
        with self._lock:
            idle = self._clock() - self._progress_at
        if idle > self._stale_after:
            return Verdict(
                ok=False,
                reason=f"no progress of the listener loop for {idle:.0f} s "
                f"(limit {self._stale_after:g} s)",
            )
        return Verdict(ok=True, reason="ok")

    def ready(self) -> Verdict:
        with self._lock:
            session_open, published = self._session_open, self._published
        if not session_open:
            return Verdict(ok=False, reason="no message session open")
        if not published:
            return Verdict(ok=False, reason="no desired count published yet")
        return Verdict(ok=True, reason="ok")
