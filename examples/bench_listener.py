"""Benchmark (not a test): how fast ``ghalistener run`` handles 50-job messages, and its memory.

Starts the GitHub simulator and the embedded Kubernetes API server in this process,
then the real listener as a subprocess. Each round queues ``--messages`` x 50 jobs
before the listener starts, so the simulator packs them into messages of 50
JobAvailable each (and, as they are acquired and assigned, messages of 50 JobAssigned).
Per message the listener acquires the jobs, merge-patches the ERS and acks.

Throughput = handled messages / (last ack - first delivery), from the simulator's
event log. Memory = the listener's resident set size (VmRSS) after the round, and its
peak (VmHWM). Prints one line per round and the medians::

    python examples/bench_listener.py --messages 40 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ersctl.testing.apiserver import ApiServer
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve

JOBS_PER_MESSAGE = 50


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


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (KiB), plus CPU time used so far (ms) as "cpu_ms"."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    found = {"cpu_ms": ticks * 1000 // os.sysconf("SC_CLK_TCK")}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def one_round(messages: int, workdir: Path) -> tuple[float, int, int, dict[str, int]]:
    sim = GitHubSimulator(hold_seconds=1.0)
    scale_set = sim.create_scale_set("runners")
    for _ in range(messages * JOBS_PER_MESSAGE):
        sim.enqueue_job(scale_set["id"], repository="octo/app")
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
        listener = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ghalistener",
                "run",
                "--config",
                str(config),
                "--kubeconfig",
                str(kubeconfig),
            ],
            env={k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"},
        )
        try:
            handled, full, elapsed = wait_for_quiet(sim, expected_jobs=messages * JOBS_PER_MESSAGE)
            memory = memory_kib(listener.pid)
        finally:
            listener.send_signal(signal.SIGTERM)
            listener.wait(timeout=10)
    server.stop()
    return handled / elapsed, handled, full, memory


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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=40, help="JobAvailable messages per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rates, rss, peak, cpu = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(1, args.rounds + 1):
            rate, handled, full, memory = one_round(args.messages, Path(tmp))
            rates.append(rate)
            cpu.append(memory["cpu_ms"] / handled)
            rss.append(memory["VmRSS"])
            peak.append(memory["VmHWM"])
            print(
                f"round {number}: {handled} messages ({full} with {JOBS_PER_MESSAGE} jobs), "
                f"{rate:.1f} messages/s, listener CPU {memory['cpu_ms'] / handled:.1f} ms/message "
                f"(incl. start-up), RSS {memory['VmRSS'] / 1024:.1f} MiB "
                f"(peak {memory['VmHWM'] / 1024:.1f} MiB)"
            )
    print(
        f"median: {statistics.median(rates):.1f} messages/s "
        f"({statistics.median(rates) * JOBS_PER_MESSAGE:.0f} job messages/s), "
        f"listener CPU {statistics.median(cpu):.1f} ms/message, "
        f"RSS {statistics.median(rss) / 1024:.1f} MiB, peak {statistics.median(peak) / 1024:.1f} MiB"
    )


if __name__ == "__main__":
    main()
