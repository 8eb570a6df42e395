"""What ``examples/soak.py`` does with good options: configure, run, check, report.

The soak is one simulation (``simulation.orchestrate``) with two leader-elected
controller replicas, the runner controller, a short failed-runner TTL, short runner
health timeouts and the fault schedule of ``simulation.faults.soak_plan``; its trace is
checked by ``simulation.invariants``.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from ersctl.ephemeralrunner.phases import FailurePolicy
from ersctl.platform.cli import fail
from ersctl.platform.errors import Failure
from ghalistener.config import ListenerConfig
from simulation.agent import AgentTiming
from simulation.faults import soak_plan
from simulation.github_side import SESSION_IDLE_TIMEOUT
from simulation.invariants import DEFINITIONS, check, format_table
from simulation.live import LiveLine
from simulation.orchestrate import SimulationConfig, run_simulation
from simulation.processes import ProgramExited
from simulation.replicas import LeaseTiming
from simulation.report import build_report, format_report
from simulation.workload import Burst, Durations, WorkloadSpec, generate

PROG = "soak.py"
WAVE_PERIOD = 8.0
"""Seconds between two waves of jobs: CI load comes in waves, and the quiet between them
brings the set back to its minimum, where a runner nobody needed is scaled down unused."""
RUNNER_MAX_FAILURES = 2
"""Failed Pods before a runner turns Failed: 2 (5 s apart) so a broken runner turns
Failed within the run, and its collection after the TTL is seen."""
START_TIMEOUT = 4.0
"""``--runner-start-timeout`` (and ``--runner-online-timeout``): far shorter than an
injected image pull failure lasts, so the rule, not the image, ends it."""
NODE_LOST_TIMEOUT = 3.0
HEALTH_OPTIONS = (
    *("--runner-start-timeout", str(START_TIMEOUT)),
    *("--runner-online-timeout", str(START_TIMEOUT)),
    *("--runner-node-lost-timeout", str(NODE_LOST_TIMEOUT)),
    *("--runner-deregistration-timeout", "10"),
)
"""Short runner health timeouts, so every rule acts within the run."""
HEALTH_DEADLINE = max(START_TIMEOUT, NODE_LOST_TIMEOUT) + FailurePolicy().delay(1)
"""The longest a health fault keeps a runner from taking a job: a timeout, then the
failure backoff before the next Pod."""
LONG_POLL = 1.0
"""Seconds the simulated service holds a long poll (GitHub's 50 s, shortened)."""
LISTENER_TAKEOVER = LONG_POLL + SESSION_IDLE_TIMEOUT + ListenerConfig.session_retry_interval
"""The longest a SIGKILLed listener's successor takes to hold the message session: the
killed listener's long poll keeps its session in use until it ends, the service drops
the session ``SESSION_IDLE_TIMEOUT`` later, and a successor that asked just before got
409 and asks again one retry interval later: ARC's 30 s, as the listener Pods the
AutoscalingListener controller configures wait (the soak cannot shorten it)."""


_DURATIONS = Durations(median=3.0, sigma=0.5, shortest=0.5, longest=8.0)


def _poisson(args: argparse.Namespace) -> WorkloadSpec:
    """``--jobs`` Poisson arrivals at ``--rate`` per second."""
    return WorkloadSpec(seed=args.seed, rate=args.rate, count=args.jobs, durations=_DURATIONS)


def _waves(args: argparse.Namespace) -> WorkloadSpec:
    """``--jobs`` in waves of ``--rate`` x :data:`WAVE_PERIOD` jobs, one every period."""
    size = max(1, round(args.rate * WAVE_PERIOD))
    waves = math.ceil(args.jobs / size)
    return WorkloadSpec(
        seed=args.seed,
        rate=0.0,
        bursts=tuple(
            Burst(at=1.0 + WAVE_PERIOD * i, count=min(size, args.jobs - size * i))
            for i in range(waves)
        ),
        durations=_DURATIONS,
    )


def soak_config(args: argparse.Namespace) -> SimulationConfig:
    """The simulation a soak runs (see the module docstring)."""
    workload = _waves(args) if args.waves else _poisson(args)
    window = generate(workload)[-1].at + (WAVE_PERIOD if args.waves else 0.0)
    return SimulationConfig(
        workload=workload,
        timing=AgentTiming(registration_delay=0.3, startup_delay=0.3),
        label="soak",
        min_runners=0,
        max_runners=args.max_runners,
        long_poll=LONG_POLL,
        drain_timeout=120.0,
        sample_every=0.5,
        runner_controller=True,
        autoscaling=True,
        controller_replicas=2,
        lease=LeaseTiming(),
        failed_runner_ttl=args.failed_runner_ttl,
        runner_max_failures=RUNNER_MAX_FAILURES,
        fault_schedule=soak_plan(window, seed=args.seed),
        controller_options=HEALTH_OPTIONS,
        health_deadline=HEALTH_DEADLINE,
        listener_takeover=LISTENER_TAKEOVER,
        kubeconfig=Path(args.kubeconfig) if args.kubeconfig else None,
    )


def run(args: argparse.Namespace, *, command: str) -> int:
    """Soak once: 0 when every invariant holds, else 1."""
    config = soak_config(args)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gha-soak-"))
    live = LiveLine(enabled=not args.quiet)
    started = time.monotonic()
    try:
        trace = run_simulation(config, workdir=workdir, live=live)
    except ProgramExited as exc:
        fail(PROG, str(exc))
    except Failure as exc:  # an existing cluster that cannot be used
        fail(PROG, str(exc), exc.exit_code)
    wall = time.monotonic() - started
    assert config.lease is not None
    rows = check(trace, retry_period=config.lease.retry_period)
    report = build_report(trace)
    ok = all(row.ok for row in rows)
    print(f"command: {command}")
    print(f"seed {args.seed}, {args.jobs} jobs, wall time {wall:.0f}s")
    print(
        f"2 controller replicas (Lease {config.lease.duration}s, renew deadline "
        f"{config.lease.renew_deadline:g}s, retry {config.lease.retry_period:g}s), "
        f"--failed-runner-ttl {config.failed_runner_ttl:g}, "
        f"--runner-max-failures {config.runner_max_failures}, "
        f"{' '.join(config.controller_options)}; {len(config.schedule)} faults"
    )
    print(DEFINITIONS, end="\n\n")
    print(format_table(rows))
    print(f"result: {'every invariant holds' if ok else 'INVARIANT FAILED'}")
    print(
        "the simulation's report, by its own definitions (its 'lost' and 'wasted' include "
        "what the injector failed on purpose; its 'wasted' counts only runners that "
        "registered and were deleted; the invariants above are defined at the top):"
    )
    print(format_report(report, verdict=False))
    soak = trace.soak
    if soak is not None and soak.replica_exits:
        print(f"replica exits   {'; '.join(soak.replica_exits)} (each started again)")
    print(f"logs: {workdir}")
    if args.json:
        result: dict[str, Any] = {
            "command": command,
            "seed": args.seed,
            "jobs": args.jobs,
            "wall_seconds": round(wall, 1),
            "ok": ok,
            "invariants": [row.to_json() for row in rows],
            "definitions": DEFINITIONS,
            "failovers": [vars(f) for f in soak.failovers] if soak else [],
            "replica_exits": list(soak.replica_exits) if soak else [],
            "report": report.to_json(),
        }
        try:
            Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:  # checked before the run; gone or full since
            fail(PROG, f"cannot write {exc.filename}: {exc.strerror}")
    return 0 if ok else 1
