"""Benchmarks of the actions client and the simulator (not collected by pytest).

Run: ``python -m examples.bench_actions``. Prints medians of:
- parsing one full message (50 job messages) from bytes;
- one listener cycle over real HTTP against the simulator (job enqueued -> get_message
  -> acquire -> ack), with an idle long poll hold of 0;
- how fast a held long poll is answered once a job is enqueued.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.messages import decode_json, parse_message
from ghalistener.actions.session import MessageSession
from ghalistener.testing import GitHubSimulator
from ghalistener.testing.server import serve


def _message_bytes() -> bytes:
    job = {
        "messageType": "JobAssigned",
        "runnerRequestId": 1,
        "repositoryName": "repo",
        "ownerName": "org",
        "jobId": "j",
        "jobWorkflowRef": "org/repo/.github/workflows/ci.yml@refs/heads/main",
        "jobDisplayName": "build",
        "workflowRunId": 1,
        "eventName": "push",
        "requestLabels": ["x"],
        "queueTime": "2024-01-01T00:00:00Z",
    }
    body = {
        "messageId": 1,
        "messageType": "RunnerScaleSetJobMessages",
        "body": json.dumps([job] * 50),
        "statistics": {"totalAssignedJobs": 50},
    }
    return json.dumps(body).encode()


def bench_parse(rounds: int = 2000) -> float:
    content = _message_bytes()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        parse_message(decode_json(content, what="message"))
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def _drain(session: MessageSession, last: int) -> int:
    """Ack everything already queued (hold must be 0); return the last message id."""
    while (m := session.get_message(last_message_id=last, max_capacity=10)) is not None:
        session.delete_message(m.message_id)
        last = m.message_id
    return last


def bench_cycle(rounds: int = 200) -> tuple[float, float]:
    sim = GitHubSimulator(hold_seconds=0.0)
    sim.create_scale_set("bench")
    cycle, wake = [], []
    with (
        serve(sim) as server,
        ActionsClient(
            config_url=server.config_url(), credentials=PatCredentials(token="ghp_bench_token")
        ) as client,
        MessageSession.open(client, scale_set_id=1, owner_name="bench") as session,
    ):
        last = _drain(session, 0)
        for _ in range(rounds):
            start = time.perf_counter()
            request_id = sim.enqueue_job(1)
            message = session.get_message(last_message_id=last, max_capacity=10)
            assert message is not None
            session.acquire_jobs([request_id])
            session.delete_message(message.message_id)
            last = message.message_id
            cycle.append(time.perf_counter() - start)
            last = _drain(session, last)
            sim.hold_seconds = 5.0
            timer = threading.Timer(0.01, sim.enqueue_job, args=(1,))
            queued = time.perf_counter()
            timer.start()
            held = session.get_message(last_message_id=last, max_capacity=10)
            wake.append(time.perf_counter() - queued - 0.01)
            timer.join()
            assert held is not None and len(held.jobs) == 1
            session.delete_message(held.message_id)
            last = held.message_id
            sim.hold_seconds = 0.0
    return statistics.median(cycle) * 1e3, statistics.median(wake) * 1e3


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    print(f"parse a 50-job message:                 median {bench_parse():8.1f} us")
    cycle_ms, wake_ms = bench_cycle()
    print(f"HTTP cycle (get, acquire, ack):         median {cycle_ms:8.2f} ms")
    print(f"held long poll answered after enqueue:  median {wake_ms:8.2f} ms")


if __name__ == "__main__":
    main()
