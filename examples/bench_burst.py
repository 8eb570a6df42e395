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

Also per run: the controller's CPU seconds during the burst (/proc). ``--profile PATH``
runs the controller of the first ``ersctl`` run under a sampling profiler
(``simulation.sampler``) from the jobs' arrival until the last Pod, and writes its
hottest functions to PATH.
"""

from __future__ import annotations

import argparse
import math
import shlex
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from simulation.cluster import ERS_NAME, NAMESPACE, create_objects, write_listener_config
from simulation.github_side import GitHubSide
from simulation.processes import Program
from simulation.procstat import cpu_seconds
from simulation.sampler import request_report
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
    controller_cpu: float
    """CPU seconds the controller process used from the jobs' arrival to the last Pod."""


def programs(
    row: str, github: GitHubSide, size: int, kubeconfig: Path, workdir: Path, profile: Path | None
) -> list[Program]:
    listener = Program(
        name="ghalistener",
        log_path=workdir / "ghalistener.log",
        args=[
            "ghalistener",
            "run",
            "--config",
            str(
                write_listener_config(
                    workdir / "listener.json",
                    config_url=github.config_url,
                    token=github.token,
                    scale_set_id=github.scale_set_id,
                    min_runners=0,
                    max_runners=size,
                )
            ),
            "--kubeconfig",
            str(kubeconfig),
        ],
    )
    controller = Program(
        name="controller",
        log_path=workdir / "controller.log",
        args=[
            *(("simulation.sampler", str(profile)) if profile else ()),
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


def one_burst(
    row: str, size: int, workdir: Path, latency: Latency, profile: Path | None = None
) -> Burst:
    workdir.mkdir(parents=True, exist_ok=True)
    with ApiServer() as api, GitHubSide(long_poll=1.0) as github:
        create_objects(
            api, config_url=github.config_url, token=github.token, scale_set_id=github.scale_set_id
        )
        if profile:
            profile.unlink(missing_ok=True)
        if latency.api > 0:
            api.inject_fault(latency=latency.api, times=-1)
        if latency.github > 0:
            github.sim.inject_fault(latency=latency.github, times=-1)
        kubeconfig = api.write_kubeconfig(workdir / "kubeconfig")
        running = programs(row, github, size, kubeconfig, workdir, profile)
        controller = running[0]
        for program in running:
            program.start()
        try:

            def ready() -> bool:
                ers = EphemeralRunnerSet(api.get_object(ERS_PLURAL, NAMESPACE, ERS_NAME) or {})
                return ers.has_finalizer(ERS_FINALIZER) and github.has_session()

            wait_until(ready, timeout=120, what="the programs ready", running=running)
            api.request_log.clear()
            if profile:
                controller.send_signal(signal.SIGUSR1)  # the sampler counts from here
            assert controller.pid is not None
            cpu_before = cpu_seconds(controller.pid)
            started = time.monotonic()
            github.sim.enqueue_jobs(github.scale_set_id, size)
            wait_until(
                lambda: pods_created(api) >= size,
                timeout=1800,
                what=f"{size} runner Pods",
                running=running,
            )
            seconds = time.monotonic() - started
            cpu = cpu_seconds(controller.pid) - cpu_before
            if profile:
                request_report(controller, profile)
            records = [r for r in api.request_log.records() if r.verb and r.verb != "watch"]
        finally:
            for program in reversed(running):
                program.stop()
    writes = sum(1 for r in records if r.verb in WRITE_VERBS)
    return Burst(row, size, seconds, len(records) / size, writes / size, cpu)


def median(bursts: list[Burst], attr: str) -> float:
    """The median of ``attr`` over ``bursts``; NaN when there are none (a row not run)."""
    if not bursts:
        return math.nan
    return float(statistics.median(getattr(b, attr) for b in bursts))


def report(results: list[Burst], sizes: list[int]) -> str:
    def med(row: str, size: int, attr: str) -> float:
        return median([b for b in results if b.size == size and b.row == row], attr)

    lines = [
        f"{'N':>6}{'ersctl s':>12}{'serial s':>12}{'serial/ersctl':>15}"
        f"{'requests/runner':>17}{'writes/runner':>15}{'ctl CPU ms/runner':>19}"
    ]
    for size in sizes:
        ours, serial = med("ersctl", size, "seconds"), med("serial", size, "seconds")
        lines.append(
            f"{size:>6}{ours:>12.2f}{serial:>12.2f}{serial / ours:>14.2f}x"
            f"{med('ersctl', size, 'requests_per_runner'):>17.2f}"
            f"{med('ersctl', size, 'writes_per_runner'):>15.2f}"
            f"{1000 * med('ersctl', size, 'controller_cpu') / size:>19.2f}"
        )
    first = sizes[0]
    for row in ROWS:
        base = med(row, first, "seconds")
        growth = ", ".join(
            f"N={size}: {med(row, size, 'seconds') / base:.1f}x the time for "
            f"{size / first:g}x the runners"
            for size in sizes[1:]
        )
        if growth and not math.isnan(base):
            lines.append(f"growth against N={first} ({row}): {growth}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_burst.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[100, 500, 2000],
        help="jobs per burst, one row each",
    )
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
    parser.add_argument("--profile", type=Path, metavar="PATH", help="see the docstring")
    parser.add_argument(
        "--rows", nargs="+", choices=list(ROWS), default=list(ROWS), help="rows to run"
    )
    args = parser.parse_args(argv)
    latency = Latency(api=args.api_latency, github=args.github_latency)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gha-burst-"))
    results: list[Burst] = []
    for size in args.sizes:
        for run in range(args.repeat):
            for row in args.rows:
                profile = args.profile if (size, run, row) == (args.sizes[0], 0, "ersctl") else None
                burst = one_burst(row, size, workdir / f"n{size}-run{run}-{row}", latency, profile)
                results.append(burst)
                print(
                    f"{row:>7} N={size}: all Pods after {burst.seconds:.2f} s, "
                    f"{burst.requests_per_runner:.2f} requests and "
                    f"{burst.writes_per_runner:.2f} writes per runner, controller CPU "
                    f"{burst.controller_cpu:.2f} s" + (" [profiled]" if profile else ""),
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
