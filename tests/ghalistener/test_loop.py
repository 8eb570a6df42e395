"""The listener loop against in-memory fakes of its own protocols (pure loop logic)."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from ersctl.kube.errors import KubeError
from ghalistener.errors import SessionHeldError
from ghalistener.ports import SessionRetry
from tests.ghalistener.fakes import (
    FakePublisher,
    FakeSession,
    Journal,
    available,
    completed,
    conflict,
    desired,
    make_listener,
    message,
    not_found,
    started,
    stats,
    stop_then_block,
)


def test_statistics_then_timeouts_publish_a_desired_count_each_time() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(2))
    listener, _ = make_listener(journal, [session])
    session.script = [None, None, stop_then_block(listener, session)]
    listener.run()
    # 202 recomputes from the latest statistics: assigned 2 stays 2, IDs advance.
    assert desired(journal) == [(2, 0), (2, 1), (2, 2)]
    assert journal[-1] == ("close", "s1")


def test_every_long_poll_runs_on_one_thread_not_a_thread_each() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(0))
    listener, _ = make_listener(journal, [session])
    polled_on: list[threading.Thread] = []

    def timeout() -> None:
        polled_on.append(threading.current_thread())

    session.script = [timeout, message(1, 1, available(11)), timeout, timeout]
    session.script.append(stop_then_block(listener, session))
    listener.run()
    assert len(polled_on) == 3
    assert all(thread is polled_on[0] for thread in polled_on)
    assert polled_on[0] is not threading.main_thread()


def test_idle_at_the_minimum_publishes_zero_every_time() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(0))
    listener, _ = make_listener(journal, [session], min_runners=1)
    session.script = [None, None, None, stop_then_block(listener, session)]
    listener.run()
    assert desired(journal) == [(1, 0), (1, 0), (1, 0), (1, 0)]


def test_a_message_is_handled_in_order_and_acked_last() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal)
    publisher = FakePublisher(journal, known_runners={"runner-a"})
    listener, _ = make_listener(journal, [session], publisher=publisher)
    msg = message(
        5, 1, completed(3, "runner-b"), available(11), started(9, "runner-a"), available(12)
    )
    session.script = [msg, stop_then_block(listener, session)]
    listener.run()
    handled = [e for e in journal if e[0] != "poll"][2:]  # after open + initial desired
    assert handled == [
        ("acquire", "s1", (11, 12)),
        ("job-started", "runner-a"),
        ("desired", 1, 1),
        ("ack", "s1", 5),
        ("close", "s1"),
    ]
    polls = [e for e in journal if e[0] == "poll"]
    assert polls == [("poll", "s1", 0, 10), ("poll", "s1", 5, 10)]


def test_a_completed_job_at_the_minimum_yields_a_fresh_id_then_zero() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal)
    listener, _ = make_listener(journal, [session])
    session.script = [
        None,
        message(1, 0, completed(3, "r")),
        None,
        stop_then_block(listener, session),
    ]
    listener.run()
    assert desired(journal) == [(0, 0), (0, 0), (0, 2), (0, 0)]


def test_a_message_without_available_jobs_acquires_nothing() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal)
    listener, _ = make_listener(journal, [session])
    session.script = [message(1, 0), stop_then_block(listener, session)]
    listener.run()
    assert not [e for e in journal if e[0] == "acquire"]
    assert ("ack", "s1", 1) in journal


@pytest.mark.parametrize(
    "where",
    [pytest.param("poll", id="a 404 on the long poll"), pytest.param("ack", id="a 404 on the ack")],
)
def test_a_dropped_session_is_replaced_and_its_statistics_published(where: str) -> None:
    journal: Journal = []
    first = FakeSession("s1", journal, statistics=stats(1))
    second = FakeSession("s2", journal, statistics=stats(3))
    listener, opener = make_listener(journal, [first, second])
    if where == "poll":
        first.script = [message(4, 2), not_found()]
    else:
        first.script = [message(4, 2)]
        first.ack_errors[4] = not_found()
    second.script = [None, stop_then_block(listener, second)]
    listener.run()
    assert opener.calls == 2
    assert ("open", "s2") in journal
    # The new session starts from its own statistics, and polls from message id 0.
    s2_polls = [e for e in journal if e[0] == "poll" and e[1] == "s2"]
    assert s2_polls[0] == ("poll", "s2", 0, 10)
    assert desired(journal) == [(1, 0), (2, 1), (3, 2), (3, 3)]
    # The old session is deleted (best effort) before the new one is opened: if the
    # 404 did not really mean "gone", it would otherwise hold the scale set (409s).
    assert journal.index(("close", "s1")) < journal.index(("open", "s2"))
    assert journal[-1] == ("close", "s2")


def test_a_dropped_session_publishes_its_statistics_straight_away() -> None:
    journal: Journal = []
    first = FakeSession("s1", journal, statistics=stats(0))
    second = FakeSession("s2", journal, statistics=stats(4))
    listener, _ = make_listener(journal, [first, second])
    first.script = [not_found()]
    second.script = [stop_then_block(listener, second)]
    listener.run()
    assert desired(journal) == [(0, 0), (4, 1)]


def test_a_conflict_at_start_is_retried_until_the_session_is_free() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal)
    listener, opener = make_listener(journal, [conflict(), conflict(), session])
    session.script = [stop_then_block(listener, session)]
    listener.run()
    assert opener.calls == 3
    assert desired(journal) == [(0, 0)]


def test_a_conflict_that_outlasts_every_attempt_gives_up_naming_the_cause() -> None:
    journal: Journal = []
    listener, opener = make_listener(
        journal, [conflict() for _ in range(4)], retry=SessionRetry(interval=0.01, attempts=3)
    )
    started_at = time.monotonic()
    with pytest.raises(SessionHeldError, match="another listener holds the message session"):
        listener.run()
    assert opener.calls == 3
    assert time.monotonic() - started_at >= 0.02, "it waits between attempts"
    assert desired(journal) == []


def test_a_stop_during_the_conflict_wait_returns_without_a_session(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="ghalistener")  # the stop is an INFO line
    journal: Journal = []
    listener, opener = make_listener(
        journal, [conflict(), conflict()], retry=SessionRetry(interval=30.0, attempts=10)
    )
    threading.Timer(0.2, listener.request_stop).start()
    started_at = time.monotonic()
    listener.run()
    assert time.monotonic() - started_at < 2
    assert opener.calls == 1
    stops = [r.getMessage() for r in caplog.records if "stop requested" in r.getMessage()]
    assert stops == ["stop requested while waiting to retry"], "no message was in hand"


def test_a_stop_ends_a_long_poll_promptly_and_deletes_the_session() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal)  # empty script: the poll hangs
    listener, _ = make_listener(journal, [session])
    threading.Timer(0.3, listener.request_stop).start()
    started_at = time.monotonic()
    listener.run()
    assert time.monotonic() - started_at < 2
    assert journal[-1] == ("close", "s1")


def test_a_stop_requested_while_handling_a_message_lets_it_finish() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal)
    publisher = FakePublisher(journal)
    listener, _ = make_listener(journal, [session], publisher=publisher)
    publisher.on_publish = lambda: listener.request_stop() if len(desired(journal)) == 2 else None
    session.script = [message(8, 1, completed(1, "r")), message(9, 1)]
    listener.run()
    assert ("ack", "s1", 8) in journal, "the message in hand is acked"
    assert not [e for e in journal if e[0] == "poll" and e[2] == 8], "no poll after the stop"
    assert journal[-1] == ("close", "s1")


def test_a_crash_mid_message_leaves_it_unacked_and_the_session_deleted() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal)
    publisher = FakePublisher(
        journal, fail_on_job_started=KubeError("boom", status=500, reason="Internal Server Error")
    )
    listener, _ = make_listener(journal, [session], publisher=publisher)
    session.script = [message(3, 1, started(1, "r"))]
    with pytest.raises(KubeError):
        listener.run()
    assert not [e for e in journal if e[0] == "ack"]
    assert journal[-1] == ("close", "s1")


def test_a_failed_poll_propagates_after_deleting_the_session() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, script=[RuntimeError("network down")])
    listener, _ = make_listener(journal, [session])
    with pytest.raises(RuntimeError, match="network down"):
        listener.run()
    assert journal[-1] == ("close", "s1")


def test_republishing_the_same_idle_state_is_not_logged_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="ghalistener")
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(0))
    listener, _ = make_listener(journal, [session], min_runners=1)
    session.script = [None, None, message(1, 2), stop_then_block(listener, session)]
    listener.run()
    # Every poll publishes (the timer the controller recovers by), but only a change of
    # (replicas, patch ID) is an INFO line: the start, then the new demand.
    assert desired(journal) == [(1, 0), (1, 0), (1, 0), (3, 3)]
    logged = [
        (r.fields["replicas"], r.fields["patch_id"])  # type: ignore[attr-defined]
        for r in caplog.records
        if r.getMessage() == "published desired runner count" and r.levelno == logging.INFO
    ]
    assert logged == [(1, 0), (3, 3)]
