"""Old statistics are not published again, and each count names the completions it
leaves out: the listener loop against in-memory fakes of its own protocols."""

from __future__ import annotations

import time
from collections.abc import Callable

from ghalistener.actions.types import RunnerScaleSetMessage
from tests.ghalistener.fakes import (
    FakePublisher,
    FakeSession,
    Journal,
    available,
    completed,
    desired,
    make_listener,
    message,
    not_found,
    stats,
    stop_then_block,
)


def test_a_message_delivered_again_has_its_jobs_handled_and_its_count_ignored() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(1))
    publisher = FakePublisher(journal)
    listener, _ = make_listener(journal, [session], publisher=publisher)
    # Message 4 comes back after 5 (the service lost an ack), with its older count.
    session.script = [message(4, 2), message(5, 3), message(4, 2, available(11))]
    session.script.append(stop_then_block(listener, session))
    listener.run()
    # Its count ignored, it tells the controller nothing new: nothing is published.
    assert desired(journal) == [(1, 0), (2, 1), (3, 2)]
    assert ("acquire", "s1", (11,)) in journal, "its jobs are handled"
    assert [last for _, last in publisher.published] == [0, 4, 5]


def test_a_restarted_listener_ignores_statistics_its_predecessor_had_published() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(1))
    publisher = FakePublisher(journal)
    listener, _ = make_listener(journal, [session], publisher=publisher, last_message_id=9)
    # Then a long poll ends empty: it would publish a count merely held back.
    session.script = [message(9, 6), None, stop_then_block(listener, session)]
    listener.run()
    assert desired(journal) == [(1, 0), (1, 1), (1, 2)]
    assert publisher.published[-1][1] == 9


def test_after_a_restart_a_higher_count_waits_and_a_newer_message_replaces_it() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(1))
    publisher = FakePublisher(journal)
    listener, _ = make_listener(journal, [session], publisher=publisher, last_message_id=5)
    # Message 6 was made before the session opened (its listener died): 4 assigned then;
    # message 7, queued behind it, has the count as it is.
    session.script = [message(6, 4, completed(3, "r", runner_id=33)), message(7, 1)]
    session.script.append(stop_then_block(listener, session))
    listener.run()
    assert desired(journal) == [(1, 0), (1, 1), (1, 2)]
    assert [names for names, _ in publisher.published] == [(), (), (33,)], (
        "the older count does not name the completion; the newer one does"
    )


def test_a_held_back_count_is_published_when_no_newer_message_comes() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(1))
    publisher = FakePublisher(journal)
    listener, _ = make_listener(
        journal, [session], publisher=publisher, last_message_id=5, catch_up_wait=0.1
    )
    session.script = [message(6, 4, completed(3, "r", runner_id=33))]
    session.script.append(stop_then_block(listener, session, after=1.0))
    listener.run()
    assert desired(journal) == [(1, 0), (1, 1), (4, 2)]
    assert publisher.published[-1] == ((33,), 6)


def test_while_catching_up_a_newer_higher_count_replaces_the_one_held_back() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(1))
    listener, _ = make_listener(
        journal, [session], publisher=FakePublisher(journal), last_message_id=5
    )
    session.script = [message(6, 4), message(7, 2), None, stop_then_block(listener, session)]
    listener.run()
    # While 7 is held back too, the count in force would be published again: nothing
    # new, so nothing is sent; the empty long poll publishes 7's.
    assert desired(journal) == [(1, 0), (1, 1), (2, 3)]


def after(seconds: float, answer: RunnerScaleSetMessage) -> Callable[[], RunnerScaleSetMessage]:
    def deliver() -> RunnerScaleSetMessage:
        time.sleep(seconds)
        return answer

    return deliver


def test_the_window_bounds_the_wait_however_busy_the_queue_stays() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(1))
    listener, _ = make_listener(
        journal, [session], publisher=FakePublisher(journal), last_message_id=5, catch_up_wait=1.0
    )
    # 6 and 7 come inside the window after the session opened, 8 after it.
    session.script = [message(6, 4), after(0.1, message(7, 5)), after(1.5, message(8, 6))]
    session.script.append(stop_then_block(listener, session))
    listener.run()
    # While 7, inside the window, is held back, the count in force is not sent again:
    # it tells nothing new.
    assert desired(journal) == [(1, 0), (1, 1), (5, 3), (6, 4)]


def test_an_empty_long_poll_publishes_a_held_back_count() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(1))
    listener, _ = make_listener(
        journal, [session], publisher=FakePublisher(journal), last_message_id=5
    )
    session.script = [message(6, 4), None, stop_then_block(listener, session)]
    listener.run()
    assert desired(journal) == [(1, 0), (1, 1), (4, 2)]


def test_a_lower_count_is_not_held_back() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(3))
    listener, _ = make_listener(
        journal, [session], publisher=FakePublisher(journal), last_message_id=5
    )
    session.script = [message(6, 1), stop_then_block(listener, session)]
    listener.run()
    assert desired(journal) == [(3, 0), (1, 1)]


def test_the_first_listener_of_a_scale_set_holds_nothing_back() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(1))
    listener, _ = make_listener(journal, [session], publisher=FakePublisher(journal))
    session.script = [message(1, 4), stop_then_block(listener, session)]
    listener.run()
    assert desired(journal) == [(1, 0), (4, 1)]


def test_a_session_reopened_in_the_process_catches_up_too() -> None:
    journal: Journal = []
    first = FakeSession("s1", journal, statistics=stats(1))
    second = FakeSession("s2", journal, statistics=stats(2))
    listener, _ = make_listener(journal, [first, second], publisher=FakePublisher(journal))
    first.script = [message(1, 1), not_found()]
    second.script = [message(2, 5), message(3, 2), stop_then_block(listener, second)]
    listener.run()
    # The new session's 2, then 2's held-back count and 3's count (both 2): nothing new.
    assert desired(journal) == [(1, 0), (1, 1), (2, 2)]


def test_a_count_names_the_runners_of_the_jobs_completed_before_it() -> None:
    journal: Journal = []
    session = FakeSession("s1", journal, statistics=stats(2))
    publisher = FakePublisher(journal)
    listener, _ = make_listener(journal, [session], publisher=publisher)
    session.script = [
        message(1, 1, completed(3, "r3", runner_id=33)),
        message(2, 0, completed(4, "r4", runner_id=44), completed(5, "canceled")),
        None,
        stop_then_block(listener, session),
    ]
    listener.run()
    assert [names for names, _ in publisher.published] == [(), (33,), (33, 44), (33, 44)]
