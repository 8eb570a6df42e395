"""The whole system end to end, with no GitHub account and no cluster.

    python examples/simulate.py [--faults] [--runner-controller] [--json report.json]
                                [--plot timeline.svg]

Starts an embedded Kubernetes API server and the GitHub simulator's HTTP server in
this process, runs the real ``ghalistener run`` and ``ersctl reconcile`` as
subprocesses, and a runner agent that plays the cluster and the runner binary
(registration via JIT config, Pending -> Running -> Succeeded, one job per runner).
A seeded workload queues jobs; the terminal shows live progress, then a report:
jobs completed, runners created, wasted runners, peak runners against peak demand,
job wait p50/p95/max, API requests and writes per job, and whether the set returned
to min_runners. ``--faults`` adds GitHub 5xx bursts and token expiry, API server
409s and latency, and a listener and a controller restart mid-run. With
``--runner-controller``, ``ersctl reconcile --runner-controller`` registers the runners
and runs their Pods itself, and the agent only plays the kubelet and the runner binary.

Exit code 0 when every job completed and no runner was deleted while running one
(and, without ``--faults``, the set is back at min_runners); 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from simulation.agent import AgentTiming
from simulation.live import LiveLine
from simulation.orchestrate import SimulationConfig, run_simulation
from simulation.plot import render_svg
from simulation.processes import ProgramExited
from simulation.report import build_report, format_report, write_json
from simulation.workload import Burst, Durations, WorkloadSpec


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="simulate.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    workload = parser.add_argument_group("workload")
    workload.add_argument("--seed", type=int, default=7, help="workload random seed")
    workload.add_argument("--rate", type=float, default=0.6, help="job arrivals per second")
    workload.add_argument("--window", type=float, default=20.0, help="seconds of arrivals")
    workload.add_argument(
        "--burst",
        action="append",
        type=_burst,
        default=argparse.SUPPRESS,
        metavar="AT:COUNT",
        help="COUNT jobs at once at AT s (repeatable; 6:8 when none is given)",
    )
    workload.add_argument("--job-median", type=float, default=3.0, help="median job seconds")
    workload.add_argument("--job-max", type=float, default=10.0, help="longest job seconds")
    system = parser.add_argument_group("system")
    system.add_argument("--min-runners", type=int, default=0, help="listener min_runners")
    system.add_argument("--max-runners", type=int, default=30, help="listener max_runners")
    system.add_argument(
        "--registration-delay", type=float, default=0.3, help="ER seen -> runner registered (s)"
    )
    system.add_argument(
        "--startup-delay",
        type=float,
        default=0.3,
        help="registered -> online and asking for a job (s)",
    )
    system.add_argument(
        "--long-poll",
        type=float,
        default=1.0,
        help="seconds the service holds a long poll before 202",
    )
    system.add_argument(
        "--drain-timeout",
        type=float,
        default=30.0,
        help="seconds after the last job could finish before giving up",
    )
    system.add_argument("--faults", action="store_true", help="inject the fault schedule")
    system.add_argument(
        "--runner-controller",
        action="store_true",
        help="let ersctl's EphemeralRunner controller register runners and run their Pods; "
        "the agent then only plays the kubelet and the runner binary",
    )
    output = parser.add_argument_group("output")
    output.add_argument("--json", metavar="PATH", help="write the report as JSON")
    output.add_argument("--plot", metavar="PATH", help="write an SVG timeline")
    output.add_argument("--workdir", metavar="DIR", help="logs and configs (default: a temp dir)")
    output.add_argument("--quiet", action="store_true", help="no live progress")
    return parser.parse_args(argv)


def _burst(text: str) -> Burst:
    try:
        return Burst.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def config_from(args: argparse.Namespace) -> SimulationConfig:
    bursts = tuple(getattr(args, "burst", ())) or (Burst(at=6.0, count=8),)
    workload = WorkloadSpec(
        seed=args.seed,
        rate=args.rate,
        window=args.window,
        bursts=bursts,
        durations=Durations(median=args.job_median, longest=args.job_max),
    )
    return SimulationConfig(
        workload=workload,
        timing=AgentTiming(
            registration_delay=args.registration_delay, startup_delay=args.startup_delay
        ),
        label="ersctl" + (" --faults" if args.faults else ""),
        min_runners=args.min_runners,
        max_runners=args.max_runners,
        faults=args.faults,
        long_poll=args.long_poll,
        runner_controller=args.runner_controller,
        drain_timeout=args.drain_timeout,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = config_from(args)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gha-simulate-"))
    live = LiveLine(enabled=not args.quiet)
    try:
        trace = run_simulation(config, workdir=workdir, live=live)
    except ProgramExited as exc:
        print(f"simulate.py: {exc}", file=sys.stderr)
        return 1
    report = build_report(trace)
    print(format_report(report))
    print(f"logs: {workdir}")
    if args.json:
        write_json([report], args.json)
    if args.plot:
        Path(args.plot).write_text(render_svg(trace), encoding="utf-8")
    passed = report.ok and (args.faults or report.back_at_min)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
