"""A token bucket, as client-go's flowcontrol and workqueue limiters keep one: ``rate``
tokens a second, at most ``burst`` saved up.

Two uses: a blocking limit on requests (the controller's Kubernetes client, ARC's
``--k8s-client-rate-limiter-qps``/``-burst``: :meth:`TokenBucket.reserve` takes a
token now or later and says how long to wait), and a filter that drops what exceeds
it (the event recorder's per-object spam filter: :meth:`TokenBucket.try_take`).
Thread-safe; time from an injectable monotonic clock. Pure.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable


class TokenBucket:
    """``rate`` tokens a second (``math.inf``: no limit), ``burst`` at most; full at first."""

    def __init__(
        self, *, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(
                f"a token bucket needs a rate > 0 and a burst >= 1, not {rate}/{burst}"
            )
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        if math.isinf(self._rate):
            self._tokens = self._burst
        else:
            self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._rate)
        self._updated = now

    def try_take(self) -> bool:
        """Take a token if one is there now."""
        with self._lock:
            self._refill()
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True

    def reserve(self) -> float:
        """Take a token, possibly one not yet there: the seconds to wait before using it
        (0 when one was there). Reservations queue in call order."""
        with self._lock:
            self._refill()
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self._rate
