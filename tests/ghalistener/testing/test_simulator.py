"""The GitHub simulator's model, driven through ActionsClient via the respx adapter."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import respx

from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import (
    JobStillRunningError,
    MessageParseError,
    RequestError,
    RunnerExistsError,
    SessionConflictError,
)
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.session import MessageSession
from ghalistener.actions.types import (
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobStarted,
    RunnerScaleSetMessage,
    Statistics,
)
from ghalistener.testing import GitHubSimulator, SimError
from ghalistener.testing.respx_adapter import mount
from tests.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """The service's clock (timestamps, expiries), moved only by a test."""
    return FakeClock.from_real_now()


@pytest.fixture
def sim(clock: FakeClock) -> GitHubSimulator:
    simulator = GitHubSimulator(hold_seconds=0.0, clock=clock)
    simulator.create_scale_set("arc-runners")
    return simulator


@pytest.fixture
def sleeps() -> list[float]:
    """The retry waits the client asked for (none are slept)."""
    return []


@pytest.fixture
def client(sim: GitHubSimulator, sleeps: list[float]) -> Iterator[ActionsClient]:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        mount(router, sim, base_url="https://ghes.sim")
        with ActionsClient(
            config_url="https://ghes.sim/my-org",
            credentials=PatCredentials(token="ghp_anything_goes"),
            retry=RetryPolicy(sleep=sleeps.append),
        ) as actions_client:
            yield actions_client


@pytest.fixture
def session(client: ActionsClient) -> Iterator[MessageSession]:
    with MessageSession.open(client, scale_set_id=1, owner_name="host-1") as opened:
        yield opened


def next_message(
    session: MessageSession, last: int = 0, capacity: int = 10
) -> RunnerScaleSetMessage:
    message = session.get_message(last_message_id=last, max_capacity=capacity)
    assert message is not None
    return message


def drain(session: MessageSession, capacity: int = 10) -> RunnerScaleSetMessage | None:
    """Read and ack every message now available; return the last one."""
    last = None
    while (message := session.get_message(last_message_id=0, max_capacity=capacity)) is not None:
        session.delete_message(message.message_id)
        last = message
    return last


def test_a_job_goes_through_its_whole_lifecycle(
    sim: GitHubSimulator, client: ActionsClient, session: MessageSession
) -> None:
    drain(session)
    request_id = sim.enqueue_job(1, repository="my-org/app")

    available = next_message(session)
    assert [type(j) for j in available.jobs] == [JobAvailable]
    assert available.jobs[0].runner_request_id == request_id
    assert available.jobs[0].repository_name == "app" and available.jobs[0].owner_name == "my-org"
    assert available.statistics.total_available_jobs == 1
    assert session.acquire_jobs([request_id]) == [request_id]
    session.delete_message(available.message_id)

    assigned = next_message(session)
    assert [type(j) for j in assigned.jobs] == [JobAssigned]
    assert assigned.statistics.total_assigned_jobs == 1
    session.delete_message(assigned.message_id)

    jit = client.generate_jit_runner_config(1, "runner-a")
    sim.connect_runner(jit.encoded_jit_config)
    assert sim.start_job(jit.runner_id) == request_id
    started = next_message(session)
    job = started.jobs[0]
    assert isinstance(job, JobStarted) and (job.runner_id, job.runner_name) == (
        jit.runner_id,
        "runner-a",
    )
    assert started.statistics == Statistics(
        total_assigned_jobs=1,
        total_running_jobs=1,
        total_registered_runners=1,
        total_busy_runners=1,
    )
    with pytest.raises(JobStillRunningError):
        client.remove_runner(jit.runner_id)
    session.delete_message(started.message_id)

    sim.complete_job(runner_id=jit.runner_id, result="succeeded")
    completed = next_message(session)
    done = completed.jobs[0]
    assert isinstance(done, JobCompleted) and done.result == "succeeded"
    assert completed.statistics == Statistics()
    assert client.get_runner(jit.runner_id) is None  # ephemeral: deregistered after its job


def test_a_second_session_gets_409_until_the_first_is_closed(
    client: ActionsClient, session: MessageSession
) -> None:
    with pytest.raises(SessionConflictError):
        MessageSession.open(client, scale_set_id=1, owner_name="host-2")
    session.close()
    MessageSession.open(client, scale_set_id=1, owner_name="host-2").close()


def test_unacknowledged_messages_are_delivered_again_to_the_next_session(
    sim: GitHubSimulator, client: ActionsClient
) -> None:
    first = MessageSession.open(client, scale_set_id=1, owner_name="a")
    drain(first)
    sim.enqueue_job(1)
    lost = next_message(first)
    first.close()  # crashed before the ack

    with MessageSession.open(client, scale_set_id=1, owner_name="b") as second:
        again = next_message(second)
        assert again.message_id == lost.message_id
        assert again.jobs == lost.jobs
        second.delete_message(again.message_id)
        assert second.get_message(last_message_id=again.message_id, max_capacity=1) is None


def test_an_acknowledged_message_can_be_delivered_again_once(
    sim: GitHubSimulator, session: MessageSession
) -> None:
    assert sim.redeliver_message(1) is None  # nothing acknowledged yet
    drain(session)
    sim.enqueue_job(1)
    first = next_message(session)
    session.delete_message(first.message_id)

    assert sim.redeliver_message(1) == first.message_id
    again = next_message(session, last=first.message_id)  # past its id, yet delivered
    assert (again.message_id, again.jobs, again.statistics) == (
        first.message_id,
        first.jobs,
        first.statistics,
    )
    session.delete_message(again.message_id)
    assert session.get_message(last_message_id=first.message_id, max_capacity=10) is None


def test_the_poll_after_the_last_seen_id_moves_on(
    sim: GitHubSimulator, session: MessageSession
) -> None:
    drain(session)
    sim.enqueue_job(1)
    one = next_message(session)
    sim.enqueue_job(1)
    two = next_message(session, last=one.message_id)
    assert two.message_id > one.message_id


def test_expired_queue_tokens_are_refreshed_by_the_session(
    sim: GitHubSimulator, session: MessageSession
) -> None:
    drain(session)
    sim.enqueue_job(1)
    sim.expire_tokens("queue")
    message = next_message(session)
    assert len(message.jobs) == 1
    assert [e["kind"] for e in sim.events].count("session.refreshed") == 1


def test_expired_admin_tokens_make_the_client_reconnect(
    sim: GitHubSimulator, client: ActionsClient
) -> None:
    client.get_runner_scale_set_by_id(1)
    sim.expire_tokens("admin")
    assert client.get_runner_scale_set_by_id(1).name == "arc-runners"
    assert [e["kind"] for e in sim.events].count("admin.connected") == 2


def test_a_5xx_burst_is_ridden_out_by_the_retries(
    sim: GitHubSimulator, session: MessageSession, sleeps: list[float]
) -> None:
    drain(session)
    sim.enqueue_job(1)
    sleeps.clear()
    sim.inject_fault(endpoint="get_message", status=503, times=3)
    assert len(next_message(session).jobs) == 1
    assert len(sleeps) == 3  # one retry per injected 503


def test_a_malformed_body_is_a_parse_error_and_a_bom_is_harmless(
    sim: GitHubSimulator, session: MessageSession
) -> None:
    drain(session)
    sim.enqueue_job(1)
    sim.inject_fault(endpoint="get_message", body="{truncated")
    with pytest.raises(MessageParseError, match="not JSON"):
        session.get_message(last_message_id=0, max_capacity=1)
    sim.inject_fault(endpoint="get_message", bom=True)
    assert len(next_message(session).jobs) == 1


def test_latency_faults_delay_but_do_not_break(sim: GitHubSimulator, client: ActionsClient) -> None:
    sim.inject_fault(endpoint="get_scale_set", latency=0.05)
    started = time.monotonic()
    assert client.get_runner_scale_set_by_id(1).id == 1
    assert time.monotonic() - started >= 0.05


def test_assignment_respects_the_max_capacity_header(
    sim: GitHubSimulator, client: ActionsClient, session: MessageSession
) -> None:
    drain(session, capacity=1)
    ids = [sim.enqueue_job(1) for _ in range(3)]
    drain(session, capacity=1)
    assert session.acquire_jobs(ids) == ids
    last = drain(session, capacity=1)
    assert last is not None
    assert last.statistics.total_assigned_jobs == 1
    assert last.statistics.total_acquired_jobs == 2

    jit = client.generate_jit_runner_config(1, "r")
    sim.start_job(jit.runner_id)
    sim.complete_job(runner_id=jit.runner_id)
    last = drain(session, capacity=1)
    assert last is not None and last.statistics.total_assigned_jobs == 1
    assert last.statistics.total_acquired_jobs == 1


def test_a_canceled_assignment_comes_back_as_available(
    sim: GitHubSimulator, session: MessageSession
) -> None:
    drain(session)
    request_id = sim.enqueue_job(1)
    session.acquire_jobs([request_id])
    drain(session)
    sim.cancel_job(request_id)
    message = next_message(session)
    kinds = [(type(j).__name__, getattr(j, "result", None)) for j in message.jobs]
    assert kinds == [("JobCompleted", "canceled"), ("JobAvailable", None)]
    assert message.statistics.total_available_jobs == 1


def test_runner_names_are_unique(client: ActionsClient) -> None:
    client.generate_jit_runner_config(1, "r")
    with pytest.raises(RunnerExistsError):
        client.generate_jit_runner_config(1, "r")


def test_starting_a_job_needs_an_idle_runner_and_an_assigned_job(
    sim: GitHubSimulator, client: ActionsClient
) -> None:
    jit = client.generate_jit_runner_config(1, "r")
    with pytest.raises(SimError, match="no assigned job"):
        sim.start_job(jit.runner_id)


def test_scale_set_endpoints_round_trip(client: ActionsClient) -> None:
    group = client.get_runner_group_by_name("Default")
    assert group is not None and group.is_default_group
    found = client.get_runner_scale_set(group.id, "arc-runners")
    assert found is not None and found.id == 1
    assert client.get_runner_scale_set(group.id, "nope") is None
    with pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(99)
    assert caught.value.status == 404 and caught.value.activity_id


def test_the_event_log_tells_the_story(sim: GitHubSimulator, session: MessageSession) -> None:
    drain(session)
    request_id = sim.enqueue_job(1)
    message = next_message(session)
    session.acquire_jobs([request_id])
    session.delete_message(message.message_id)
    kinds = [e["kind"] for e in sim.events]
    for kind in (
        "session.created",
        "job.available",
        "message.delivered",
        "jobs.acquired",
        "job.assigned",
        "message.acked",
    ):
        assert kind in kinds
    assert json.dumps(sim.state())  # JSON-able


@pytest.mark.parametrize(
    ("path", "scope"),
    [
        pytest.param("my-org", "orgs/my-org", id="organization"),
        pytest.param("my-org/my-repo", "repos/my-org/my-repo", id="repository"),
        pytest.param("enterprises/my-ent", "enterprises/my-ent", id="enterprise"),
    ],
)
def test_every_scope_gets_its_registration_token_and_admin_connection(
    sim: GitHubSimulator, path: str, scope: str
) -> None:
    with respx.mock(assert_all_mocked=True) as router:
        mount(router, sim, base_url="https://ghes.sim")
        with ActionsClient(
            config_url=f"https://ghes.sim/{path}/",
            credentials=PatCredentials(token="ghp_anything_goes"),
            retry=RetryPolicy(sleep=lambda _: None),
        ) as client:
            assert client.get_runner_scale_set_by_id(1).id == 1
    issued = [e for e in sim.events if e["kind"] == "token.issued"]
    assert issued[-1]["scope"] == scope
    connected = [e for e in sim.events if e["kind"] == "admin.connected"]
    assert connected[-1]["config_url"] == f"https://ghes.sim/{path}"


def test_a_message_carries_at_most_50_job_messages(
    sim: GitHubSimulator, session: MessageSession
) -> None:
    drain(session)
    for _ in range(120):
        sim.enqueue_job(1)
    sizes, last = [], 0
    while (message := session.get_message(last_message_id=last, max_capacity=1)) is not None:
        session.delete_message(message.message_id)
        last = message.message_id
        sizes.append(len(message.jobs))
        assert message.statistics.total_available_jobs == 120
    assert sizes == [50, 50, 20]


# -- a runner whose process died ------------------------------------------------------


def test_a_killed_runner_drops_offline_once_its_long_poll_lapses(
    sim: GitHubSimulator, client: ActionsClient, clock: FakeClock
) -> None:
    """GitHub lists a runner whose process died online until the long poll it held
    lapses (50 s by default), then offline; a new process with the runner's JIT config
    brings it back online, and one that exits cleanly is offline at once."""
    jit = client.generate_jit_runner_config(1, "r")

    def status() -> str:
        found = client.get_runner(jit.runner_id)
        assert found is not None
        return found.status

    sim.connect_runner(jit.encoded_jit_config)
    sim.disconnect_runner(jit.runner_id)  # SIGKILLed: it deleted no session
    clock.advance(49.0)
    assert status() == "online"
    clock.advance(1.0)
    assert status() == "offline"
    assert [e["kind"] for e in sim.events][-1] == "runner.offline"

    sim.connect_runner(jit.encoded_jit_config)  # the next Pod's process
    assert status() == "online"
    sim.disconnect_runner(jit.runner_id, graceful=True)  # it deleted its session
    assert status() == "offline"
