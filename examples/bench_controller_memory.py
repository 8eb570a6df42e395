"""Controller footprint with a large cache, measured (not run by CI).

    python examples/bench_controller_memory.py [--runs 3] [--json out.json]

For each shape (no runners; 10 sets x 1,000 runners; 1 set x 10,000 runners) it fills
the embedded API server with sets in steady state (finalizer set, runners already
created for the current patch ID, Running and registered, a realistic pod template),
starts ``python -m ersctl reconcile`` as its own process against it, waits for the
caches to sync and the controller to go quiet, then:

- **memory**: the controller's resident set (VmRSS) and peak (VmHWM) from /proc;
- **steady state**: clears the server's request log, lets the periodic resync
  reconcile every set again (``--resync-period 1``) for a few seconds, and counts the
  requests the controller sent meanwhile besides its open watches (expected: 0), the
  reconciles it ran (from its /metrics) and the CPU seconds they cost (/proc stat).

Prints one row per shape and run, then medians per shape.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from ersctl.api import API_VERSION, ER_KIND, ER_PLURAL, ERS_FINALIZER, ERS_KIND, ERS_PLURAL
from ersctl.testing.apiserver import ApiServer

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


@dataclass(frozen=True)
class Sample:
    shape: str
    runners: int
    rss_mib: float
    peak_mib: float
    sync_seconds: float
    reconciles: int
    requests: int
    cpu_ms_per_reconcile: float


def runner_spec() -> dict[str, object]:
    return {
        "githubConfigUrl": "https://github.com/octo-org",
        "githubConfigSecret": "github-secret",
        "runnerScaleSetId": 1,
        "spec": POD_TEMPLATE,
    }


def populate(server: ApiServer, sets: int, per_set: int) -> None:
    server.create_object("namespaces", {"metadata": {"name": NAMESPACE}})
    for s in range(sets):
        name = f"set-{s}"
        ers = server.create_object(ERS_PLURAL, {
            "apiVersion": API_VERSION, "kind": ERS_KIND,
            "metadata": {"name": name, "namespace": NAMESPACE, "finalizers": [ERS_FINALIZER]},
            "spec": {"replicas": per_set, "patchID": 1, "ephemeralRunnerSpec": runner_spec()},
        })  # fmt: skip
        status = {"phase": "Running", "currentReplicas": per_set,
                  "runningEphemeralRunners": per_set}  # fmt: skip
        server.patch_object(ERS_PLURAL, NAMESPACE, name, {"status": status}, subresource="status")
        owner = {"apiVersion": API_VERSION, "kind": ERS_KIND, "name": name,
                 "uid": ers["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
        for r in range(per_set):
            runner = f"{name}-runner-{r:05d}"
            server.create_object(ER_PLURAL, {
                "apiVersion": API_VERSION, "kind": ER_KIND,
                "metadata": {
                    "name": runner, "namespace": NAMESPACE, "ownerReferences": [owner],
                    "labels": {"app.kubernetes.io/component": "runner"},
                    "annotations": {"actions.github.com/patch-id": "1",
                                    "actions.github.com/actionable-revision": "0"},
                    "finalizers": ["ephemeralrunner.actions.github.com/finalizer"],
                },
                "spec": runner_spec(),
            })  # fmt: skip
            server.patch_object(ER_PLURAL, NAMESPACE, runner, {"status": {
                "phase": "Running", "runnerId": r + 1, "runnerName": runner, "ready": True,
            }}, subresource="status")  # fmt: skip


def proc_status(pid: int) -> dict[str, str]:
    text = Path(f"/proc/{pid}/status").read_text()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def mib(value: str) -> float:
    return int(value.split()[0]) / 1024  # "123456 kB"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def reconcile_count(port: int) -> int:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("ersctl_reconcile_total")))  # fmt: skip


def wait_until(check: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit("benchmark: condition not met in time")
        time.sleep(0.1)


def ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def measure(shape: str, sets: int, per_set: int, window: float) -> Sample:
    with ApiServer(gc=False) as server, tempfile.TemporaryDirectory() as tmp:
        populate(server, sets, per_set)
        kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        port = free_port()
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "ersctl", "reconcile", "--kubeconfig", str(kubeconfig),
             "--namespace", NAMESPACE, "--no-leader-elect", "--resync-period", "1",
             "--metrics-addr", f"127.0.0.1:{port}", "--log-level", "warning",
             # The ERS controller alone, as measured before the others were default.
             "--no-runner-controller", "--no-autoscaling-runner-set-controller"],
        )  # fmt: skip
        try:
            wait_until(lambda: proc.poll() is not None or ready(port), timeout=300)
            if proc.poll() is not None:
                raise SystemExit(f"benchmark: the controller exited with {proc.returncode}")
            sync = time.monotonic() - started
            wait_until(lambda: reconcile_count(port) >= sets, timeout=300)
            time.sleep(1.5)  # let the first pass and its status writes settle
            server.request_log.clear()
            before_count, before_cpu = reconcile_count(port), cpu_seconds(proc.pid)
            time.sleep(window)
            reconciles = reconcile_count(port) - before_count
            cpu = cpu_seconds(proc.pid) - before_cpu
            requests = [r for r in server.request_log.records() if r.verb != "watch"]
            status = proc_status(proc.pid)
            return Sample(
                shape=shape, runners=sets * per_set, rss_mib=round(mib(status["VmRSS"]), 1),
                peak_mib=round(mib(status["VmHWM"]), 1), sync_seconds=round(sync, 2),
                reconciles=reconciles, requests=len(requests),
                cpu_ms_per_reconcile=round(1000 * cpu / max(reconciles, 1), 2),
            )  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SHAPES = (("empty", 1, 0), ("10x1000", 10, 1000), ("1x10000", 1, 10000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--window", type=float, default=5.0, help="steady-state seconds")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    samples = []
    for _ in range(args.runs):
        for shape, sets, per_set in SHAPES:
            sample = measure(shape, sets, per_set, args.window)
            print(json.dumps(asdict(sample)), flush=True)
            samples.append(sample)
    print("\nmedians per shape:")
    for shape, _, _ in SHAPES:
        rows = [s for s in samples if s.shape == shape]
        med = {k: statistics.median(getattr(s, k) for s in rows)
               for k in ("rss_mib", "peak_mib", "sync_seconds", "reconciles", "requests",
                         "cpu_ms_per_reconcile")}  # fmt: skip
        print(f"  {shape:>8}: " + ", ".join(f"{k}={v}" for k, v in med.items()))
    print(f"\ncommand: python examples/bench_controller_memory.py --runs {args.runs} "
          f"--window {args.window}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in samples], indent=2))


if __name__ == "__main__":
    main()
