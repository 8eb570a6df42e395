"""End to end over real HTTP: ActionsClient against the simulator's threaded server."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import SessionNotFoundError
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.session import MessageSession
from ghalistener.actions.types import JobAssigned, JobAvailable, JobCompleted, JobStarted
from ghalistener.testing import GitHubSimulator, SimulatorServer
from ghalistener.testing.server import serve
from tests import local_http


@pytest.fixture
def sim() -> GitHubSimulator:
    simulator = GitHubSimulator(hold_seconds=0.2)
    simulator.create_scale_set("arc-runners")
    return simulator


@pytest.fixture
def server(sim: GitHubSimulator) -> Iterator[SimulatorServer]:
    with serve(sim, port=0) as running:
        yield running


@pytest.fixture
def control(server: SimulatorServer) -> Iterator[httpx.Client]:
    with local_http.client(base_url=server.url, timeout=10) as http:
        yield http


@pytest.fixture
def client(server: SimulatorServer) -> Iterator[ActionsClient]:
    with ActionsClient(
        config_url=server.config_url("my-org"),
        credentials=PatCredentials(token="ghp_simulated_pat"),
        retry=RetryPolicy(sleep=lambda _: None),
    ) as actions_client:
        yield actions_client


def post(control: httpx.Client, path: str, body: dict[str, Any] | None = None) -> Any:
    response = control.post(path, json=body or {})
    assert response.status_code == 200, response.text
    return response.json()


def poll_jobs(session: MessageSession, last: int = 0) -> tuple[int, list[object]]:
    """Poll until a message with jobs arrives (acking empty ones); return its id and jobs."""
    for _ in range(20):
        message = session.get_message(last_message_id=last, max_capacity=5)
        if message is None:
            continue
        session.delete_message(message.message_id)
        last = message.message_id
        if message.jobs:
            return message.message_id, list(message.jobs)
    raise AssertionError("no job message arrived")


def test_session_job_message_acquire_and_ack_over_http(
    sim: GitHubSimulator, client: ActionsClient, control: httpx.Client
) -> None:
    with MessageSession.open(client, scale_set_id=1, owner_name="listener-1") as session:
        request_ids = post(control, "/_sim/jobs", {"scaleSetId": 1, "repository": "my-org/app"})[
            "requestIds"
        ]

        message = session.get_message(last_message_id=0, max_capacity=5)
        assert message is not None
        jobs = [j for j in message.jobs if isinstance(j, JobAvailable)]
        assert [j.runner_request_id for j in jobs] == request_ids
        assert session.acquire_jobs(request_ids) == request_ids
        session.delete_message(message.message_id)

        state = control.get("/_sim/state").json()
        assert state["jobs"][0]["state"] == "assigned"
        assert state["scaleSets"][0]["unackedMessages"] == []
        assert state["sessions"][0]["ownerName"] == "listener-1"
        kinds = [e["kind"] for e in control.get("/_sim/events").json()["events"]]
        assert {"message.delivered", "jobs.acquired", "message.acked"} <= set(kinds)
    assert control.get("/_sim/state").json()["sessions"] == []


def test_a_runner_agent_registers_starts_and_completes_a_job(
    client: ActionsClient, control: httpx.Client
) -> None:
    with MessageSession.open(client, scale_set_id=1, owner_name="listener-1") as session:
        (request_id,) = post(control, "/_sim/jobs", {"scaleSetId": 1})["requestIds"]
        _, jobs = poll_jobs(session)
        session.acquire_jobs([request_id])
        _, jobs = poll_jobs(session)
        assert isinstance(jobs[0], JobAssigned)

        jit = client.generate_jit_runner_config(1, "runner-1")
        runner = post(control, "/_sim/runners/connect", {"jitConfig": jit.encoded_jit_config})
        assert (runner["id"], runner["status"]) == (jit.runner_id, "online")
        assert post(control, f"/_sim/runners/{runner['id']}/start")["requestId"] == request_id
        _, jobs = poll_jobs(session)
        assert isinstance(jobs[0], JobStarted) and jobs[0].runner_name == "runner-1"
        stats = control.get("/_sim/scalesets/1/statistics").json()
        assert stats["totalRunningJobs"] == 1 and stats["totalBusyRunners"] == 1

        post(control, f"/_sim/runners/{runner['id']}/complete", {"result": "failed"})
        _, jobs = poll_jobs(session)
        assert isinstance(jobs[0], JobCompleted) and jobs[0].result == "failed"


def test_a_runner_process_that_dies_is_reported_through_the_control_api(
    client: ActionsClient, control: httpx.Client
) -> None:
    jit = client.generate_jit_runner_config(1, "runner-1")
    post(control, "/_sim/runners/connect", {"jitConfig": jit.encoded_jit_config})
    assert (
        control.patch("/_sim/settings", json={"runnerOfflineDelay": 0}).json()["runnerOfflineDelay"]
        == 0
    )
    post(control, f"/_sim/runners/{jit.runner_id}/disconnect")
    found = client.get_runner(jit.runner_id)
    assert found is not None and found.status == "offline"


def test_a_held_long_poll_is_answered_as_soon_as_a_job_arrives(
    sim: GitHubSimulator, client: ActionsClient
) -> None:
    sim.hold_seconds = 30.0
    with MessageSession.open(client, scale_set_id=1, owner_name="l") as session:
        first = session.get_message(last_message_id=0, max_capacity=1)  # initial statistics
        assert first is not None
        session.delete_message(first.message_id)
        timer = threading.Timer(0.1, lambda: sim.enqueue_job(1))
        timer.start()
        message = session.get_message(last_message_id=first.message_id, max_capacity=1)
        timer.join()
        assert message is not None and len(message.jobs) == 1


def test_an_empty_long_poll_is_a_202_none(client: ActionsClient) -> None:
    with MessageSession.open(client, scale_set_id=1, owner_name="l") as session:
        first = session.get_message(last_message_id=0, max_capacity=1)
        assert first is not None
        session.delete_message(first.message_id)
        assert session.get_message(last_message_id=first.message_id, max_capacity=1) is None


def test_control_api_faults_and_token_expiry(
    sim: GitHubSimulator, client: ActionsClient, control: httpx.Client
) -> None:
    post(control, "/_sim/faults", {"endpoint": "get_scale_set", "status": 500, "times": 2})
    assert client.get_runner_scale_set_by_id(1).id == 1
    assert control.post("/_sim/faults", json={"endpoint": "nope"}).status_code == 400
    post(control, "/_sim/tokens/expire", {"kind": "admin"})
    assert client.get_runner_scale_set_by_id(1).id == 1
    kinds = [e["kind"] for e in sim.events]
    assert kinds.count("admin.connected") == 2
    assert control.post("/_sim/runners/99/start").status_code == 404
    assert control.get("/_sim/unknown").status_code == 404


@contextlib.contextmanager
def running_simulator() -> Iterator[str]:
    """``python -m ghalistener.testing.github`` with scale set ``arc``; its ready line's
    URL. It must end cleanly on SIGTERM."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ghalistener.testing.github", "--port", "0", "--scale-set", "arc"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("ready http://127.0.0.1:")
        yield line.removeprefix("ready ")
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def test_the_module_runs_as_a_server_that_reports_ready() -> None:
    with running_simulator() as url:
        state = local_http.get(f"{url}/_sim/state", timeout=5).json()

    assert state["scaleSets"][0]["name"] == "arc"


def _queue(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ghalistener.testing.github", "queue", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


def test_the_queue_command_queues_jobs_on_a_running_simulators_scale_set_by_name() -> None:
    with running_simulator() as url:
        queued = _queue("--url", url, "--scale-set", "arc", "--count", "2")
        unknown = _queue("--url", url, "--scale-set", "gpu")
        jobs = local_http.get(f"{url}/_sim/state", timeout=5).json()["jobs"]
    helped = subprocess.run(
        [sys.executable, "-m", "ghalistener.testing.github", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )

    assert queued.returncode == 0, queued.stderr
    assert queued.stdout.startswith("queued 2 job(s) on scale set arc")
    assert [job["state"] for job in jobs] == ["available", "available"]
    assert (unknown.returncode, unknown.stderr) == (
        1,
        f"queue: no scale set 'gpu' at {url} (arc)\n",
    )
    assert "ghalistener.testing.github queue --url" in " ".join(helped.stdout.split())


def test_closing_from_another_thread_ends_a_held_poll(
    sim: GitHubSimulator, client: ActionsClient
) -> None:
    sim.hold_seconds = 30.0
    session = MessageSession.open(client, scale_set_id=1, owner_name="l")
    first = session.get_message(last_message_id=0, max_capacity=1)
    assert first is not None
    session.delete_message(first.message_id)
    closer = threading.Timer(0.1, session.close)
    closer.start()
    with pytest.raises(SessionNotFoundError):
        session.get_message(last_message_id=first.message_id, max_capacity=1)
    closer.join()
    assert sim.state()["sessions"] == []


def test_the_control_api_drives_every_part_of_the_model(
    sim: GitHubSimulator, control: httpx.Client
) -> None:
    created = post(control, "/_sim/scalesets", {"name": "gpu", "labels": ["gpu", "linux"]})
    assert created["labels"] == [
        {"name": "gpu", "type": "System"},
        {"name": "linux", "type": "System"},
    ]
    gpu = created["id"]
    ids = post(control, "/_sim/jobs", {"scaleSetId": gpu, "count": 2, "displayName": "train"})[
        "requestIds"
    ]
    assert control.get(f"/_sim/scalesets/{gpu}/statistics").json()["totalAvailableJobs"] == 2

    assert post(control, f"/_sim/jobs/{ids[0]}/cancel", {"requeue": False})["requestId"] == ids[0]
    jobs = {j["requestId"]: j for j in control.get("/_sim/state").json()["jobs"]}
    assert (jobs[ids[0]]["state"], jobs[ids[0]]["result"]) == ("completed", "canceled")
    assert control.post(f"/_sim/jobs/{ids[1]}/complete").status_code == 409  # not running

    settings = control.patch("/_sim/settings", json={"holdSeconds": 0.5, "ephemeral": False}).json()
    assert settings["holdSeconds"] == 0.5 and sim.ephemeral is False
    post(control, "/_sim/faults", {"endpoint": "get_message", "bom": True, "times": -1})
    assert control.get("/_sim/state").json()["faults"][0]["times"] == -1
    assert control.delete("/_sim/faults").json() == {"faults": []}

    seq = control.get("/_sim/events").json()["events"][-1]["seq"]
    post(control, "/_sim/tokens/expire", {"kind": "queue"})
    newer = control.get("/_sim/events", params={"since": seq}).json()["events"]
    assert [e["kind"] for e in newer] == ["tokens.expired"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("POST", "/_sim/jobs", {"count": 1}, id="job without a scale set"),
        pytest.param("POST", "/_sim/jobs", {"scaleSetId": 1, "count": 0}, id="zero jobs"),
        pytest.param(
            "POST", "/_sim/tokens/expire", {"kind": "everything"}, id="unknown token kind"
        ),
        pytest.param(
            "POST", "/_sim/runners/connect", {"jitConfig": "garbage"}, id="bad JIT config"
        ),
        pytest.param("POST", "/_sim/scalesets", [1, 2], id="not an object"),
        pytest.param("PATCH", "/_sim/settings", {"runnerOfflineDelay": -1}, id="negative seconds"),
        pytest.param("PATCH", "/_sim/settings", {"holdSeconds": None}, id="null seconds"),
        pytest.param("PATCH", "/_sim/settings", {"adminTokenTtl": "soon"}, id="text seconds"),
        pytest.param(
            "PATCH",
            "/_sim/settings",
            {"holdSeconds": 2, "runnerOfflineDelay": -1},
            id="one good and one bad setting",
        ),
    ],
)
def test_bad_control_requests_get_400_naming_the_problem(
    control: httpx.Client, method: str, path: str, body: object
) -> None:
    settings = control.patch("/_sim/settings", json={}).json()  # an empty change reads them
    response = control.request(method, path, json=body)
    assert response.status_code == 400
    assert response.json()["error"]
    if path == "/_sim/settings":
        assert isinstance(body, dict)
        assert list(body)[-1] in response.json()["error"]  # it names the (last, bad) setting
        assert control.patch(path, json={}).json() == settings  # and changed nothing
