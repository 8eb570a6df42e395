"""What the scale-up guard costs in job wait, at GitHub's timing (not run by CI).

    python examples/bench_guard_wait.py [--workload all] [--repeat 3] [--long-poll 50]

``bench_guard.py`` measures what the guard of ARC PR #4642 buys (runners nobody asked
for); this measures what it may cost: jobs waiting for a runner the guard held back.
Two timings of GitHub's matter, and both are on here: the service holds a long poll
about 50 s (``--long-poll``), and it sends ``JobCompleted`` when the runner reports its
job done, while the runner's Pod ends 1-2 s later (``simulation.agent.REAL_EXIT_DELAY``).
So the listener has usually published a count without the job before the controller
sees the runner finished; ARC's guard then records that patch ID and holds the freed
slot until the next patch, which on a quiet scale set is the next long poll.

Workloads (``--workload``, or ``all``):

- ``capacity``: ``maxRunners`` 2 and a burst of 12 jobs of 3-5 s: every finished runner
  frees a slot a queued job is waiting for.
- ``quiet``: one job at a time, each queued while the previous job's runner is ending.
- ``idle``: ``minRunners`` 1 and two long jobs; a runner online 5 s without a job exits
  (``Succeeded``, never assigned one), so the set has an idle slot to refill again and
  again while patch IDs are not 0. Its runners that exit count as wasted in this row
  (registered, deleted without a job): the figure to read is slot-seconds short.

Rows, each run ``--repeat`` times (interleaved), every figure the median over its runs:

1. ``ersctl``: this project's controller and listener;
2. ``ARC #4642``: the same, with the controller ignoring what the listener publishes
   about completed jobs (``simulation.baseline``): ARC's guard exactly;
3. ``pre-#4642``: step 8 in the order before the guard (``simulation.baseline``).

Figures: job wait (queued -> started) p50, p95 and max, and jobs that waited more than
10 s (at capacity most of it is queueing behind busy runners, the same in every row);
slot-seconds short (the integral over the run of replicas minus live runners, where
positive: how long the set had fewer runners than the listener asked for) and the
longest such stretch (sampled every 0.2 s: a slot refilled within a reconcile shows as
0.2 s or so); wasted runners (registered, deleted without a job); runners created; API
writes per job, then by what they were for (``simulation.trace.WRITE_KINDS``).
"""

from __future__ import annotations

import argparse
import re
import shlex
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bench_guard import baseline
from simulation.agent import REAL_EXIT_DELAY, AgentTiming
from simulation.live import LiveLine
from simulation.orchestrate import SimulationConfig, run_simulation
from simulation.report import build_report
from simulation.trace import WRITE_KINDS, Trace
from simulation.workload import Burst, Durations, WorkloadSpec

LONG_WAIT = 10.0
"""Seconds of job wait counted as long: more than any scale-up needs, less than a long poll."""


def _set(
    seed: int,
    bursts: tuple[Burst, ...],
    durations: Durations,
    *,
    min_runners: int,
    max_runners: int,
) -> SimulationConfig:
    workload = WorkloadSpec(seed=seed, rate=0.0, bursts=bursts, durations=durations)
    return SimulationConfig(workload=workload, min_runners=min_runners, max_runners=max_runners)


def capacity(seed: int) -> SimulationConfig:
    """A burst of 12 jobs of 3-5 s behind 2 runners."""
    durations = Durations(median=4.0, sigma=0.15, shortest=3.0, longest=5.0)
    return _set(seed, (Burst(at=1.0, count=12),), durations, min_runners=0, max_runners=2)


def quiet(seed: int) -> SimulationConfig:
    """6 jobs of 3 s, 5 s apart: each is queued while the previous runner is ending."""
    bursts = tuple(Burst(at=1.0 + 5.0 * i, count=1) for i in range(6))
    durations = Durations(median=3.0, sigma=0.0, shortest=3.0, longest=3.0)
    return _set(seed, bursts, durations, min_runners=0, max_runners=3)


def idle(seed: int) -> SimulationConfig:
    """``minRunners`` 1 and two 40 s jobs 29 s apart, so patch IDs are not 0 while idle
    runners exit (:func:`at_github_timing` makes them exit after 5 s)."""
    bursts = (Burst(at=1.0, count=1), Burst(at=30.0, count=1))
    durations = Durations(median=40.0, sigma=0.0, shortest=40.0, longest=40.0)
    return _set(seed, bursts, durations, min_runners=1, max_runners=3)


WORKLOADS: dict[str, Callable[[int], SimulationConfig]] = {
    "capacity": capacity,
    "quiet": quiet,
    "idle": idle,
}


def at_github_timing(config: SimulationConfig, *, long_poll: float, seed: int) -> SimulationConfig:
    idle_exit = 5.0 if config.min_runners else None
    return replace(
        config,
        timing=AgentTiming(
            registration_delay=0.3,
            startup_delay=0.3,
            exit_delay=REAL_EXIT_DELAY,
            idle_exit=idle_exit,
            seed=seed,
        ),
        long_poll=long_poll,
        # ARC's guard can hold each freed slot for a long poll: let such a run finish.
        drain_timeout=12 * long_poll,
    )


def rows(config: SimulationConfig) -> list[SimulationConfig]:
    arc = baseline(config, label="ARC #4642", reconciler="arc-4642")
    return [replace(config, label="ersctl"), arc, baseline(config)]


@dataclass(frozen=True, kw_only=True)
class Figures:
    """One run's figures (see the module docstring)."""

    wait_p50: float | None
    wait_p95: float | None
    wait_max: float | None
    long_waits: int
    short: float
    longest_short: float
    wasted: int
    created: int
    writes_per_job: float | None
    jobs_lost: int
    writes_by_kind: dict[str, float]
    """API writes per completed job by what they were for (``simulation.trace.WRITE_KINDS``)."""


def figures(trace: Trace) -> Figures:
    report = build_report(trace)
    waits = [job.wait for job in trace.jobs if job.wait is not None]
    return Figures(
        wait_p50=report.wait_p50,
        wait_p95=report.wait_p95,
        wait_max=report.wait_max,
        long_waits=sum(1 for wait in waits if wait > LONG_WAIT),
        short=round(slot_seconds_short(trace), 1),
        longest_short=round(longest_shortfall(trace), 1),
        wasted=report.wasted_runners,
        created=report.runners_created,
        writes_per_job=report.writes_per_job,
        jobs_lost=report.jobs_lost,
        writes_by_kind={
            kind: round(count / max(report.jobs_completed, 1), 2)
            for kind, count in report.writes_by_kind
        },
    )


def slot_seconds_short(trace: Trace) -> float:
    """The integral of max(0, replicas - live runners) over the run, live meaning pending
    or running (finished and deleting runners serve no job)."""
    total = 0.0
    for sample, following in zip(trace.samples, trace.samples[1:], strict=False):
        short = sample.replicas - (sample.pending + sample.running)
        total += max(0, short) * (following.at - sample.at)
    return total


def longest_shortfall(trace: Trace) -> float:
    """The longest the set stayed without a runner the listener asked for: from the first
    sample with fewer live runners than replicas to the next sample without (a freed slot
    refilled within a reconcile shows as one sample interval or less)."""
    longest, since = 0.0, None
    for sample in trace.samples:
        short = sample.replicas > sample.pending + sample.running
        if short and since is None:
            since = sample.at
        elif not short and since is not None:
            longest, since = max(longest, sample.at - since), None
    return longest


SHOWN = (
    ("job wait p50 (s)", "wait_p50"),
    ("job wait p95 (s)", "wait_p95"),
    ("job wait max (s)", "wait_max"),
    (f"jobs waiting > {LONG_WAIT:g} s", "long_waits"),
    ("slot-seconds short", "short"),
    ("longest short (s)", "longest_short"),
    ("wasted runners", "wasted"),
    ("runners created", "created"),
    ("API writes per job", "writes_per_job"),
)


def format_table(name: str, labels: Sequence[str], runs: dict[str, list[Figures]]) -> str:
    lines = [f"{name:24}" + "".join(f"{label:>14}" for label in labels)]
    for title, attr in SHOWN:
        cells = [_median([getattr(f, attr) for f in runs[label]]) for label in labels]
        lines.append(f"{title:24}" + "".join(f"{cell:>14}" for cell in cells))
    for kind in WRITE_KINDS:
        per_run = {
            label: [f.writes_by_kind.get(kind, 0.0) for f in runs[label]] for label in labels
        }
        if any(any(values) for values in per_run.values()):
            cells = [_median(list(per_run[label])) for label in labels]
            lines.append(f"{'  ' + kind:24}" + "".join(f"{cell:>14}" for cell in cells))
    return "\n".join(lines)


def _median(values: list[float | int | None]) -> str:
    present = [v for v in values if v is not None]
    return "-" if not present else f"{statistics.median(present):g}"


def run_one(config: SimulationConfig, workdir: Path, quiet_run: bool) -> Figures:
    name = re.sub(r"[^A-Za-z0-9]+", "-", config.label).strip("-")
    trace = run_simulation(config, workdir=workdir / name, live=LiveLine(enabled=not quiet_run))
    result = figures(trace)
    shown = {k: v for k, v in vars(result).items() if k != "writes_by_kind"}
    print(f"  {config.label}: {shown}", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench_guard_wait.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--workload",
        choices=[*WORKLOADS, "all"],
        default="all",
        help="the row to run (all: every one)",
    )
    parser.add_argument("--seed", type=int, default=42, help="workload random seed")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (medians)")
    parser.add_argument("--long-poll", type=float, default=50.0, help="seconds GitHub holds a poll")
    parser.add_argument("--workdir", metavar="DIR", help="logs (default: a temp dir)")
    parser.add_argument("--quiet", action="store_true", help="no live progress")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gha-bench-wait-"))
    names = list(WORKLOADS) if args.workload == "all" else [args.workload]
    tables = []
    all_ok = True
    for name in names:
        config = at_github_timing(
            WORKLOADS[name](args.seed), long_poll=args.long_poll, seed=args.seed
        )
        configs = rows(config)
        runs: dict[str, list[Figures]] = {c.label: [] for c in configs}
        for run in range(args.repeat):
            print(f"{name}, run {run + 1} of {args.repeat}", flush=True)
            for row in configs:
                result = run_one(row, workdir / name / f"run{run}", args.quiet)
                runs[row.label].append(result)
                all_ok = all_ok and result.jobs_lost == 0
        tables.append(format_table(name, [c.label for c in configs], runs))
    print()
    print(
        f"medians over {args.repeat} run(s) per row; long poll {args.long_poll:g} s; "
        f"runner Pods end {REAL_EXIT_DELAY[0]:g}-{REAL_EXIT_DELAY[1]:g} s after their job"
    )
    print("\n\n".join(tables))
    print(f"seed {args.seed}; logs: {workdir}")
    print("command: python " + shlex.join(["examples/bench_guard_wait.py", *sys.argv[1:]]))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
