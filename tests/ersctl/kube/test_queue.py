"""The work queue: dedupe, one worker per key, delays and per-key backoff."""

from __future__ import annotations

import random
import threading
import time

import pytest

from ersctl.kube.queue import Backoff, WorkQueue
from tests.clock import FakeClock


def drain(queue: WorkQueue[str]) -> list[str]:
    """Every key ready now, each marked done at once."""
    keys = []
    while (key := queue.get(block=False)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def test_a_key_added_many_times_while_waiting_is_handed_out_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for _ in range(5):
        queue.add("ns/a")
    queue.add("ns/b")

    assert drain(queue) == ["ns/a", "ns/b"]


def test_a_key_added_while_processing_waits_for_done_and_then_runs_once_more() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("ns/a")
    first = queue.get(block=False)
    queue.add("ns/a")
    queue.add("ns/a")

    assert first == "ns/a"
    assert queue.get(block=False) is None  # a second worker may not take it
    queue.done("ns/a")
    assert drain(queue) == ["ns/a"]


def test_two_workers_never_hold_the_same_key_at_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    keys = [f"ns/{i}" for i in range(4)]
    held: set[str] = set()
    overlaps: list[str] = []
    reconciles = 0
    lock = threading.Lock()

    def worker() -> None:
        nonlocal reconciles
        while (key := queue.get(timeout=2)) is not None:
            with lock:
                if key in held:
                    overlaps.append(key)
                held.add(key)
                reconciles += 1
            time.sleep(0.0005)
            queue.add(random.choice(keys))  # events keep arriving mid-reconcile
            with lock:
                held.discard(key)
            queue.done(key)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for _ in range(300):
        queue.add(random.choice(keys))
    time.sleep(0.3)
    queue.shutdown()
    for thread in threads:
        thread.join(5)

    assert reconciles > 50
    assert overlaps == []


def test_add_after_holds_a_key_until_its_time() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("ns/a", 5.0)

    assert drain(queue) == []
    assert queue.delayed() == 1
    clock.advance(4.9)
    assert drain(queue) == []
    clock.advance(0.1)
    assert drain(queue) == ["ns/a"]


def test_a_key_parked_twice_keeps_the_earlier_time() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("ns/a", 10.0)
    queue.add_after("ns/a", 2.0)
    queue.add_after("ns/a", 7.0)

    clock.advance(2.0)
    assert drain(queue) == ["ns/a"]
    clock.advance(10.0)
    assert drain(queue) == []


def test_a_blocking_get_wakes_up_when_a_delayed_key_is_due() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("ns/a", 0.05)
    started = time.monotonic()

    assert queue.get(timeout=2) == "ns/a"
    assert 0.04 <= time.monotonic() - started < 1.0


def test_failures_back_off_exponentially_per_key_and_forget_resets_them() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(backoff=Backoff(base=1.0, cap=8.0), clock=clock)

    delays = [queue.add_rate_limited("ns/a") for _ in range(5)]
    other = queue.add_rate_limited("ns/b")
    queue.forget("ns/a")

    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert other == 1.0
    assert queue.failures("ns/a") == 0
    assert queue.failures("ns/b") == 1
    assert queue.add_rate_limited("ns/a") == 1.0


def test_a_rate_limited_key_is_handed_out_after_its_delay() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(backoff=Backoff(base=1.0, cap=60.0), clock=clock)
    queue.add_rate_limited("ns/a")
    queue.add_rate_limited("ns/a")  # second failure: 2 s, but the 1 s entry wins

    assert drain(queue) == []
    clock.advance(1.0)
    assert drain(queue) == ["ns/a"]


@pytest.mark.parametrize(
    ("failures", "expected"),
    [
        pytest.param(0, 0.005, id="first-retry-is-the-base"),
        pytest.param(3, 0.04, id="doubles-per-failure"),
        pytest.param(30, 1000.0, id="capped"),
        pytest.param(500, 1000.0, id="huge-failure-counts-do-not-overflow"),
    ],
)
def test_default_backoff_is_controller_runtimes(failures: int, expected: float) -> None:
    assert Backoff().delay(failures) == pytest.approx(expected)


def test_shutdown_releases_blocked_getters_and_ignores_later_adds() -> None:
    queue: WorkQueue[str] = WorkQueue()
    results: list[str | None] = []
    getter = threading.Thread(target=lambda: results.append(queue.get()))
    getter.start()
    time.sleep(0.02)
    queue.shutdown()
    getter.join(2)
    queue.add("ns/a")

    assert results == [None]
    assert queue.get(block=False) is None
    assert len(queue) == 0
