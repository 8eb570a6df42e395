"""Benchmark the embedded API server with 10,000 EphemeralRunners in one namespace.

    python examples/bench_apiserver.py [--runners 10000] [--lists 20]

Runs the server as a subprocess (``python -m ersctl.testing.apiserver``) so the
client's and the server's CPU are measured apart from one another, and reports, as
medians where repeated:

- list latency: a full LIST of the namespace's runners through the official client
  (``CustomObjectsApi.list_namespaced_custom_object``: HTTP + JSON decode), and the
  raw HTTP time alone (httpx, body read, no decode);
- watch throughput to one client (``kubernetes.watch.Watch``): the initial state
  (10,000 synthetic ADDED events), a replay of 10,000 MODIFIED events from a
  resourceVersion, and live delivery while another client patches every runner;
- the server's resident memory holding the runners.

Not a test: numbers depend on the machine. Quote the command with the numbers.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client, watch
from simulation.procstat import memory_mib

from ersctl import api

NAMESPACE = "default"
PATH = f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{NAMESPACE}/{api.ER_PLURAL}"


def _runner(index: int) -> dict[str, Any]:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.ER_KIND,
        "metadata": {
            "name": f"bench-runner-{index:05d}",
            "labels": {"app.kubernetes.io/component": "runner"},
            "annotations": {api.PATCH_ID_ANNOTATION: "1"},
            "finalizers": [api.ER_FINALIZER, api.ER_REGISTRATION_FINALIZER],
        },
        "spec": {
            "githubConfigUrl": "https://github.com/bench",
            "githubConfigSecret": "github-credentials",
            "runnerScaleSetId": 1,
            "spec": {"containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner"}]},
        },
    }


def _start_server(kubeconfig: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ersctl.testing.apiserver",
            "--port",
            "0",
            "--no-gc",
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("ready "):
        raise SystemExit(f"server did not start: {line!r}")
    return process, line.removeprefix("ready ")


def _create(http: httpx.Client, count: int) -> float:
    started = time.perf_counter()
    for index in range(count):
        response = http.post(PATH, json=_runner(index))
        response.raise_for_status()
    return time.perf_counter() - started


def _median_ms(samples: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _watch_rate(custom: client.CustomObjectsApi, count: int, **kwargs: Any) -> tuple[int, float]:
    """Receive ``count`` events; returns (received, events per second)."""
    # kubernetes.watch has no annotations
    stream = watch.Watch()  # type: ignore[no-untyped-call]
    received = 0
    started = time.perf_counter()
    for _event in stream.stream(  # type: ignore[no-untyped-call]
        custom.list_namespaced_custom_object,
        api.GROUP,
        api.VERSION,
        NAMESPACE,
        api.ER_PLURAL,
        timeout_seconds=120,
        **kwargs,
    ):
        received += 1
        if received == count:
            stream.stop()  # type: ignore[no-untyped-call]
    return received, received / (time.perf_counter() - started)


def _patch_all(http: httpx.Client, count: int, replicas: int) -> None:
    headers = {"Content-Type": "application/merge-patch+json"}
    for index in range(count):
        body = f'{{"metadata":{{"labels":{{"round":"{replicas}"}}}}}}'
        http.patch(f"{PATH}/bench-runner-{index:05d}", content=body, headers=headers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runners", type=int, default=10_000, help="EphemeralRunners stored in the namespace"
    )
    parser.add_argument("--lists", type=int, default=20, help="LIST samples for the median")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        process, url = _start_server(Path(tmp) / "kubeconfig")
        try:
            return _run(url, process.pid, args.runners, args.lists)
        finally:
            process.terminate()
            process.wait(timeout=10)


def _run(url: str, pid: int, count: int, lists: int) -> int:
    configuration = client.Configuration()
    configuration.host = url
    api_client = client.ApiClient(configuration)
    custom = client.CustomObjectsApi(api_client)
    with httpx.Client(base_url=url, timeout=120) as http:
        created_s = _create(http, count)
        print(
            f"created {count} EphemeralRunners over HTTP in {created_s:.1f} s "
            f"({count / created_s:.0f}/s); server RSS {memory_mib(pid)[0]:.0f} MiB"
        )

        raw_ms = _median_ms(lists, lambda: http.get(PATH).raise_for_status())
        client_ms = _median_ms(
            lists,
            lambda: custom.list_namespaced_custom_object(
                api.GROUP, api.VERSION, NAMESPACE, api.ER_PLURAL
            ),
        )
        print(
            f"LIST {count} runners, median of {lists}: raw HTTP {raw_ms:.0f} ms, "
            f"official client (with JSON decode) {client_ms:.0f} ms"
        )

        _, initial_rate = _watch_rate(custom, count)
        print(f"watch initial state: {count} ADDED events at {initial_rate:,.0f} events/s")

        start_rv = http.get(PATH).json()["metadata"]["resourceVersion"]
        _patch_all(http, count, 1)
        _, replay_rate = _watch_rate(custom, count, resource_version=start_rv)
        print(
            f"watch replay from a resourceVersion: {count} MODIFIED events at "
            f"{replay_rate:,.0f} events/s"
        )

        live_rv = http.get(PATH).json()["metadata"]["resourceVersion"]
        writer = threading.Thread(target=_patch_all, args=(http, count, 2))
        result: dict[str, float] = {}
        reader = threading.Thread(
            target=lambda: result.update(
                rate=_watch_rate(custom, count, resource_version=live_rv)[1]
            )
        )
        reader.start()
        write_started = time.perf_counter()
        writer.start()
        writer.join()
        write_rate = count / (time.perf_counter() - write_started)
        reader.join()
        print(
            f"watch live: {result['rate']:,.0f} events/s delivered while one client "
            f"patched at {write_rate:,.0f} writes/s; server RSS {memory_mib(pid)[0]:.0f} MiB"
        )
    api_client.close()  # type: ignore[no-untyped-call]
    return 0


if __name__ == "__main__":
    sys.exit(main())
