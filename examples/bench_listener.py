"""Benchmark (not a test): how fast ``ghalistener run`` handles 50-job messages, and its memory.

Starts the GitHub simulator and the embedded Kubernetes API server in this process,
then the real listener as a subprocess. Once the listener is listening (its first
desired-count patch, which precedes any message, has landed), each round queues
``--messages`` x 50 jobs at once, so the simulator packs them into messages of 50
JobAvailable each (and, as they are acquired and assigned, messages of 50 JobAssigned).
Per message the listener acquires the jobs, merge-patches the ERS and acks.

- Throughput = handled messages / (last ack - first delivery), from the simulator's
  event log.
- Steady-state CPU per message = the listener's CPU time (utime + stime) from the
  moment it was listening to the moment the queue drained, over the messages handled:
  start-up (imports, configuration, session) excluded. The figure with start-up
  included is printed too.
- Message-to-patch latency = from a message's first delivery (simulator event time)
  to the first ERS spec patch the API server answered after it (request log time);
  p50 and p99 over every message with jobs.
- Memory = the listener's resident set size (VmRSS) after the round, and its peak (VmHWM).

``--profile PATH`` runs the listener of round 1 under ``simulation.sampler`` from the
moment it is listening until the queue drained, and writes the functions costing most,
inclusive and own, to PATH; that round's timings are not comparable. ``--profile-mode
sample`` (the default): each thread's stack weighed by the CPU it used;
``--profile-mode cprofile``: deterministic, every thread, exact call counts. ``--baseline
TREE`` runs another checkout's listener too (``git worktree add /tmp/base main``),
alternating round by round with this tree's on the same machine, and prints both medians and
this tree's ratios to them.

The floor: what each request the listener sends costs alone (httpx's and the kubernetes
client's own CPU, ``--floor-requests`` keep-alive requests each), added up to the least a
50-job message can cost. After the rounds it is measured in the same run, and the steady
CPU per message is reported as a ratio to it: the listener's own logic is what lies above
1.0x, whatever the machine's speed. ``--floor N`` measures only the floor. Prints one line
per round and the medians::

    python examples/bench_listener.py --messages 40 --rounds 3
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from simulation.procstat import cpu_seconds, memory_mib
from simulation.sampler import request_report

from ersctl.testing.apiserver import ApiServer, RequestRecord
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve

JOBS_PER_MESSAGE = 50
EXAMPLES = Path(__file__).resolve().parent
REPO = EXAMPLES.parent


def ers() -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {"name": "runners", "namespace": "bench"},
        "spec": {
            "replicas": 0,
            "patchID": 0,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": "http://sim/octo",
                "githubConfigSecret": "creds",
                "runnerScaleSetId": 1,
                "spec": {"containers": [{"name": "runner", "image": "runner"}]},
            },
        },
    }


@dataclass(frozen=True)
class Round:
    rate: float  # messages/s
    handled: int
    full: int  # messages carrying 50 jobs
    steady_cpu_ms: float  # per message, start-up excluded
    total_cpu_ms: float  # per message, start-up included
    latencies: list[float]  # seconds, message delivery -> ERS patch
    rss_mib: float
    peak_mib: float


def one_round(
    messages: int,
    workdir: Path,
    profile: Path | None,
    profile_mode: str = "sample",
    tree: Path | None = None,
) -> Round:
    """One round; ``tree`` (a checkout of this repository) runs that tree's listener."""
    sim = GitHubSimulator(hold_seconds=1.0)
    scale_set = sim.create_scale_set("runners")
    server = serve(sim)
    with ApiServer() as api:
        kubeconfig = api.write_kubeconfig(workdir / "kubeconfig")
        api.create_object(
            "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}
        )
        api.create_object("ephemeralrunnersets", ers())
        config = workdir / "listener.json"
        config.write_text(
            json.dumps(
                {
                    "configure_url": f"{server.url}/octo",
                    "github_token": "ghp_benchmarkTOKEN000000",
                    "ephemeral_runner_set_namespace": "bench",
                    "ephemeral_runner_set_name": "runners",
                    "runner_scale_set_id": scale_set["id"],
                    "max_runners": messages * JOBS_PER_MESSAGE,
                    "log_level": os.environ.get("BENCH_LOG_LEVEL", "warn"),
                }
            )
        )
        mode = ["--cprofile"] if profile_mode == "cprofile" else []
        start = (
            ["-m", "simulation.sampler", *mode, str(profile), "ghalistener"]
            if profile
            else ["-m", "ghalistener"]
        )
        listener = subprocess.Popen(
            [
                sys.executable,
                *start,
                "run",
                "--config",
                str(config),
                "--kubeconfig",
                str(kubeconfig),
            ],
            env=listener_env(tree),
            cwd=tree or REPO,
        )
        try:
            wait_until_listening(api)
            if profile:
                listener.send_signal(signal.SIGUSR1)  # profile the steady state only
            listening_cpu = cpu_seconds(listener.pid)
            sim.enqueue_jobs(scale_set["id"], messages * JOBS_PER_MESSAGE, repository="octo/app")
            handled, full, elapsed = wait_for_quiet(sim, expected_jobs=messages * JOBS_PER_MESSAGE)
            cpu = cpu_seconds(listener.pid)
            rss, peak = memory_mib(listener.pid)
            latencies = message_to_patch(sim.events_since(0), api.request_log.records())
            if profile:
                request_report(listener, profile)
        finally:
            listener.send_signal(signal.SIGTERM)
            listener.wait(timeout=30)
    server.stop()
    return Round(
        rate=handled / elapsed,
        handled=handled,
        full=full,
        steady_cpu_ms=1000 * (cpu - listening_cpu) / handled,
        total_cpu_ms=1000 * cpu / handled,
        latencies=latencies,
        rss_mib=rss,
        peak_mib=peak,
    )


def listener_env(tree: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    # Its packages first, whatever the editable install points at; then this tree's
    # examples, for ``simulation.sampler`` (--profile).
    first = [str(tree)] if tree is not None else []
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [*first, str(EXAMPLES), env.get("PYTHONPATH")])
    )
    return env


def _is_set_patch(record: RequestRecord) -> bool:
    return (
        record.verb == "patch"
        and record.resource == "ephemeralrunnersets"
        and record.subresource is None
        and record.status < 300
    )


def wait_until_listening(api: ApiServer) -> None:
    """Until the listener's first desired-count patch landed (it follows the session)."""
    deadline = time.monotonic() + 120
    while not any(_is_set_patch(r) for r in api.request_log.records()):
        if time.monotonic() > deadline:
            raise SystemExit("the listener did not start listening within 120 s")
        time.sleep(0.02)


def message_to_patch(events: list[dict[str, Any]], records: list[RequestRecord]) -> list[float]:
    """Seconds from each message's first delivery to the first set patch after it."""
    patches = sorted(r.at for r in records if _is_set_patch(r))
    latencies = []
    for event in events:
        if event["kind"] != "message.delivered" or not event.get("jobs"):
            continue
        if event.get("delivery", 1) != 1:
            continue
        index = bisect.bisect_left(patches, event["time"])
        if index < len(patches):
            latencies.append(patches[index] - event["time"])
    return latencies


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def wait_for_quiet(sim: GitHubSimulator, *, expected_jobs: int) -> tuple[int, int, float]:
    """Wait until every job was acquired and assigned and the queue is drained."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        state = sim.state()
        assigned = sum(1 for job in state["jobs"] if job["state"] == "assigned")
        queue_empty = all(
            not s["unackedMessages"] and not s["pendingJobMessages"] for s in state["scaleSets"]
        )
        if assigned == expected_jobs and queue_empty:
            break
        time.sleep(0.05)
    else:
        raise SystemExit("the listener did not drain the queue within 300 s")
    events = sim.events_since(0)
    delivered = [e["time"] for e in events if e["kind"] == "message.delivered" and e.get("jobs")]
    acked = [e["time"] for e in events if e["kind"] == "message.acked"]
    full = sum(
        1 for e in events if e["kind"] == "message.delivered" and e.get("jobs") == JOBS_PER_MESSAGE
    )
    return len(acked), full, max(acked) - min(delivered)


def floor(requests: int) -> float:
    """The CPU floor of one message in ms: what each request the listener sends costs
    alone (each printed).

    CPU of the calling thread (the servers run on threads of their own), per request, over
    ``requests`` keep-alive requests after a warm-up; medians of three. A 50-job message
    costs at least: its long poll and its ack (httpx), an acquisition for every other
    message (the JobAssigned ones need none), one ERS merge patch (the kubernetes
    client), and decoding the message's JSON.
    """
    from ersctl.kube.client import Resource, Writer
    from ersctl.kube.connect import api_client
    from ersctl.platform.redaction import Redactor
    from ghalistener.actions.messages import decode_json, parse_message
    from ghalistener.actions.retry import RetryPolicy
    from ghalistener.actions.transport import HttpSender
    from ghalistener.testing.state import Job

    def per_call_us(call: Callable[[], object]) -> float:
        samples = []
        for _ in range(3):
            for _ in range(20):
                call()
            start = time.thread_time()
            for _ in range(requests):
                call()
            samples.append((time.thread_time() - start) / requests * 1e6)
        return statistics.median(samples)

    sim = GitHubSimulator(hold_seconds=0.0)
    server = serve(sim)
    url = f"{server.url}/floor"
    plain = httpx.Client()
    sender = HttpSender(user_agent="floor", retry=RetryPolicy(), redactor=Redactor())
    header = {"Authorization": "Bearer floor"}
    results = {
        "httpx.Client, DELETE": per_call_us(lambda: plain.delete(url, headers=header).read()),
        "HttpSender.send (ours), DELETE": per_call_us(
            lambda: sender.send("DELETE", url, headers=header)
        ),
    }
    jobs = [
        Job(
            request_id=n,
            scale_set_id=1,
            job_id=f"job-{n}",
            repository="app",
            owner="octo",
            workflow_ref="octo/app/.github/workflows/ci.yml@refs/heads/main",
            display_name="build",
            workflow_run_id=7,
            labels=["runners"],
            queue_time=f"2026-01-01T00:00:{n:02d}.1234567Z",  # distinct, as on GitHub
        ).wire("JobAvailable")
        for n in range(JOBS_PER_MESSAGE)
    ]
    message = json.dumps(
        {
            "messageId": 1,
            "messageType": "RunnerScaleSetJobMessages",
            "body": json.dumps(jobs),
            "statistics": {"totalAssignedJobs": 0},
        }
    ).encode()
    results["json.loads of a 50-job message"] = per_call_us(
        lambda: json.loads(json.loads(message)["body"])
    )
    results["parse_message (ours), 50 jobs"] = per_call_us(
        lambda: parse_message(decode_json(message, what="message"))
    )
    server.stop()
    with ApiServer() as api, tempfile.TemporaryDirectory() as tmp:
        api.create_object(
            "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}
        )
        api.create_object("ephemeralrunnersets", ers())
        kube = api_client(str(api.write_kubeconfig(Path(tmp) / "kubeconfig")))
        sets = Resource(
            group="actions.github.com", version="v1alpha1", plural="ephemeralrunnersets"
        )
        path = sets.object_path("bench", "runners")
        writer = Writer(kube)
        results["kubernetes merge_patch (ours), ERS"] = per_call_us(
            lambda: writer.patch(
                sets, "bench", "runners", {"spec": {"replicas": 1}}, timeout=(5.0, 30.0)
            )
        )
        results["kubernetes rest_client.request, ERS"] = per_call_us(
            lambda: kube.rest_client.request(  # type: ignore[no-untyped-call]
                "PATCH",
                kube.configuration.host + path,
                headers={"Content-Type": "application/merge-patch+json"},
                body={"spec": {"replicas": 1}},
            ).read()
        )
    for name, value in results.items():
        print(f"{name:40s} {value / 1000:6.3f} ms CPU per call")
    http = min(results["httpx.Client, DELETE"], results["HttpSender.send (ours), DELETE"])
    kube_request = min(
        results["kubernetes rest_client.request, ERS"],
        results["kubernetes merge_patch (ours), ERS"],
    )
    least = 2.5 * http + kube_request + results["json.loads of a 50-job message"]
    print(
        f"floor per 50-job message (2.5 httpx requests, 1 kubernetes request, the JSON): "
        f"{least / 1000:.2f} ms CPU"
    )
    return least / 1000


def summary(measured: list[Round]) -> dict[str, float]:
    """Medians over rounds: rate, steady and total CPU, latency p50/p99, RSS and peak."""
    median = statistics.median
    return {
        "rate": median(r.rate for r in measured),
        "cpu": median(r.steady_cpu_ms for r in measured),
        "cpu_total": median(r.total_cpu_ms for r in measured),
        "p50": median(percentile(r.latencies, 50) for r in measured),
        "p99": median(percentile(r.latencies, 99) for r in measured),
        "rss": median(r.rss_mib for r in measured),
        "peak": median(r.peak_mib for r in measured),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=40, help="JobAvailable messages per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians)")
    parser.add_argument("--profile", type=Path, help="profile the listener of round 1 to PATH")
    parser.add_argument(
        "--profile-mode",
        choices=("sample", "cprofile"),
        default="sample",
        help="sample: per ms of CPU, true shares; cprofile: deterministic, exact call counts",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (e.g. a git worktree of main): its listener runs too, "
        "alternating round by round with this tree's, and the ratios are printed",
    )
    parser.add_argument(
        "--floor",
        type=int,
        metavar="N",
        help="instead of rounds: the CPU of each request the listener sends, alone, over N "
        "keep-alive requests, and the floor per message they add up to",
    )
    parser.add_argument(
        "--floor-requests",
        type=int,
        default=200,
        metavar="N",
        help="keep-alive requests per kind for the floor measured after the rounds "
        "(0: none, no ratio)",
    )
    args = parser.parse_args()
    if args.floor:
        floor(args.floor)
        print("command: python " + shlex.join(["examples/bench_listener.py", *sys.argv[1:]]))
        return
    trees: list[tuple[str, Path | None]] = [("this tree", REPO)]
    if args.baseline:
        trees.insert(0, ("baseline", args.baseline.resolve()))
    rounds: dict[str, list[Round]] = {name: [] for name, _ in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(1, args.rounds + 1):
            for name, tree in trees:
                profile = args.profile if number == 1 and name == "this tree" else None
                one = one_round(args.messages, Path(tmp), profile, args.profile_mode, tree)
                rounds[name].append(one)
                print(
                    (f"{name} " if args.baseline else "")
                    + f"round {number}: {one.handled} messages ({one.full} with "
                    f"{JOBS_PER_MESSAGE} jobs), {one.rate:.1f} messages/s, listener CPU "
                    f"{one.steady_cpu_ms:.2f} ms/message steady ({one.total_cpu_ms:.1f} incl. "
                    f"start-up), message-to-patch p50 {percentile(one.latencies, 50) * 1000:.1f}"
                    f" ms p99 {percentile(one.latencies, 99) * 1000:.1f} ms, RSS "
                    f"{one.rss_mib:.1f} MiB (peak {one.peak_mib:.1f} MiB)"
                    + (" [profiled]" if profile else "")
                )
    medians = {}
    for name, _ in trees:
        measured = rounds[name]
        if args.profile and name == "this tree" and len(measured) > 1:
            measured = measured[1:]
        medians[name] = summary(measured)
        print(
            (f"{name}: " if args.baseline else "")
            + f"median over {len(measured)} rounds: {medians[name]['rate']:.1f} messages/s "
            f"({medians[name]['rate'] * JOBS_PER_MESSAGE:.0f} job messages/s), "
            f"listener CPU {medians[name]['cpu']:.2f} ms/message steady "
            f"({medians[name]['cpu_total']:.1f} incl. start-up), "
            f"message-to-patch p50 {medians[name]['p50'] * 1000:.1f} ms "
            f"p99 {medians[name]['p99'] * 1000:.1f} ms, "
            f"RSS {medians[name]['rss']:.1f} MiB, peak {medians[name]['peak']:.1f} MiB"
        )
    if args.baseline:
        ours, base = medians["this tree"], medians["baseline"]
        print(
            "this tree / baseline: "
            + ", ".join(
                f"{label} {ours[key] / base[key]:.2f}x"
                for key, label in (
                    ("cpu", "CPU per message"),
                    ("p50", "latency p50"),
                    ("p99", "latency p99"),
                    ("rate", "messages/s"),
                )
            )
        )
    if args.floor_requests:
        least = floor(args.floor_requests)
        for name, _ in trees:
            print(
                (f"{name}: " if args.baseline else "")
                + f"steady CPU per message {medians[name]['cpu']:.2f} ms = "
                f"{medians[name]['cpu'] / least:.2f}x the floor measured in this run"
            )
    print("command: python " + shlex.join(["examples/bench_listener.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
