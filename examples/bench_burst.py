"""What a burst of jobs costs end to end, measured (not run by CI).

    python examples/bench_burst.py [--sizes 100 500 2000] [--repeat 3]

For each size N: N jobs arrive at once at the GitHub simulator (served over HTTP), and
the real programs take them from there as subprocesses against the embedded API server:
``ghalistener run`` (long poll, acquire, ERS patch) and ``ersctl reconcile
--runner-controller`` (the set controller creates N EphemeralRunners, the runner
controller registers each with the simulator, stores its JIT config in a Secret and
creates its Pod). No kubelet runs: a Pod that exists is the end of the line.

Per run: seconds from the jobs' arrival until all N runner Pods exist; API requests
(and writes) per runner, all programs together, watches excluded. Each size runs twice
per repeat, interleaved: ``ersctl`` as it ships and ``serial``, the same command with a
runner creation concurrency of 1 end to end: the set controller creates its runners one
after another (``simulation.serial``) and the runner controller registers them and
makes their Pods one at a time (``--runner-max-concurrent-reconciles 1``). It prints
the medians side by side with the serial/ersctl ratio, how the time grows with N, and
the command.

Latency: on a real cluster every API request is a network round trip and every GitHub
call (above all a runner's JIT config) takes a good part of a second, which is what a
concurrency of 1 makes users wait for. ``--api-latency`` delays every request the
embedded API server serves (watch events are not delayed) and ``--github-latency``
every call to the simulated GitHub service (the long poll included). The defaults are
assumptions, not measurements: 5 ms per API request (a round trip within a cloud
region plus the API server's own work) and 150 ms per GitHub call (the middle of the
100-300 ms such calls take from a cluster). ``--api-latency 0 --github-latency 0``
measures the CPU-bound case.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from simulation.cluster import ERS_NAME, NAMESPACE, create_objects
from simulation.github_side import GitHubSide
from simulation.processes import Program
from simulation.trace import WRITE_VERBS

from ersctl.api import ERS_FINALIZER, ERS_PLURAL, EphemeralRunnerSet
from ersctl.testing.apiserver import ApiServer

EXAMPLES = Path(__file__).resolve().parent
ROWS = {
    "ersctl": ("ersctl", "reconcile"),
    "serial": ("simulation.serial", "reconcile", "--runner-max-concurrent-reconciles", "1"),
}
API_LATENCY = 0.005
GITHUB_LATENCY = 0.150


@dataclass(frozen=True)
class Latency:
    """Seconds added to every API request and to every GitHub call."""

    api: float = API_LATENCY
    github: float = GITHUB_LATENCY


@dataclass(frozen=True)
class Burst:
    row: str
    size: int
    seconds: float
    requests_per_runner: float
    writes_per_runner: float


def listener_config(github: GitHubSide, size: int, path: Path) -> Path:
    config = {
        "configure_url": github.config_url,
        "github_token": github.token,
        "ephemeral_runner_set_namespace": NAMESPACE,
        "ephemeral_runner_set_name": ERS_NAME,
        "runner_scale_set_id": github.scale_set_id,
        "min_runners": 0,
        "max_runners": size,
        "log_level": "info",
        "log_format": "text",
    }
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


def programs(
    row: str, github: GitHubSide, size: int, kubeconfig: Path, workdir: Path
) -> list[Program]:
    listener = Program(
        name="ghalistener",
        log_path=workdir / "ghalistener.log",
        args=[
            "ghalistener",
            "run",
            "--config",
            str(listener_config(github, size, workdir / "listener.json")),
            "--kubeconfig",
            str(kubeconfig),
        ],
    )
    controller = Program(
        name="controller",
        log_path=workdir / "controller.log",
        args=[
            *ROWS[row],
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            NAMESPACE,
            "--no-leader-elect",
            "--metrics-addr",
            "0",
            "--runner-controller",
        ],
        env={"PYTHONPATH": str(EXAMPLES)},
    )
    return [controller, listener]


def wait_until(
    check: Callable[[], bool], *, timeout: float, what: str, running: list[Program]
) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        for program in running:
            program.check_alive()
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.1)


def pods_created(api: ApiServer) -> int:
    """Runner Pods the API server created, from its request log: listing the Pods
    instead would decode every one of them on every poll, in the process that serves
    the API (the runner controller benchmark's own polling was its largest cost)."""
    return sum(
        1
        for r in api.request_log.records()
        if r.verb == "create" and r.resource == "pods" and r.status == 201
    )


def one_burst(row: str, size: int, workdir: Path, latency: Latency) -> Burst:
    workdir.mkdir(parents=True, exist_ok=True)
    with ApiServer() as api, GitHubSide(long_poll=1.0) as github:
        create_objects(
            api, config_url=github.config_url, token=github.token, scale_set_id=github.scale_set_id
        )
        if latency.api > 0:
            api.inject_fault(latency=latency.api, times=-1)
        if latency.github > 0:
            github.sim.inject_fault(latency=latency.github, times=-1)
        kubeconfig = api.write_kubeconfig(workdir / "kubeconfig")
        running = programs(row, github, size, kubeconfig, workdir)
        for program in running:
            program.start()
        try:

            def ready() -> bool:
                ers = EphemeralRunnerSet(api.get_object(ERS_PLURAL, NAMESPACE, ERS_NAME) or {})
                return ers.has_finalizer(ERS_FINALIZER) and github.has_session()

            wait_until(ready, timeout=120, what="the programs ready", running=running)
            api.request_log.clear()
            started = time.monotonic()
            github.sim.enqueue_jobs(github.scale_set_id, size)
            wait_until(
                lambda: pods_created(api) >= size,
                timeout=1800,
                what=f"{size} runner Pods",
                running=running,
            )
            seconds = time.monotonic() - started
            records = [r for r in api.request_log.records() if r.verb and r.verb != "watch"]
        finally:
            for program in reversed(running):
                program.stop()
    writes = sum(1 for r in records if r.verb in WRITE_VERBS)
    return Burst(row, size, seconds, len(records) / size, writes / size)


def median(bursts: list[Burst], attr: str) -> float:
    return float(statistics.median(getattr(b, attr) for b in bursts))


def report(results: list[Burst], sizes: list[int]) -> str:
    lines = [
        f"{'N':>6}{'ersctl s':>12}{'serial s':>12}{'serial/ersctl':>15}"
        f"{'requests/runner':>17}{'writes/runner':>15}"
    ]
    for size in sizes:
        ours = [b for b in results if b.size == size and b.row == "ersctl"]
        serial = [b for b in results if b.size == size and b.row == "serial"]
        a, b = median(ours, "seconds"), median(serial, "seconds")
        lines.append(
            f"{size:>6}{a:>12.2f}{b:>12.2f}{b / a:>14.2f}x"
            f"{median(ours, 'requests_per_runner'):>17.2f}{median(ours, 'writes_per_runner'):>15.2f}"
        )
    first = sizes[0]
    base = median([b for b in results if b.size == first and b.row == "ersctl"], "seconds")
    growth = ", ".join(
        f"N={size}: {median([b for b in results if b.size == size and b.row == 'ersctl'], 'seconds') / base:.1f}x"
        f" the time for {size / first:g}x the runners"
        for size in sizes[1:]
    )
    if growth:
        lines.append(f"growth against N={first} (ersctl): {growth}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_burst.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 2000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per row and size (medians)")
    parser.add_argument("--workdir", metavar="DIR", help="logs (default: a temp dir)")
    parser.add_argument(
        "--api-latency",
        type=float,
        default=API_LATENCY,
        metavar="SECONDS",
        help="added to every API request (default: %(default)s)",
    )
    parser.add_argument(
        "--github-latency",
        type=float,
        default=GITHUB_LATENCY,
        metavar="SECONDS",
        help="added to every GitHub call (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    latency = Latency(api=args.api_latency, github=args.github_latency)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gha-burst-"))
    results: list[Burst] = []
    for size in args.sizes:
        for run in range(args.repeat):
            for row in ROWS:
                burst = one_burst(row, size, workdir / f"n{size}-run{run}-{row}", latency)
                results.append(burst)
                print(
                    f"{row:>7} N={size}: all Pods after {burst.seconds:.2f} s, "
                    f"{burst.requests_per_runner:.2f} requests and "
                    f"{burst.writes_per_runner:.2f} writes per runner",
                    flush=True,
                )
    print()
    print(
        f"medians over {args.repeat} runs per row and size; latency per API request "
        f"{latency.api * 1000:g} ms, per GitHub call {latency.github * 1000:g} ms"
    )
    print(report(results, args.sizes))
    print(f"logs: {workdir}")
    print("command: python " + shlex.join(["examples/bench_burst.py", *sys.argv[1:]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
