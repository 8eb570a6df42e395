"""The whole system end to end, with no GitHub account and no cluster (or on one).

    python examples/simulate.py [--faults] [--runner-controller] [--without-ars]
                                [--kubeconfig PATH] [--json report.json]
                                [--plot timeline.svg]

Starts an embedded Kubernetes API server and the GitHub simulator's HTTP server in
this process, runs the real ``ersctl reconcile`` as a subprocess and applies an
AutoscalingRunnerSet: the controller registers the scale set, makes the
EphemeralRunnerSet and the listener Pod, whose real ``ghalistener`` the simulation's
kubelet starts from the Pod's mounted config (``--without-ars``: the set applied and
``ghalistener run`` started by hand). A runner agent plays the cluster and the runner
binary (registration via JIT config, Pending -> Running -> Succeeded, one job per runner).
A seeded workload queues jobs; the terminal shows live progress, then a report:
jobs completed, runners created, wasted runners, peak runners against peak demand,
job wait p50/p95/max, API requests and writes per job, and whether the set returned
to min_runners. ``--faults`` adds GitHub 5xx bursts and token expiry, API server
409s and latency, a listener (its Pod deleted) and a controller restart mid-run, and
with an AutoscalingRunnerSet its template edited mid-run and the ARS deleted at the end
(nothing may be left in the cluster or at GitHub). With
``--runner-controller``, ``ersctl reconcile --runner-controller`` registers the runners
and runs their Pods itself, and the agent only plays the kubelet and the runner binary.

``--kubeconfig PATH`` runs the same system on an existing cluster (its CRDs installed)
instead of the embedded server: in a namespace of its own, the programs reaching the
API server through a recording proxy (the report's API traffic, the faults), the
simulation's kubelets playing the listener and runner Pods through the API (the Pods
name a scheduler that does not exist, so no node runs them). At the end the
AutoscalingRunnerSet is deleted and the namespace removed; the report says what, if
anything, was left.

Exit code 0 when every job completed and no runner was deleted while running one
(and, without ``--faults``, the set is back at min_runners); 1 otherwise, or when a
program under test exits on its own. A bad option value is one line naming it and exit
code 2, before anything starts (``simulation.options``). Ctrl-C at any point stops the
programs it started and ends with one line and exit code 130.
"""

from __future__ import annotations

import argparse
import sys

from simulation.options import PROG, parse_args, run_checked


def main(argv: list[str] | None = None) -> int:
    """Check the options, then run (see the module docstring)."""

    def start(args: argparse.Namespace) -> int:
        from simulation.command import run

        return run(args)

    return run_checked(PROG, argv, parse_args, start, as_script=__name__ == "__main__")


if __name__ == "__main__":
    sys.exit(main())
