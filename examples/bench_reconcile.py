"""Benchmark (not a test): CPU time and API requests of one reconcile, by cached runners.

Run: ``python -m examples.bench_reconcile [--runners 1000 10000] [--repeat 21]``

The production wiring (``ersctl.wiring.build_controller``: informers, cache, API reader,
writer, event recorder, registry) against the embedded API server in this process.
CPU is ``time.thread_time()`` of the reconciling thread only (the server and the
informers run on other threads); requests come from the server's request log, watch
streams excluded. Reported per scenario: median and max CPU ms, median wall ms, and
the requests each reconcile sent (the same every repetition, or a range).
"""

from __future__ import annotations

import argparse
import base64
import statistics
import time
from dataclasses import dataclass
from functools import partial

from ersctl import api
from ersctl.ephemeralrunnerset.classification import classify
from ersctl.ephemeralrunnerset.ports import CachedReader
from ersctl.ephemeralrunnerset.reconciler import EphemeralRunnerSetReconciler
from ersctl.kube.reconcile import Request
from ersctl.testing.apiserver import ApiServer
from ersctl.wiring import ControllerOptions, build_controller
from tests.ersctl.ephemeralrunnerset.objects import ers_doc
from tests.polling import eventually

NAMESPACE = "bench"
NAME = "runners"


@dataclass(frozen=True)
class Sample:
    cpu_ms: float
    wall_ms: float
    requests: tuple[str, ...]
    action: str


def populate(server: ApiServer, count: int) -> None:
    server.create_object("namespaces", {"metadata": {"name": NAMESPACE}})
    server.create_object(
        "secrets",
        {
            "metadata": {"name": "github-config", "namespace": NAMESPACE},
            "data": {"github_token": base64.b64encode(b"ghp_benchmark").decode()},
        },
    )
    doc = ers_doc(NAME, namespace=NAMESPACE, replicas=count, patch_id=7)
    doc["metadata"]["finalizers"] = [api.ERS_FINALIZER]
    ers = server.create_object(api.ERS_PLURAL, doc)
    owner = {
        "apiVersion": api.API_VERSION,
        "kind": api.ERS_KIND,
        "name": NAME,
        "uid": ers["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for i in range(count):
        name = f"{NAME}-runner-{i:05d}"
        server.create_object(
            api.ER_PLURAL,
            {
                "apiVersion": api.API_VERSION,
                "kind": api.ER_KIND,
                "metadata": {
                    "name": name,
                    "namespace": NAMESPACE,
                    "annotations": {api.PATCH_ID_ANNOTATION: "7"},
                    "finalizers": [api.ER_FINALIZER],
                    "ownerReferences": [owner],
                },
                "spec": doc["spec"]["ephemeralRunnerSpec"],
            },
        )
        status = {"phase": "Running", "runnerId": i + 1, "runnerName": name}
        if i % 2:
            status["jobId"] = f"job-{i}"
        server.patch_object(
            api.ER_PLURAL, NAMESPACE, name, {"status": status}, subresource="status"
        )


def measure(server: ApiServer, reconciler: EphemeralRunnerSetReconciler) -> Sample:
    server.request_log.clear()
    wall, cpu = time.perf_counter(), time.thread_time()
    outcome = reconciler.reconcile_with_outcome(Request(NAMESPACE, NAME))
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    requests = tuple(
        f"{r.verb} {r.resource}{'/' + r.subresource if r.subresource else ''}"
        for r in server.request_log.records()
        if r.verb != "watch"
    )
    return Sample(cpu * 1000, wall * 1000, requests, outcome.action)


def report(label: str, count: int, samples: list[Sample]) -> None:
    cpu = [s.cpu_ms for s in samples]
    counts = sorted({len(s.requests) for s in samples})
    kinds = sorted({k for s in samples for k in s.requests})
    print(
        f"{count:>6} runners | {label:<34} | cpu median {statistics.median(cpu):7.2f} ms"
        f" max {max(cpu):7.2f} | wall median {statistics.median(s.wall_ms for s in samples):7.2f}"
        f" ms | requests {'/'.join(map(str, counts))} {kinds} | {samples[-1].action}"
    )


def breakdown(cache: CachedReader, count: int, repeat: int) -> None:
    """Where a steady-state reconcile spends its CPU: the cache's listing (it hands out
    deep copies) versus the reconciler's own classification."""
    ers = _cached(cache)
    listing, sorting = [], []
    for _ in range(repeat):
        start = time.thread_time()
        runners = cache.list_owned_runners(ers)
        listed = time.thread_time()
        classify(runners, applied_revision=0)
        listing.append((listed - start) * 1000)
        sorting.append((time.thread_time() - listed) * 1000)
    print(
        f"{count:>6} runners |   of which cache.list_owned_runners {statistics.median(listing):7.2f} ms,"
        f" classify {statistics.median(sorting):7.2f} ms (medians)"
    )


def run(count: int, repeat: int) -> None:
    with ApiServer() as server:
        populate(server, count)
        controller = build_controller(server.api_client(), ControllerOptions(namespace=NAMESPACE))
        reconciler = controller.reconciler
        with controller.manager.caches():
            cache = controller.cache
            eventually(lambda: len(cache.list_owned_runners(_cached(cache))) == count, timeout=60)
            measure(server, reconciler)  # settles the status counts
            time.sleep(0.2)
            steady = [measure(server, reconciler) for _ in range(repeat)]
            report("steady state (patch serviced)", count, steady)
            breakdown(cache, count, repeat)

            server.patch_object(api.ERS_PLURAL, NAMESPACE, NAME, {"spec": {"patchID": 8}})
            eventually(lambda: _cached(cache).patch_id == 8, timeout=60)
            same = [measure(server, reconciler) for _ in range(repeat)]
            report("new patch ID, same replicas", count, same)

            ups = []
            for patch_id in range(9, 9 + 5):
                spec = {"patchID": patch_id, "replicas": count + patch_id - 8}
                server.patch_object(api.ERS_PLURAL, NAMESPACE, NAME, {"spec": spec})
                eventually(partial(_has_patch_id, cache, patch_id), timeout=60)
                ups.append(measure(server, reconciler))
            report("scale up by one (guarded)", count, ups)
        controller.services.close()


def _cached(cache: CachedReader) -> api.EphemeralRunnerSet:
    ers = cache.get_ers(NAMESPACE, NAME)
    assert ers is not None
    return ers


def _has_patch_id(cache: CachedReader, patch_id: int) -> bool:
    return _cached(cache).patch_id == patch_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runners",
        type=int,
        nargs="+",
        default=[1000, 10000],
        help="Cached runner counts, one scenario each (default: 1000 10000).",
    )
    parser.add_argument(
        "--repeat", type=int, default=21, help="Reconciles measured per scenario (default: 21)."
    )
    args = parser.parse_args()
    for count in args.runners:
        run(count, args.repeat)


if __name__ == "__main__":
    main()
