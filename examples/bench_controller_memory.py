"""Controller footprint with a large cache, and what a full resync costs (not run by CI).

    python examples/bench_controller_memory.py [--runs 3] [--shapes ...] [--json out.json]

For each shape it fills the embedded API server with sets in steady state (finalizer
set, runners already created for the current patch ID, Running with a job and
registered, a realistic pod template) and starts ``python -m ersctl reconcile`` as its
own process against it. Shapes ``empty``, ``10x1000`` and ``1x10000`` run the set
controller alone (as first measured); ``100x100`` is the many-sets case: 100 sets of
100 runners with the runner controller on too, each runner with the JIT Secret and the
Running, ready Pod the runner controller would have made for it
(``ersctl.ephemeralrunner.pods``), created directly in the server; ``100x100-sets`` is the same
without the runner controller, Pods and Secrets, so its resync is the set controller's
alone. Then:

- **memory**: the controller's resident set (VmRSS) once its caches synced and its
  first pass over every object ended, again after the resync, and its peak (VmHWM);
- **one full resync**: the periodic resync (``--resync-period``, long enough that the
  first pass is over) enqueues every set and every runner; with the server's request
  log cleared just before, it counts the requests the controller sent (watches aside:
  expected 0), the reconciles of each controller (its /metrics) and the CPU seconds
  the process used from 3 s before the resync until every reconcile of it ran and 1 s
  went by without one (/proc; the /metrics polls that tell when are included: about
  ten a second, a few ms each).

Prints one row per shape and run, then medians per shape.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from simulation.procstat import cpu_seconds, memory_mib

from ersctl.api import (
    API_VERSION,
    ER_FINALIZER,
    ER_KIND,
    ER_PLURAL,
    ER_REGISTRATION_FINALIZER,
    ERS_FINALIZER,
    ERS_KIND,
    ERS_PLURAL,
    EphemeralRunner,
)
from ersctl.ephemeralrunner import pods
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.ports import unused_port

NAMESPACE = "bench"
POD_TEMPLATE = {
    "metadata": {"labels": {"app": "runner"}},
    "spec": {
        "restartPolicy": "Never",
        "serviceAccountName": "runner",
        "containers": [
            {
                "name": "runner",
                "image": "ghcr.io/actions/actions-runner:2.330.0",
                "command": ["/home/runner/run.sh"],
                "env": [{"name": f"RUNNER_ENV_{i}", "value": f"value-{i}"} for i in range(8)],
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                "volumeMounts": [{"name": "work", "mountPath": "/home/runner/_work"}],
            }
        ],
        "volumes": [{"name": "work", "emptyDir": {}}],
    },
}
JIT_CONFIG = "eyJ" + "x" * 2400  # a real encoded JIT config is about this long
SET_CONTROLLER = "ephemeralrunnerset"
RUNNER_CONTROLLER = "ephemeralrunner"


@dataclass(frozen=True)
class Shape:
    name: str
    sets: int
    per_set: int
    runner_controller: bool
    """Run the runner controller too, with each runner's JIT Secret and Pod in the server."""


SHAPES = {
    s.name: s
    for s in (
        Shape("empty", 1, 0, False),
        Shape("10x1000", 10, 1000, False),
        Shape("1x10000", 1, 10000, False),
        Shape("100x100", 100, 100, True),
        Shape("100x100-sets", 100, 100, False),
    )
}


@dataclass(frozen=True)
class Sample:
    shape: str
    runners: int
    rss_synced_mib: float
    rss_after_resync_mib: float
    peak_mib: float
    sync_seconds: float
    set_reconciles: int
    runner_reconciles: int
    requests: int
    resync_cpu_seconds: float


def runner_spec() -> dict[str, object]:
    return {
        "githubConfigUrl": "https://github.com/octo-org",
        "githubConfigSecret": "github-secret",
        "runnerScaleSetId": 1,
        **POD_TEMPLATE,  # inline, as ARC's EphemeralRunnerSpec embeds a PodTemplateSpec
    }


def populate(server: ApiServer, shape: Shape) -> None:
    server.create_object("namespaces", {"metadata": {"name": NAMESPACE}})
    for s in range(shape.sets):
        name = f"set-{s}"
        ers = server.create_object(ERS_PLURAL, {
            "apiVersion": API_VERSION, "kind": ERS_KIND,
            "metadata": {"name": name, "namespace": NAMESPACE, "finalizers": [ERS_FINALIZER]},
            "spec": {"replicas": shape.per_set, "patchID": 1,
                     "ephemeralRunnerSpec": runner_spec()},
        })  # fmt: skip
        status = {"phase": "Running", "currentReplicas": 0}  # steady: no count is kept
        server.patch_object(ERS_PLURAL, NAMESPACE, name, {"status": status}, subresource="status")
        owner = {"apiVersion": API_VERSION, "kind": ERS_KIND, "name": name,
                 "uid": ers["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
        for r in range(shape.per_set):
            runner = server.create_object(ER_PLURAL, {
                "apiVersion": API_VERSION, "kind": ER_KIND,
                "metadata": {
                    "name": f"{name}-runner-{r:05d}", "namespace": NAMESPACE,
                    "ownerReferences": [owner],
                    "labels": {"app.kubernetes.io/component": "runner"},
                    "annotations": {"actions.github.com/patch-id": "1",
                                    "actions.github.com/actionable-revision": "0"},
                    "finalizers": [ER_FINALIZER, ER_REGISTRATION_FINALIZER],
                },
                "spec": runner_spec(),
            })  # fmt: skip
            runner_id = s * shape.per_set + r + 1
            if shape.runner_controller:
                add_secret_and_pod(server, EphemeralRunner(runner), runner_id)
            server.patch_object(ER_PLURAL, NAMESPACE, runner["metadata"]["name"], {"status": {
                "phase": "Running", "runnerId": runner_id, "ready": True,
                "runnerName": runner["metadata"]["name"], "jobId": f"job-{runner_id}",
                "jobRequestId": runner_id, "jobRepositoryName": "octo-org/app",
                "workflowRunId": runner_id, "jobWorkflowRef": "octo-org/app/.github/workflows/ci.yml@refs/heads/main",
                "jobDisplayName": "build",
            }}, subresource="status")  # fmt: skip


def add_secret_and_pod(server: ApiServer, runner: EphemeralRunner, runner_id: int) -> None:
    """The JIT Secret and the Running, ready Pod the runner controller makes for ``runner``."""
    secret = server.create_object("secrets", pods.build_jit_secret(
        runner, runner_id=runner_id, runner_name=runner.name, scale_set_id=1,
        encoded_jit_config=JIT_CONFIG,
    ))  # fmt: skip
    pod = server.create_object("pods", pods.build_runner_pod(runner, secret=secret))
    running = {"phase": "Running", "podIP": "10.0.0.1", "startTime": pod["metadata"]["creationTimestamp"],
               "conditions": [{"type": t, "status": "True"} for t in
                              ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
               "containerStatuses": [{"name": pods.RUNNER_CONTAINER, "ready": True, "restartCount": 0,
                                      "image": "ghcr.io/actions/actions-runner:2.330.0",
                                      "state": {"running": {"startedAt": pod["metadata"]["creationTimestamp"]}}}]}  # fmt: skip
    server.patch_object("pods", NAMESPACE, runner.name, {"status": running}, subresource="status")


def reconciles(port: int) -> dict[str, int]:
    """Reconciles so far per controller, from the controller's /metrics."""
    counts: dict[str, int] = {}
    for line in httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text.splitlines():
        if line.startswith("ersctl_reconcile_total{"):
            labels, value = line.rsplit(" ", 1)
            controller = labels.split('controller="', 1)[1].split('"', 1)[0]
            counts[controller] = counts.get(controller, 0) + int(float(value))
    return counts


def wait_until(check: Callable[[], object], timeout: float, what: str | Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            said = what if isinstance(what, str) else what()
            raise SystemExit(f"benchmark: {said}: not within {timeout:.0f} s")
        time.sleep(0.1)


def ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def wait_for_pass(port: int, expected: dict[str, int], timeout: float) -> dict[str, int]:
    """Wait until each controller ran at least ``expected`` reconciles and then 1 s went
    by without one (its writes' events reconciled too); returns the counts then."""
    seen: list[dict[str, int]] = []

    def done() -> bool:
        seen.append(reconciles(port))
        reached = all(seen[-1].get(c, 0) >= n for c, n in expected.items())
        return reached and len(seen) > 10 and seen[-11] == seen[-1]

    wait_until(done, timeout, lambda: f"reconciles {expected} (last seen: {seen[-1]})")
    return seen[-1]


def measure(shape: Shape, resync_period: float) -> Sample:
    with ApiServer(gc=False) as server, tempfile.TemporaryDirectory() as tmp:
        populate(server, shape)
        kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        port = unused_port()
        started = time.monotonic()
        controllers = ["--no-autoscaling-runner-set-controller", "--no-listener-controller"]
        if not shape.runner_controller:
            # The ERS controller alone, as measured before the others were default.
            controllers.append("--no-runner-controller")
        proc = subprocess.Popen(
            [sys.executable, "-m", "ersctl", "reconcile", "--kubeconfig", str(kubeconfig),
             "--namespace", NAMESPACE, "--no-leader-elect",
             "--resync-period", str(resync_period),
             "--metrics-addr", f"127.0.0.1:{port}", "--log-level", "warning", *controllers],
        )  # fmt: skip
        try:
            wait_until(lambda: proc.poll() is not None or ready(port), 300, "readiness")
            if proc.poll() is not None:
                raise SystemExit(f"benchmark: the controller exited with {proc.returncode}")
            sync = time.monotonic() - started
            resync_due = time.monotonic() + resync_period
            expected = {SET_CONTROLLER: shape.sets}
            if shape.runner_controller:
                expected[RUNNER_CONTROLLER] = shape.sets * shape.per_set
            before = wait_for_pass(port, expected, timeout=resync_period)
            # The resync fires one period after the caches synced (at most a poll before
            # readiness was seen): the CPU is counted from 3 s before it, idle till then
            # (no /metrics polls, which cost the controller CPU too).
            if time.monotonic() >= resync_due - 5:
                raise SystemExit("benchmark: the first pass outlasted --resync-period: raise it")
            rss_synced, _ = memory_mib(proc.pid)
            time.sleep(resync_due - 3 - time.monotonic())
            server.request_log.clear()
            cpu_before = cpu_seconds(proc.pid)
            after = wait_for_pass(
                port, {c: before.get(c, 0) + n for c, n in expected.items()}, resync_period + 300
            )
            cpu = cpu_seconds(proc.pid) - cpu_before
            requests = [r for r in server.request_log.records() if r.verb != "watch"]
            rss_after, peak = memory_mib(proc.pid)
            return Sample(
                shape=shape.name, runners=shape.sets * shape.per_set,
                rss_synced_mib=round(rss_synced, 1), rss_after_resync_mib=round(rss_after, 1),
                peak_mib=round(peak, 1), sync_seconds=round(sync, 2),
                set_reconciles=after.get(SET_CONTROLLER, 0) - before.get(SET_CONTROLLER, 0),
                runner_reconciles=after.get(RUNNER_CONTROLLER, 0) - before.get(RUNNER_CONTROLLER, 0),
                requests=len(requests), resync_cpu_seconds=round(cpu, 3),
            )  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(timeout=30)


MEDIANS = ("rss_synced_mib", "rss_after_resync_mib", "peak_mib", "sync_seconds",
           "set_reconciles", "runner_reconciles", "requests", "resync_cpu_seconds")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per shape (medians)")
    parser.add_argument(
        "--shapes",
        nargs="+",
        choices=list(SHAPES),
        default=list(SHAPES),
        help="object counts to measure (sets x runners each)",
    )
    parser.add_argument(
        "--resync-period", type=float, default=60.0, help="seconds (the first pass must end sooner)"
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="write every sample as JSON to PATH"
    )
    args = parser.parse_args()
    samples: list[Sample] = []
    for _ in range(args.runs):
        for name in args.shapes:
            sample = measure(SHAPES[name], args.resync_period)
            print(json.dumps(asdict(sample)), flush=True)
            samples.append(sample)
    print(f"\nmedians per shape over {args.runs} runs:")
    for name in args.shapes:
        rows = [s for s in samples if s.shape == name]
        med: dict[str, Any] = {k: statistics.median(getattr(s, k) for s in rows) for k in MEDIANS}
        print(f"  {name:>8}: " + ", ".join(f"{k}={v}" for k, v in med.items()))
    print("\ncommand: python " + " ".join(["examples/bench_controller_memory.py", *sys.argv[1:]]))
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in samples], indent=2))


if __name__ == "__main__":
    main()
