"""The controller as ARC runs it, before and after PR #4642, for the guard benchmarks only.

Not product code: this exists so ``examples/bench_guard.py`` can measure what the
guard buys and ``examples/bench_guard_wait.py`` what it costs.
:func:`arc_pr_4642` is this project's step-8 decision ignoring the runners the
listener says its count leaves out: the guard exactly as ARC has it.
:func:`pre_pr_4642` decides step 8 in the old order:

- finished runners are deleted *in the same pass* as the scaling comparison (ARC's
  ``defer cleanupFinishedEphemeralRunners``), so the comparison counts a live total
  that the cleanup is about to lower, against replicas the listener computed while
  those runners were still alive: a patch that arrives just before a job's runner
  turns Succeeded makes the controller create a replacement nobody asked for;
- runners being deleted are not counted toward the scale-up total;
- no marker is written and nothing is suppressed.

The skip for a patch ID that already produced runners (``spec.patchID`` non-zero and
equal to the newest runner's patch-id annotation) predates the PR and is kept.

Both plug into the reconciler through its public seam, the step-8 decision function
(``ersctl.ephemeralrunnerset.scaling.ScalingDecision``); every other step, and how a decision is
carried out, is the product's. ``python -m simulation.baseline reconcile [ersctl
reconcile options]`` runs one of :data:`DECISIONS` (env ``BASELINE_RECONCILER``) inside
``ersctl reconcile`` itself (same options, runtime, informers and signal handling), so
the benchmark's rows differ only in step 8.
"""

from __future__ import annotations

import os
import sys

from ersctl.api import EphemeralRunnerSet
from ersctl.ephemeralrunnerset.classification import RunnerStates
from ersctl.ephemeralrunnerset.controller import SetReconcilerParts
from ersctl.ephemeralrunnerset.scaling import (
    AlreadyServiced,
    Decision,
    Hold,
    ScaleDown,
    ScaleUp,
    ScalingDecision,
    ThenDelete,
    decide,
    scale_down_candidates,
)
from simulation.variant import run_reconcile


def arc_pr_4642(ers: EphemeralRunnerSet, states: RunnerStates) -> Decision:
    """Step 8 as ARC PR #4642 has it: every finished runner is cleaned up under a marker."""
    return decide(replicas=ers.replicas, patch_id=ers.patch_id, states=states)


def pre_pr_4642(ers: EphemeralRunnerSet, states: RunnerStates) -> Decision:
    """Step 8 in the order before ARC PR #4642 (see the module docstring)."""
    if ers.patch_id != 0 and ers.patch_id == states.latest_patch_id:
        return AlreadyServiced()
    total = states.total  # finished and deleting runners are not counted
    compared: ScaleUp | ScaleDown | Hold
    if total < ers.replicas:
        compared = ScaleUp(count=ers.replicas - total, patch_id=ers.patch_id)
    elif ers.patch_id == 0 and total > ers.replicas:
        candidates = scale_down_candidates(pending=states.pending, running=states.running)
        compared = ScaleDown(count=total - ers.replicas, candidates=candidates)
    else:
        compared = Hold(reason=f"{total} runners for {ers.replicas} replicas")
    # The old deferred cleanup: after the comparison, no marker recorded.
    return ThenDelete(then=compared, runners=states.finished)


RECONCILER_ENV = "BASELINE_RECONCILER"
"""Which of :data:`DECISIONS` ``main`` runs (default ``pre-4642``)."""

DECISIONS: dict[str, ScalingDecision] = {
    "pre-4642": pre_pr_4642,
    "arc-4642": arc_pr_4642,
}


def main(argv: list[str] | None = None) -> None:
    """``ersctl reconcile`` with a baseline's step-8 decision (env ``BASELINE_RECONCILER``)."""
    scaling = DECISIONS[os.environ.get(RECONCILER_ENV, "pre-4642")]
    run_reconcile(SetReconcilerParts(scaling=scaling), argv, prog_name="ersctl-baseline")


if __name__ == "__main__":
    main(sys.argv[1:])
