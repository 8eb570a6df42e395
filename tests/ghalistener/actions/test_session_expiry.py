"""The simulator drops a message session its owner stopped using, as the service does.

The model runs on an injected clock (``FakeClock``); only the held-poll test waits, for a
fraction of a second, because a long poll's hold is real time.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import SessionConflictError
from ghalistener.actions.retry import RetryPolicy
from ghalistener.testing import GitHubSimulator, SimError
from ghalistener.testing.state import Session
from tests.clock import FakeClock
from tests.ghalistener.processes import ready_server, sim

TIMEOUT = 60.0


def simulator(
    clock: FakeClock, *, timeout: float | None = TIMEOUT, hold: float = 0.0
) -> GitHubSimulator:
    model = GitHubSimulator(hold_seconds=hold, session_idle_timeout=timeout, clock=clock)
    model.create_scale_set("runners")
    return model


def poll(model: GitHubSimulator, session: Session, last: int = 0) -> dict[str, Any] | None:
    return model.get_message(
        1, session.id, session.queue_token, last_message_id=last, max_capacity=None
    )


def session_ids(model: GitHubSimulator) -> list[str]:
    return [s["sessionId"] for s in model.state()["sessions"]]


@pytest.mark.parametrize(
    ("idle", "expired"),
    [
        pytest.param(TIMEOUT - 1, False, id="a session used within the timeout stays"),
        pytest.param(TIMEOUT, True, id="a session unused for the timeout is dropped"),
    ],
)
def test_a_session_is_dropped_once_unused_for_the_idle_timeout(idle: float, expired: bool) -> None:
    clock = FakeClock()
    model = simulator(clock)
    first = model.create_session(1, "host-a")
    clock.now += idle
    assert session_ids(model) == ([] if expired else [first.id])
    kinds = [event["kind"] for event in model.events]
    assert ("session.expired" in kinds) is expired
    if expired:
        assert model.create_session(1, "host-b").owner == "host-b", "the next create succeeds"
    else:
        with pytest.raises(SimError) as conflict:
            model.create_session(1, "host-b")
        assert conflict.value.status == 409


@pytest.mark.parametrize(
    "use",
    [
        pytest.param(lambda m, s: poll(m, s), id="a poll"),
        pytest.param(lambda m, s: m.delete_message(1, s.id, s.queue_token, 99), id="an ack"),
        pytest.param(lambda m, s: m.acquire_jobs(1, s.queue_token, []), id="an acquisition"),
        pytest.param(lambda m, s: m.refresh_session(1, s.id), id="a refresh"),
    ],
)
def test_any_request_made_with_the_session_restarts_its_idle_time(use: Any) -> None:
    clock = FakeClock()
    model = simulator(clock)
    session = model.create_session(1, "host-a")
    clock.now += TIMEOUT - 1
    use(model, session)
    clock.now += TIMEOUT - 1
    assert session_ids(model) == [session.id]


def test_a_held_long_poll_keeps_its_session_alive_however_long_it_is_held() -> None:
    clock = FakeClock()
    model = simulator(clock, hold=0.5)
    session = model.create_session(1, "host-a")
    first = poll(model, session)  # the opening statistics; after it, nothing to send
    assert first is not None
    model.delete_message(1, session.id, session.queue_token, first["messageId"])
    poller = threading.Thread(target=poll, args=(model, session, first["messageId"]))
    poller.start()
    try:
        threading.Event().wait(0.1)  # the poll is now held
        clock.now += 10 * TIMEOUT
        assert session_ids(model) == [session.id]
    finally:
        poller.join()
    clock.now += TIMEOUT
    assert session_ids(model) == [], "idle from the end of the poll on"


def test_unacked_messages_of_an_expired_session_go_to_the_next_one_and_the_owner_gets_404() -> None:
    clock = FakeClock()
    model = simulator(clock)
    request_id = model.enqueue_job(1)
    orphan = model.create_session(1, "host-a")
    first = poll(model, orphan)
    assert first is not None  # received, never acknowledged: its owner was killed
    clock.now += TIMEOUT
    successor = model.create_session(1, "host-b")
    again = poll(model, successor)
    assert again is not None and again["messageId"] == first["messageId"]
    assert str(request_id) in again["body"]
    with pytest.raises(SimError) as gone:
        poll(model, orphan)
    assert gone.value.status == 404


def test_no_timeout_keeps_sessions_forever() -> None:
    clock = FakeClock()
    model = simulator(clock, timeout=None)
    session = model.create_session(1, "host-a")
    clock.now += 10**9
    assert session_ids(model) == [session.id]


@pytest.mark.slow
def test_the_http_server_takes_the_timeout_on_its_command_line_and_in_its_settings() -> None:
    with ready_server(
        "ghalistener.testing.github",
        "--port",
        "0",
        "--hold",
        "0",
        "--scale-set",
        "runners",
        "--session-idle-timeout",
        "0.3",
    ) as server:
        assert sim(server, "PATCH", "/settings", {})["sessionIdleTimeout"] == 0.3
        with ActionsClient(
            config_url=f"{server.url}/octo",
            credentials=PatCredentials(token="ghp_expiry_test_token"),
            retry=RetryPolicy(max_retries=0),
        ) as client:
            client.create_message_session(1, "host-a")
            with pytest.raises(SessionConflictError):
                client.create_message_session(1, "host-b")
            threading.Event().wait(0.5)
            assert client.create_message_session(1, "host-b").owner_name == "host-b"
        settings = sim(server, "PATCH", "/settings", {"sessionIdleTimeout": None})
        assert settings["sessionIdleTimeout"] is None
