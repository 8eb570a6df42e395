"""The stop signal every wait obeys: its grace rule, and a stop in a retry backoff.

Clocks are injected: ``FakeTime.nap`` advances the clock instead of sleeping, and can
deliver the stop request at a chosen moment, as a SIGTERM would arrive mid-wait.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from time import monotonic
from typing import Any

import httpx
import pytest
import respx

from ersctl.testing.apiserver import ApiServer
from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.retry import RetryPolicy
from ghalistener.listener import CLOSE_TIMEOUT, Listener
from ghalistener.ports import SessionRetry
from ghalistener.publisher import KubePublisher, KubeRetry
from ghalistener.scaler import Scaler
from ghalistener.sessions import SessionOpener
from ghalistener.stopping import StopRequested, StopSignal
from ghalistener.testing import GitHubSimulator
from ghalistener.testing.respx_adapter import mount
from tests.clock import FakeClock
from tests.ghalistener.fakes import FakePublisher, FakeSession, Journal, Opener


@dataclass
class FakeTime:
    """The fake clock, plus the naps taken on it and a stop that arrives at a reading."""

    clock: FakeClock = field(default_factory=lambda: FakeClock(100.0))
    naps: list[float] = field(default_factory=list)
    stop_at: float | None = None  # clock reading at which the stop arrives
    signal: StopSignal | None = None

    @property
    def now(self) -> float:
        return self.clock.now

    def nap(self, seconds: float) -> None:
        self.naps.append(seconds)
        self.clock.advance(seconds)
        if self.signal and self.stop_at is not None and self.now >= self.stop_at:
            self.signal.request()


def stop_signal(time: FakeTime, *, grace: float = 1.0) -> StopSignal:
    signal = StopSignal(grace=grace, clock=time.clock, nap=time.nap, check_interval=0.05)
    time.signal = signal
    return signal


def test_without_a_stop_a_wait_runs_its_full_length() -> None:
    time = FakeTime()
    stop_signal(time).sleep(3.0)
    assert time.now == pytest.approx(103.0)


def test_a_stop_during_a_long_wait_ends_it_within_one_check_interval() -> None:
    time = FakeTime(stop_at=100.5)
    signal = stop_signal(time)
    with pytest.raises(StopRequested):
        signal.sleep(30.0)
    assert 100.5 <= time.now <= 100.5 + 0.05 + 1e-6


@pytest.mark.parametrize(
    ("wait", "finishes"),
    [
        pytest.param(0.8, True, id="a wait ending inside the grace period still runs"),
        pytest.param(1.2, False, id="a wait ending after the grace period raises at once"),
    ],
)
def test_after_a_stop_only_waits_that_end_within_the_grace_period_run(
    wait: float, finishes: bool
) -> None:
    time = FakeTime()
    signal = stop_signal(time, grace=1.0)
    signal.request()
    if finishes:
        signal.sleep(wait)
        assert time.now == pytest.approx(100.0 + wait)
    else:
        with pytest.raises(StopRequested):
            signal.sleep(wait)
        assert time.naps == [], "no time spent on a wait that cannot finish"


def test_the_retry_policy_sleeping_on_the_signal_gives_up_when_stopped() -> None:
    time = FakeTime()
    signal = stop_signal(time, grace=0.0)
    tries: list[int] = []

    def attempt() -> httpx.Response:
        tries.append(1)
        return httpx.Response(503, request=httpx.Request("GET", "https://x.test/"))

    def stopped_as_the_backoff_starts(seconds: float) -> None:
        # Not at a later clock reading: a jittered wait that ended by then (one in a
        # hundred ends within the first 0.05 s nap) is one the stop may let finish.
        signal.request()
        signal.sleep(seconds)

    policy = RetryPolicy(initial_wait=5.0, sleep=stopped_as_the_backoff_starts)
    with pytest.raises(StopRequested):
        policy.run(attempt)
    assert len(tries) == 1, "no further try once the stop arrived in the backoff"


@pytest.fixture
def simulator() -> Iterator[GitHubSimulator]:
    sim = GitHubSimulator(hold_seconds=0.0)
    sim.create_scale_set("runners")
    yield sim
    sim.close()


def test_a_stop_in_the_backoff_of_a_failing_acquisition_leaves_the_message_for_redelivery(
    simulator: GitHubSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ghalistener")  # the stop is an INFO line
    time = FakeTime()
    signal = stop_signal(time, grace=0.0)
    time.stop_at = time.now  # the first backoff nap delivers the stop
    simulator.enqueue_job(1)
    simulator.inject_fault(endpoint="acquire_jobs", status=503, times=-1)
    journal: Journal = []
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        mount(router, simulator, base_url="https://ghes.sim")
        with ActionsClient(
            config_url="https://ghes.sim/octo",
            credentials=PatCredentials(token="ghp_stopping_test_token"),
            retry=RetryPolicy(initial_wait=5.0, sleep=signal.sleep),
        ) as client:
            listener = Listener(
                scale_set_id=1,
                open_session=SessionOpener(client=client, scale_set_id=1, owner_name="host"),
                scaler=Scaler(min_runners=0, max_runners=5),
                publisher=FakePublisher(journal),
                session_retry=SessionRetry(interval=0.0, attempts=1),
                stop=signal,
            )
            listener.run()  # returns normally: a stop, not a failure
    kinds = [event["kind"] for event in simulator.events]
    assert "session.deleted" in kinds
    assert "message.acked" not in kinds
    assert simulator.state()["scaleSets"][0]["unackedMessages"], "queued for the next session"
    assert signal.requested
    stops = [r for r in caplog.records if "stop requested" in r.getMessage()]
    assert len(stops) == 1 and "stays unacknowledged" in stops[0].getMessage()
    assert stops[0].fields["message_id"] > 0  # type: ignore[attr-defined]


@pytest.mark.embedded_only("fault injection, the request log")
def test_the_publisher_backing_off_from_a_failing_api_server_gives_up_when_stopped(
    apiserver: ApiServer, kube_client: Any
) -> None:
    apiserver.create_object(
        "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "arc"}}
    )
    apiserver.inject_fault(verb="patch", resource="ephemeralrunnersets", code=503, times=100)
    time = FakeTime(stop_at=100.01)
    signal = stop_signal(time, grace=0.0)
    publisher = KubePublisher(
        api_client=kube_client,
        namespace="arc",
        name="runners",
        retry=KubeRetry(attempts=6, initial_wait=5.0, sleep=signal.sleep),
    )
    with pytest.raises(StopRequested):
        publisher.publish_desired(replicas=1, patch_id=1)
    patches = [r for r in apiserver.request_log.records() if r.verb == "patch"]
    assert len(patches) == 1, "no further try once the stop arrived in the backoff"


@dataclass
class SlowToCloseSession(FakeSession):
    """A session whose delete hangs, as against a service that stopped answering."""

    release: threading.Event = field(default_factory=threading.Event)

    def close(self) -> None:
        self.journal.append(("close", self.name))
        self.release.wait(30)


def test_a_stopping_listener_does_not_wait_long_for_a_session_delete_that_hangs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    journal: Journal = []
    session = SlowToCloseSession("s1", journal)
    listener = Listener(
        scale_set_id=7,
        open_session=Opener([session], journal),
        scaler=Scaler(min_runners=0, max_runners=5),
        publisher=FakePublisher(journal),
        session_retry=SessionRetry(interval=0.0, attempts=1),
    )
    session.script = [lambda: listener.request_stop()]
    started_at = monotonic()
    try:
        listener.run()
        elapsed = monotonic() - started_at
    finally:
        session.release.set()
    assert ("close", "s1") in journal
    assert elapsed < CLOSE_TIMEOUT + 0.5
    assert [r for r in caplog.records if "session not deleted" in r.getMessage()]
