"""The token bucket of the API client's rate limit and the event spam filter."""

from __future__ import annotations

import math

import pytest

from ersctl.platform.ratelimit import TokenBucket
from tests.clock import FakeClock


def test_a_full_bucket_lets_a_burst_through_then_one_per_period() -> None:
    clock = FakeClock(0.0)
    bucket = TokenBucket(rate=2.0, burst=3, clock=clock)
    assert [bucket.try_take() for _ in range(4)] == [True, True, True, False]
    clock.now = 0.5
    assert [bucket.try_take() for _ in range(2)] == [True, False]


def test_reservations_queue_each_a_period_after_the_last() -> None:
    clock = FakeClock(0.0)
    bucket = TokenBucket(rate=10.0, burst=2, clock=clock)
    waits = [bucket.reserve() for _ in range(5)]
    assert waits == pytest.approx([0.0, 0.0, 0.1, 0.2, 0.3])
    clock.now = 1.0  # refilled, but never beyond the burst
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])


def test_an_infinite_rate_never_waits() -> None:
    bucket = TokenBucket(rate=math.inf, burst=1, clock=FakeClock(0.0))
    assert all(bucket.try_take() for _ in range(100))


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 1), (1.0, 0)])
def test_a_bucket_that_could_never_pass_anything_is_refused(rate: float, burst: int) -> None:
    with pytest.raises(ValueError, match="rate > 0 and a burst >= 1"):
        TokenBucket(rate=rate, burst=burst)
