"""Benchmark (not collected by pytest): the runner controller on the runtime's manager.

N EphemeralRunners are created at once against the embedded API server and the GitHub
simulator (over HTTP); measured: the time until every runner has its Pod, the API
requests per runner (registration, Secret, Pod, status) broken down by verb and
resource, and the requests one resync of N steady runners costs. Runners are created
as the set controller creates them (both finalizers). Three runs; medians printed.

    python -m examples.bench_runner_controller 500
"""

from __future__ import annotations

import argparse
import base64
import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass

from ersctl.api import ER_FINALIZER, ER_REGISTRATION_FINALIZER
from ersctl.arcclient.reader import ApiReader
from ersctl.ephemeralrunner.controller import add_runner_controller
from ersctl.kube.manager import Manager
from ersctl.scaleset.clients import SecretRunnerServices
from ersctl.testing.apiserver import ApiServer
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve
from tests.ersctl.ephemeralrunner.conftest import actions_client
from tests.polling import eventually


@dataclass(frozen=True)
class Run:
    seconds: float
    requests_per_runner: float
    resync_requests: int
    requests: Counter[tuple[str, str]]  # ("verb resource[/subresource]", status)


def runner_doc(i: int, url: str, scale_set: int) -> dict[str, object]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        # As the set controller creates them (ersctl.ephemeralrunnerset.creation): both finalizers.
        "metadata": {
            "name": f"r-{i}",
            "namespace": "ci",
            "finalizers": [ER_FINALIZER, ER_REGISTRATION_FINALIZER],
        },
        "spec": {
            "githubConfigUrl": url,
            "githubConfigSecret": "creds",
            "runnerScaleSetId": scale_set,
            "spec": {"containers": [{"name": "runner", "image": "runner"}]},
        },
    }


def pods_created(server: ApiServer) -> int:
    """Pods the API server created, from its request log: listing them instead decodes
    every Pod on every poll, in the process that also serves the API and runs the
    controller, and that made the benchmark's own polling its largest cost (profiled)."""
    return sum(
        1
        for r in server.request_log.records()
        if r.verb == "create" and r.resource == "pods" and r.status == 201
    )


def one_run(n: int) -> Run:
    sim = GitHubSimulator()
    github = serve(sim, port=0)
    scale_set = int(sim.create_scale_set(name="bench")["id"])
    with ApiServer() as server:
        server.create_object("namespaces", {"metadata": {"name": "ci"}})
        token = base64.b64encode(b"ghp_bench_token").decode()
        server.create_object(
            "secrets",
            {"metadata": {"name": "creds", "namespace": "ci"}, "data": {"github_token": token}},
        )
        api = server.api_client()
        manager = Manager(api, namespace="ci", workers=4)
        services = SecretRunnerServices(
            get_secret=ApiReader(manager.api_reader).get_secret,
            get_configmap=ApiReader(manager.api_reader).get_configmap,
            client_factory=actions_client,
        )
        add_runner_controller(manager, api, services=services)
        stop = threading.Event()
        thread = threading.Thread(target=manager.run, args=(stop,))
        thread.start()
        eventually(manager.has_synced, timeout=60, interval=0.01, what="caches synced")
        server.request_log.clear()
        started = time.monotonic()
        for i in range(n):
            server.create_object("ephemeralrunners", runner_doc(i, f"{github.url}/org", scale_set))
        eventually(
            lambda: pods_created(server) >= n,
            timeout=600,
            interval=0.01,
            what=f"{n} Pods",
        )
        seconds = time.monotonic() - started
        time.sleep(0.5)  # let the last status writes land
        records = server.request_log.records()
        by_kind = Counter(
            (f"{r.verb} {'/'.join(filter(None, (r.resource, r.subresource)))}", str(r.status))
            for r in records
        )
        server.request_log.clear()
        manager.resync()
        time.sleep(1.0)
        resync = len(server.request_log.records())
        stop.set()
        thread.join()
        services.close()
        api.close()
    github.stop()
    return Run(seconds, len(records) / n, resync, by_kind)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "runners",
        type=int,
        nargs="?",
        default=100,
        help="EphemeralRunners created at once (default: 100).",
    )
    n = parser.parse_args().runners
    runs = [one_run(n) for _ in range(3)]
    print(
        f"N={n}: all Pods after {statistics.median(r.seconds for r in runs):.2f} s (median of "
        f"{[round(r.seconds, 2) for r in runs]}), "
        f"{statistics.median(r.requests_per_runner for r in runs):.1f} API requests per runner, "
        f"a resync of N steady runners: {statistics.median(r.resync_requests for r in runs)} "
        "requests"
    )
    print("requests per runner by verb, resource and status (medians):")
    kinds = sorted({kind for run in runs for kind in run.requests})
    for kind in kinds:
        per_runner = statistics.median(run.requests[kind] / n for run in runs)
        print(f"  {kind[0]:32} {kind[1]:>4} {per_runner:6.2f}")
    print("command: python -m examples.bench_runner_controller " + str(n))


if __name__ == "__main__":
    main()
