"""Stopping the listener promptly: one stop request that every wait on its path obeys.

SIGTERM/SIGINT must end the listener within 2 s, even while a call is backing off
between retries (a GitHub 5xx burst, an API-server outage) or waiting out a 409 on
session creation. Every such wait goes through :meth:`StopSignal.sleep`: the
scale-set client's ``RetryPolicy(sleep=...)``, the publisher's ``KubeRetry(sleep=...)``
and the listener's own 409 wait. The CLI's signal handler calls
:meth:`StopSignal.request`.

After a stop request, a wait that ends within ``grace`` seconds of the request still
runs, so a short backoff can finish the work in hand (a message being handled, the
session delete); a longer one raises :class:`StopRequested` at once. The listener
catches it: a message whose handling was cut short is left unacknowledged (the service
delivers it again to the next session, and every handler is idempotent), and the exit
is the normal one (exit 0).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

SHUTDOWN_GRACE: Final = 1.0
"""Seconds after a stop request during which retry waits may still run (of the 2 s budget)."""
CHECK_INTERVAL: Final = 0.05
"""Seconds between looks at the stop flag while waiting."""


class StopRequested(BaseException):
    """A wait was abandoned because a stop was requested.

    A ``BaseException``, like ``KeyboardInterrupt``: the ``except Exception`` handlers it
    passes on the way up (retry loops, best-effort cleanups) must not swallow it.
    """


class StopSignal:
    """A stop request shared by every wait of one listener.

    ``request()`` is safe from a signal handler: it only sets attributes (no lock, which
    the interrupted thread might hold) and may be called more than once.
    """

    def __init__(
        self,
        *,
        grace: float = SHUTDOWN_GRACE,
        clock: Callable[[], float] = time.monotonic,
        nap: Callable[[float], None] = time.sleep,
        check_interval: float = CHECK_INTERVAL,
    ) -> None:
        self._grace = grace
        self._clock = clock
        self._nap = nap
        self._check_interval = check_interval
        self._requested_at: float | None = None

    @property
    def requested(self) -> bool:
        """True once a stop was requested."""
        return self._requested_at is not None

    def request(self) -> None:
        """Ask every current and future wait to end (the first request's time counts)."""
        if self._requested_at is None:
            self._requested_at = self._clock()

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; raise StopRequested instead if a stop makes the wait too long.

        Without a stop request this is a plain sleep (a request is seen within
        ``check_interval``). With one, the wait may run until ``grace`` seconds after the
        request; a wait that would end later raises StopRequested as soon as that is known.
        """
        end = self._clock() + max(seconds, 0.0)
        while True:
            requested_at = self._requested_at
            if requested_at is not None and end > requested_at + self._grace:
                raise StopRequested(f"stop requested; abandoned a {seconds:.2f} s wait")
            remaining = end - self._clock()
            if remaining <= 0:
                return
            self._nap(min(remaining, self._check_interval))
