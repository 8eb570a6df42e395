"""Liveness and readiness of the listener: the pure state, and the loop reporting to it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ersctl.platform.probes import Verdict
from ghalistener.health import STALE_AFTER, ListenerHealth
from ghalistener.listener import Listener
from ghalistener.ports import SessionRetry
from ghalistener.scaler import Scaler
from tests.clock import FakeClock
from tests.ghalistener.fakes import FakePublisher, FakeSession, Journal, Opener, not_found, stats


def test_a_starting_listener_is_live_but_not_ready() -> None:
    health = ListenerHealth(clock=FakeClock())
    assert health.live().ok
    assert health.ready() == Verdict(ok=False, reason="no message session open")


def test_ready_only_once_a_desired_count_is_published_in_an_open_session() -> None:
    health = ListenerHealth(clock=FakeClock())
    health.record_session_opened()
    assert health.ready() == Verdict(ok=False, reason="no desired count published yet")
    health.record_published()
    assert health.ready().ok


@pytest.mark.parametrize(
    "closing",
    [
        pytest.param(lambda h: h.record_session_closed(), id="session closed"),
        pytest.param(
            lambda h: (h.record_session_closed(), h.record_session_opened()),
            id="replaced by a session that has published nothing yet",
        ),
    ],
)
def test_a_lost_session_makes_the_listener_unready(
    closing: Callable[[ListenerHealth], object],
) -> None:
    health = ListenerHealth(clock=FakeClock())
    health.record_session_opened()
    health.record_published()
    closing(health)
    assert not health.ready().ok


def test_liveness_fails_only_after_the_window_without_progress() -> None:
    clock = FakeClock()
    health = ListenerHealth(stale_after=300.0, clock=clock)
    clock.now += 300.0
    assert health.live().ok
    clock.now += 1.0
    verdict = health.live()
    assert not verdict.ok
    assert verdict.reason == "no progress of the listener loop for 301 s (limit 300 s)"


@pytest.mark.parametrize(
    "progress",
    [
        pytest.param(ListenerHealth.record_progress, id="a poll returned"),
        pytest.param(ListenerHealth.record_session_opened, id="a session opened"),
    ],
)
def test_progress_restarts_the_liveness_window(progress: Callable[[ListenerHealth], None]) -> None:
    clock = FakeClock()
    health = ListenerHealth(stale_after=300.0, clock=clock)
    clock.now += 299.0
    progress(health)
    clock.now += 299.0
    assert health.live().ok


def test_publishing_alone_is_not_progress_of_the_loop() -> None:
    clock = FakeClock()
    health = ListenerHealth(stale_after=10.0, clock=clock)
    clock.now += 11.0
    health.record_published()
    assert not health.live().ok


def test_the_default_window_outlasts_three_long_polls_and_retries() -> None:
    assert STALE_AFTER >= 3 * 50


# --- the loop reports to it ---------------------------------------------------------


def make_listener(
    journal: Journal,
    sessions: list[FakeSession | BaseException],
    health: ListenerHealth,
    publisher: FakePublisher | None = None,
) -> Listener:
    return Listener(
        scale_set_id=7,
        open_session=Opener(sessions, journal),
        scaler=Scaler(min_runners=0, max_runners=10),
        publisher=publisher or FakePublisher(journal),
        session_retry=SessionRetry(interval=0.0, attempts=10),
        health=health,
    )


def test_the_loop_is_ready_while_polling_and_unready_after_it_stops() -> None:
    journal: Journal = []
    health = ListenerHealth(clock=FakeClock())
    session = FakeSession("s1", journal, statistics=stats(1))
    listener = make_listener(journal, [session], health)
    seen: list[bool] = []

    def poll_then_stop() -> None:
        seen.append(health.ready().ok)
        listener.request_stop()

    session.script = [poll_then_stop]
    assert not health.ready().ok
    listener.run()
    assert seen == [True]
    assert not health.ready().ok


def test_a_dropped_session_is_unready_until_its_replacement_publishes() -> None:
    journal: Journal = []
    health = ListenerHealth(clock=FakeClock())
    ready_at_publish: list[bool] = []
    publisher = FakePublisher(
        journal, on_publish=lambda: ready_at_publish.append(health.ready().ok)
    )
    first = FakeSession("s1", journal, statistics=stats(1))
    second = FakeSession("s2", journal, statistics=stats(2))
    listener = make_listener(journal, [first, second], health, publisher)
    ready_in_poll: list[bool] = []

    def poll_then_stop() -> None:
        ready_in_poll.append(health.ready().ok)
        listener.request_stop()

    first.script = [not_found()]
    second.script = [poll_then_stop]
    listener.run()
    # Each session's first publish happens while the listener is still unready; the
    # 202 after it, once ready.
    assert ready_at_publish == [False, False, True]
    assert ready_in_poll == [True]


def test_each_returned_poll_is_progress_of_the_loop() -> None:
    journal: Journal = []
    clock = FakeClock()
    health = ListenerHealth(stale_after=10.0, clock=clock)
    session = FakeSession("s1", journal, statistics=stats(0))
    listener = make_listener(journal, [session], health)
    live: list[bool] = []

    def slow_poll() -> None:
        clock.now += 8.0  # each poll takes 8 s: 16 s in all, but never 10 s without progress
        live.append(health.live().ok)

    def stop() -> None:
        listener.request_stop()

    session.script = [slow_poll, slow_poll, stop]
    listener.run()
    assert live == [True, True]
