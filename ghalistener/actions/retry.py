"""The one HTTP retry policy of the client (tenacity), built in one place.

Retried: connection and read failures (no response; not TLS certificate failures),
429, and 5xx except 501; a rate-limited answer (:func:`is_rate_limited`) only when the
policy's ``retry_rate_limited`` says so (the controller's does not: a worker sleeping
in a client retry serves no other key, so it requeues the key instead).
Never retried: any other status, including the long poll's 202 (a normal answer).
Backoff: exponential with full jitter, capped at ``max_wait`` seconds between tries,
at most ``max_retries`` retries after the first try. The last outcome is surfaced:
the last response (mapped to an error by the caller) or the last transport error.
"""

from __future__ import annotations

import email.utils
import logging
import ssl
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TypeVar

import httpx
import tenacity

T = TypeVar("T")

log = logging.getLogger(__name__)

#: A wait strategy: given tenacity's retry state, how long to sleep before the next try.
WaitStrategy = Callable[[tenacity.RetryCallState], float]
#: What actually sleeps; tests inject a no-op so they never sleep.
Sleeper = Callable[[float], None]


def is_retryable_status(status: int) -> bool:
    """True for 429 and 5xx other than 501 (Not Implemented will not get better)."""
    return status == 429 or (500 <= status <= 599 and status != 501)


def is_rate_limited(response: httpx.Response) -> bool:
    """Did the service refuse for its rate limit? 429, or GitHub's 403 that says when
    the limit resets (a 403 without that is a refusal, not a limit)."""
    if response.status_code == 429:
        return True
    headers = response.headers
    return response.status_code == 403 and (
        "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0"
    )


def rate_limit_wait(response: httpx.Response, *, now: float) -> float | None:
    """Seconds until the rate limit resets, from ``Retry-After`` (seconds or an HTTP
    date) or ``X-RateLimit-Reset`` (epoch seconds); None when neither says. ``now``:
    epoch seconds."""
    retry_after = response.headers.get("retry-after", "").strip()
    if retry_after.isdigit():
        return float(retry_after)
    if retry_after:
        try:
            moment = email.utils.parsedate_to_datetime(retry_after)
        except (TypeError, ValueError):
            moment = None
        if moment is not None:
            return max(0.0, moment.timestamp() - now)
    reset = response.headers.get("x-ratelimit-reset", "").strip()
    if reset.isdigit():
        return max(0.0, float(reset) - now)
    return None


def is_retryable_error(error: BaseException) -> bool:
    """True for transport failures that may pass: not a certificate the peer will keep
    presenting (retrying an untrusted server only delays the clear error)."""
    if not isinstance(error, httpx.TransportError):
        return False
    cause: BaseException | None = error
    for _ in range(16):  # bounded: exception chains can, rarely, form a cycle
        if cause is None:
            break
        if isinstance(cause, ssl.SSLCertVerificationError):
            return False
        cause = cause.__cause__ or cause.__context__
    return True


def _default_sleep(seconds: float) -> None:
    tenacity.nap.sleep(seconds)


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently to retry one HTTP request.

    ``sleep`` is the seam for tests: pass ``lambda _: None`` (or a recorder) so retries
    are instant. The listener passes ``StopSignal.sleep`` (``ghalistener.stopping``):
    whatever it raises ends the retries and propagates (a stop cuts a backoff short).
    ``initial_wait`` is the base of the exponential backoff. ``retry_rate_limited``:
    False returns a rate-limited answer at once, for the caller to requeue.
    """

    max_retries: int = 4
    initial_wait: float = 1.0
    max_wait: float = 30.0
    retry_rate_limited: bool = True
    sleep: Sleeper = field(default=_default_sleep, repr=False)

    def run(
        self,
        attempt: Callable[[], httpx.Response],
        *,
        also_retry: Collection[int] = (),
        request: object = "",
    ) -> httpx.Response:
        """Call ``attempt`` until it returns a non-retryable response or the bound is hit.

        ``also_retry`` adds statuses worth retrying for this call only (the admin
        connection retries 401/403 while a fresh registration token becomes valid).
        ``request`` (method and redacted URL; anything whose ``str()`` is that, so it
        can be built only when shown) names the call in the one WARNING line logged per
        failed attempt that is retried.
        Returns the last response (possibly a retryable status once retries are spent);
        re-raises the last ``httpx.TransportError`` when the final try had no response.
        """

        def retryable(response: httpx.Response) -> bool:
            if not self.retry_rate_limited and is_rate_limited(response):
                return False
            status = response.status_code
            return is_retryable_status(status) or status in also_retry

        return try_once_then_retry(
            attempt,
            retry_error=is_retryable_error,
            retry_result=retryable,
            retrying=lambda: tenacity.Retrying(
                stop=tenacity.stop_after_attempt(self.max_retries + 1),
                wait=tenacity.wait_random_exponential(
                    multiplier=self.initial_wait, max=self.max_wait
                ),
                retry=tenacity.retry_if_exception(is_retryable_error)
                | tenacity.retry_if_result(retryable),
                sleep=self.sleep,
                before_sleep=lambda state: _log_retry(request, state),
                retry_error_callback=_last_outcome,
                reraise=True,
            ),
        )


def try_once_then_retry(
    call: Callable[[], T],
    *,
    retry_error: Callable[[BaseException], bool],
    retry_result: Callable[[T], bool] = lambda _: False,
    retrying: Callable[[], tenacity.Retrying],
) -> T:
    """``retrying()(call)``, with the first try made before tenacity is built.

    Building and driving tenacity's state machine cost a tenth of a request's CPU, on
    every request, for the rare one that fails (the listener's profile). A first try
    whose error or result ``retry_error``/``retry_result`` (the predicates ``retrying``
    uses) would retry is handed to tenacity as its first attempt's outcome, replayed, so
    the attempts, the waits and the log lines are those of ``retrying()(call)``.
    """
    try:
        first = call()
    except BaseException as exc:  # as tenacity catches it: the predicate decides
        if not retry_error(exc):
            raise
        failure = exc

        def replay() -> T:
            raise failure

    else:
        if not retry_result(first):
            return first

        def replay() -> T:
            return first

    replays = [replay]

    def attempt() -> T:
        return replays.pop()() if replays else call()

    result: T = retrying()(attempt)
    return result


def _log_retry(request: object, state: tenacity.RetryCallState) -> None:
    outcome = state.outcome
    if outcome is None:
        return
    error = outcome.exception()
    what = f"status {outcome.result().status_code}" if error is None else type(error).__name__
    wait = state.next_action.sleep if state.next_action else 0.0
    log.warning(
        "retrying a failed GitHub request",
        extra={
            "fields": {
                "request": str(request),
                "outcome": what,
                "attempt": state.attempt_number,
                "wait": round(wait, 2),
            }
        },
    )


def _last_outcome(state: tenacity.RetryCallState) -> httpx.Response:
    assert state.outcome is not None
    return state.outcome.result()  # type: ignore[no-any-return]  # re-raises a stored error
