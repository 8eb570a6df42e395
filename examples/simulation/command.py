"""What ``examples/simulate.py`` does with checked options: run, report, write the outputs.

Imports the servers and the programs' packages, so ``simulate.py`` imports it only once
the options are known to be good (``simulation.options``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from ersctl.platform.cli import fail
from ersctl.platform.errors import Failure
from simulation.agent import AgentTiming
from simulation.live import LiveLine
from simulation.options import PROG
from simulation.orchestrate import SimulationConfig, run_simulation
from simulation.plot import render_svg
from simulation.processes import ProgramExited
from simulation.report import build_report, format_report, write_json
from simulation.workload import Burst, Durations, WorkloadSpec


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
            registration_delay=args.registration_delay,
            startup_delay=args.startup_delay,
            exit_delay=args.runner_exit_delay,
            seed=args.seed,
        ),
        label="ersctl" + (" --faults" if args.faults else ""),
        min_runners=args.min_runners,
        max_runners=args.max_runners,
        faults=args.faults,
        long_poll=args.long_poll,
        runner_controller=args.runner_controller,
        autoscaling=not args.without_ars,
        drain_timeout=args.drain_timeout,
        kubeconfig=Path(args.kubeconfig) if args.kubeconfig else None,
    )


def run(args: argparse.Namespace) -> int:
    """Run once and report: 0 when the run passed, 1 when not (see ``simulate.py``)."""
    config = config_from(args)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gha-simulate-"))
    live = LiveLine(enabled=not args.quiet)
    try:
        trace = run_simulation(config, workdir=workdir, live=live)
    except ProgramExited as exc:
        fail(PROG, str(exc))
    except Failure as exc:  # an existing cluster that cannot be used
        fail(PROG, str(exc), exc.exit_code)
    report = build_report(trace)
    print(format_report(report))
    print(f"logs: {workdir}")
    try:
        if args.json:
            write_json([report], args.json)
        if args.plot:
            Path(args.plot).write_text(render_svg(trace), encoding="utf-8")
    except OSError as exc:  # checked before the run; gone or full since
        fail(PROG, f"cannot write {exc.filename}: {exc.strerror}")
    passed = report.ok and (args.faults or report.back_at_min)
    return 0 if passed else 1
