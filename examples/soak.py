"""A soak: many jobs through the whole system, with faults at seeded random moments.

    python examples/soak.py [--jobs 1000] [--seed 1] [--json result.json]
                            [--rate 2.5] [--waves] [--failed-runner-ttl 10] [--workdir DIR]
                            [--kubeconfig PATH]

The simulation of ``simulate.py`` (``examples/simulation``), at length and under fire:
the embedded Kubernetes API server and the GitHub simulator over HTTP in this process;
two ``ersctl reconcile`` replicas with leader election (a short Lease, so a failover
takes seconds), the runner controller on and a short ``--failed-runner-ttl``; an
AutoscalingRunnerSet whose listener Pod the simulation's kubelet runs as the real
``ghalistener``; runner Pods played by the simulation's kubelet. ``--jobs`` jobs
arrive as a Poisson process at ``--rate`` per second (``--waves``: in waves every 8 s,
quiet in between, at that rate on average), and the faults of
``simulation.faults.soak_plan`` land at moments drawn from ``--seed``: SIGKILL of the
leader replica and of the listener, API server 409s, 5xx, latency and dropped watches
(410), GitHub 5xx, token expiry (401), lost sessions and a redelivered message, runner
Pods failing at start, for good, and mid-job, and the runner health faults (a Pod
evicted, drained, or lost with its node; an image that does not pull for a while; a
runner never online; one exiting without a job), against short runner health timeouts.
At the end the AutoscalingRunnerSet is deleted. ``--kubeconfig PATH`` runs it on an
existing cluster instead, as ``simulate.py --kubeconfig`` does (the API faults land at
its recording proxy).

Prints the command and the seed, then the invariants as a table (definitions in
``simulation.invariants``) and the simulation's report; ``--json`` writes all of it.
Exit code 0 when every invariant holds, 1 when one fails or a program under test
could not start, 2 for a bad option (one line, before anything starts), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from simulation.options import (
    Parser,
    kubeconfig_file,
    number,
    output_file,
    run_checked,
    whole,
    workdir_path,
)

PROG = "soak.py"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The checked options; a bad one exits 2 with one line on stderr."""
    parser = Parser(
        prog=PROG,
        description="Many jobs through the whole system, with faults at seeded moments.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--jobs", type=whole(minimum=1), default=1000, help="jobs to run")
    parser.add_argument("--seed", type=whole(minimum=0), default=1, help="workload and faults")
    parser.add_argument("--rate", type=number(above=0), default=2.5, help="job arrivals per second")
    parser.add_argument(
        "--failed-runner-ttl",
        type=number(minimum=1),
        default=10.0,
        help="ersctl reconcile --failed-runner-ttl (short, so the soak sees collections)",
    )
    parser.add_argument(
        "--waves",
        action="store_true",
        help="jobs in waves every 8 s with quiet gaps between them, at --rate on average",
    )
    parser.add_argument(
        "--max-runners", type=whole(minimum=1), default=30, help="the scale set's maxRunners"
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        type=kubeconfig_file,
        help="run on the existing cluster this kubeconfig names (its CRDs installed), in a "
        "namespace of its own removed at the end, instead of the embedded API server",
    )
    parser.add_argument("--json", metavar="PATH", type=output_file, help="write the result as JSON")
    parser.add_argument(
        "--workdir", metavar="DIR", type=workdir_path, help="logs (default: a temp dir)"
    )
    parser.add_argument("--quiet", action="store_true", help="no live progress")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Check the options, then soak (see the module docstring)."""
    command = shlex.join(["python", "examples/soak.py", *(sys.argv[1:] if argv is None else argv)])

    def start(args: argparse.Namespace) -> int:
        from simulation.soak import run

        return run(args, command=command)

    return run_checked(PROG, argv, parse_args, start, as_script=__name__ == "__main__")


if __name__ == "__main__":
    sys.exit(main())
