"""What the scale-up guard of ARC PR #4642 buys, measured (not run by CI).

    python examples/bench_guard.py [--seed 42] [--repeat 3] [--json bench.json]

Runs one fixed-seed workload with churn (waves of short jobs with quiet gaps, so
runners finish while the listener keeps publishing fresh patch IDs, and each gap
brings the set back to its minimum) through the full simulation of
``examples/simulate.py``, once per row (``--repeat`` times, interleaved):

1. ``ersctl``: this project's controller, ``python -m ersctl reconcile``;
2. ``pre-#4642``: the same command with step 8 in the old order
   (``simulation.baseline``: finished runners cleaned up in the same pass as the
   scaling comparison, deleting runners not counted, no marker).

Job messages reach the listener ``--message-latency`` seconds late (0.3 by default;
GitHub's message service is remote), which widens the race the guard closes: a
runner turns Succeeded before the listener has published a count without its job.

It prints each run's report (and leaves its SVG timeline next to its logs), then both rows side by side (medians over the repeats)
with the baseline/ours ratio of wasted runners, job wait p95 and API writes per job,
then the writes per job broken down by what they were for (runner creates and deletes,
set status, the guard's marker, Events, the listener's patches, finalizers, the runner
controller's writes), the seed and the command.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from simulation.agent import AgentTiming
from simulation.baseline import RECONCILER_ENV
from simulation.live import LiveLine
from simulation.orchestrate import SimulationConfig, run_simulation
from simulation.plot import render_svg
from simulation.report import (
    Report,
    build_report,
    format_comparison,
    format_report,
    format_write_kinds,
    write_json,
)
from simulation.workload import Burst, Durations, WorkloadSpec

EXAMPLES = Path(__file__).resolve().parent


def churn(seed: int, waves: int) -> SimulationConfig:
    """Waves of short jobs with quiet gaps: every completion races the listener's next
    patch, and each gap lets the set fall back to its minimum (patch ID 0), where
    runners nobody asked for are scaled down unused."""
    bursts = tuple(Burst(at=0.5 + 8.0 * i, count=8) for i in range(waves))
    workload = WorkloadSpec(
        seed=seed,
        rate=0.2,
        window=8.0 * waves,
        bursts=bursts,
        durations=Durations(median=1.5, sigma=0.6, shortest=0.3, longest=4.0),
    )
    return SimulationConfig(
        workload=workload,
        timing=AgentTiming(registration_delay=0.2, startup_delay=0.2),
        min_runners=0,
        max_runners=40,
        long_poll=1.0,
        message_latency=0.3,
        drain_timeout=30.0,
    )


def baseline(
    config: SimulationConfig, *, label: str = "pre-#4642", reconciler: str = "pre-4642"
) -> SimulationConfig:
    """``config`` with a controller of ``simulation.baseline`` (``reconciler``: one of
    its ``DECISIONS``)."""
    pythonpath = os.pathsep.join(p for p in (str(EXAMPLES), os.environ.get("PYTHONPATH")) if p)
    return replace(
        config,
        label=label,
        controller=("simulation.baseline", "reconcile"),
        controller_env={"PYTHONPATH": pythonpath, RECONCILER_ENV: reconciler},
    )


def run_one(config: SimulationConfig, workdir: Path, quiet: bool) -> Report:
    name = re.sub(r"[^A-Za-z0-9]+", "-", config.label).strip("-")
    trace = run_simulation(config, workdir=workdir / name, live=LiveLine(enabled=not quiet))
    (workdir / name / "timeline.svg").write_text(render_svg(trace), encoding="utf-8")
    report = build_report(trace)
    print(format_report(report), flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_guard.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=42, help="workload random seed")
    parser.add_argument("--waves", type=int, default=3, help="bursts of jobs, 8 s apart")
    parser.add_argument(
        "--message-latency", type=float, default=0.3, help="seconds before each long poll"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per row (medians)")
    parser.add_argument("--json", metavar="PATH", help="write every report as JSON")
    parser.add_argument("--workdir", metavar="DIR", help="logs (default: a temp dir)")
    parser.add_argument("--quiet", action="store_true", help="no live progress")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gha-bench-"))
    ours_config = replace(
        churn(args.seed, args.waves), label="ersctl", message_latency=args.message_latency
    )
    ours: list[Report] = []
    base: list[Report] = []
    for run in range(args.repeat):
        ours.append(run_one(ours_config, workdir / f"run{run}", args.quiet))
        base.append(run_one(baseline(ours_config), workdir / f"run{run}", args.quiet))
    print()
    if args.repeat > 1:
        print(f"medians over {args.repeat} runs per row")
    print(format_comparison(ours, base))
    print(format_write_kinds(ours, base))
    print(f"seed {args.seed}; {ours[0].jobs_queued} jobs; logs: {workdir}")
    print("command: python " + shlex.join(["examples/bench_guard.py", *sys.argv[1:]]))
    if args.json:
        write_json([*ours, *base], args.json)
    return 0 if all(r.ok for r in ours) and all(r.jobs_lost == 0 for r in base) else 1


if __name__ == "__main__":
    sys.exit(main())
