"""The one fake clock of the test suite: time that moves only when a test moves it.

Production code takes its clock as a callable (``clock: Callable[[], float]``, or one
returning an aware ``datetime`` for rules compared with Kubernetes timestamps); a test
passes a :class:`FakeClock` (or its :meth:`FakeClock.datetime`) and steps over a backoff,
a TTL or a health deadline with :meth:`FakeClock.advance` instead of sleeping through it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass
class FakeClock:
    """Seconds (monotonic or since the epoch, as the code under test reads them)."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def datetime(self) -> datetime:
        """The same instant as an aware UTC ``datetime``, for wall-clock rules."""
        return datetime.fromtimestamp(self.now, UTC)

    @classmethod
    def from_real_now(cls) -> FakeClock:
        """Starting at the real time in whole seconds: the embedded API server stamps
        objects with its own clock in whole seconds, and rules compare those stamps with
        this clock, so the two must start together."""
        return cls(now=float(int(time.time())))
