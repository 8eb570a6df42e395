"""How long ``ersctl reconcile`` takes to stop, under CPU load (not run by CI).

    python examples/bench_stop.py [--runs 15] [--runners 200] [--burners 2]

Serves the embedded API server in this process with one EphemeralRunnerSet and
``--runners`` runners (the informers' lists and watches carry them), starts ``--burners``
processes that spin on the CPU, then measures, ``--runs`` times each:

- ``--once``: the wall time of ``ersctl reconcile --once NS/NAME`` (start-up, cache
  sync, one reconcile, stop), and its stop alone: from its log record of the reconcile
  to its exit;
- ``SIGTERM``: the time from SIGTERM to exit of a running ``ersctl reconcile`` whose
  caches have synced (``/readyz`` answers 200), and to its ``stopped`` log record.

It prints the median, the 90th percentile and the maximum of each, and the command.
A stop that leaves a watch open shows as an outlier near the 10 s informer join.
Python's own start-up under the burners' load is most of the ``--once`` wall time.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

from ersctl.api import ER_PLURAL, ERS_PLURAL
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.ports import unused_port

NAMESPACE = "bench"


def burn() -> None:
    while True:
        pass


def populate(server: ApiServer, runners: int) -> None:
    server.create_object("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": NAMESPACE}})  # fmt: skip
    ers = server.create_object(ERS_PLURAL, {
        "apiVersion": "actions.github.com/v1alpha1", "kind": "EphemeralRunnerSet",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {"replicas": runners, "patchID": 1, "ephemeralRunnerSpec": {
            "githubConfigUrl": "https://github.com/octo-org", "githubConfigSecret": "gh",
            "runnerScaleSetId": 1,
            "spec": {"containers": [{"name": "runner", "image": "runner"}]}}},
    })  # fmt: skip
    owner = {"apiVersion": "actions.github.com/v1alpha1", "kind": "EphemeralRunnerSet",
             "name": "web", "uid": ers["metadata"]["uid"], "controller": True}  # fmt: skip
    for i in range(runners):
        server.create_object(ER_PLURAL, {
            "apiVersion": "actions.github.com/v1alpha1", "kind": "EphemeralRunner",
            "metadata": {"name": f"web-runner-{i:05d}", "namespace": NAMESPACE,
                         "annotations": {"actions.github.com/patch-id": "1"},
                         "ownerReferences": [owner]},
            "spec": ers["spec"]["ephemeralRunnerSpec"],
        })  # fmt: skip


def ersctl(*args: str) -> list[str]:
    return [sys.executable, "-m", "ersctl", "reconcile", *args]


def log_time(stderr: str, text: str) -> float:
    """The wall-clock time of the last JSON log record whose message starts with ``text``."""
    times = [
        datetime.fromisoformat(record["time"]).timestamp()
        for record in (json.loads(line) for line in stderr.splitlines() if line.startswith("{"))
        if str(record.get("msg", "")).startswith(text)
    ]
    if not times:
        raise RuntimeError(f"no log record {text!r}")
    return times[-1]


def time_once(kubeconfig: str) -> tuple[float, float]:
    """(wall time, stop time) of one ``--once`` run."""
    started = time.monotonic()
    done = subprocess.run(
        ersctl("--once", f"{NAMESPACE}/web", "--kubeconfig", kubeconfig, *LOGS),
        check=True,
        capture_output=True,
        text=True,
    )
    ended = time.time()
    return time.monotonic() - started, ended - log_time(done.stderr, "reconciled")


def time_sigterm(kubeconfig: str) -> tuple[float, float]:
    """(SIGTERM to exit, SIGTERM to the ``stopped`` record) of one run."""
    port = unused_port()
    args = ("--kubeconfig", kubeconfig, "--namespace", NAMESPACE, "--no-leader-elect",
            "--metrics-addr", f"127.0.0.1:{port}")  # fmt: skip
    proc = subprocess.Popen(
        # Info only: nobody reads the pipe until the stop, so it must not fill up.
        ersctl(*args, "--log-format", "json"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready(port):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("ersctl reconcile did not become ready")
            time.sleep(0.05)
        time.sleep(0.5)  # let the watches open (the race the stop must win)
        started, signalled = time.monotonic(), time.time()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        return time.monotonic() - started, log_time(stderr, "stopped") - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


LOGS = ("--log-format", "json", "--log-level", "debug")  # the reconcile's record is debug


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def summary(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (
        f"{name:8} runs={len(samples):3}  median={statistics.median(samples):6.2f}s  "
        f"p90={p90:6.2f}s  max={ordered[-1]:6.2f}s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="stops measured of each kind")
    parser.add_argument(
        "--runners", type=int, default=200, help="runners of the set the caches hold"
    )
    parser.add_argument(
        "--burners", type=int, default=2, help="processes spinning on the CPU meanwhile"
    )
    args = parser.parse_args(argv)
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    with ApiServer() as server, tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(server.write_kubeconfig(Path(tmp) / "kubeconfig"))
        populate(server, args.runners)
        for burner in burners:
            burner.start()
        try:
            once = [time_once(kubeconfig) for _ in range(args.runs)]
            term = [time_sigterm(kubeconfig) for _ in range(args.runs)]
        finally:
            for burner in burners:
                burner.kill()
    print(summary("--once", [wall for wall, _ in once]))
    print(summary("  stop", [stop for _, stop in once]), "(reconciled -> exit)")
    print(summary("SIGTERM", [wall for wall, _ in term]), "(signal -> exit)")
    print(summary("  stop", [stop for _, stop in term]), "(signal -> 'stopped')")
    print("command:", shlex.join([sys.executable, *sys.argv]), f"(cpus: {os.cpu_count()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
