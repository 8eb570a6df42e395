"""The controller as ARC runs it, before and after PR #4642, for the guard benchmarks only.

Not product code: this exists so ``examples/bench_guard.py`` can measure what the
guard buys and ``examples/bench_guard_wait.py`` what it costs.
:class:`ArcPr4642Reconciler` is this project's reconciler ignoring the runners the
listener says its count leaves out: the guard exactly as ARC has it.
:class:`PrePr4642Reconciler` keeps every step of this project's
reconciler except step 8, which it runs in the old order:

- finished runners are deleted *in the same pass* as the scaling comparison (ARC's
  ``defer cleanupFinishedEphemeralRunners``), so the comparison counts a live total
  that the cleanup is about to lower, against replicas the listener computed while
  those runners were still alive: a patch that arrives just before a job's runner
  turns Succeeded makes the controller create a replacement nobody asked for;
- runners being deleted are not counted toward the scale-up total;
- no marker is written and nothing is suppressed.

The skip for a patch ID that already produced runners (``spec.patchID`` non-zero and
equal to the newest runner's patch-id annotation) predates the PR and is kept.

``python -m simulation.baseline reconcile [ersctl reconcile options]`` runs one of
:data:`RECONCILERS` (env ``BASELINE_RECONCILER``) inside the unchanged ``ersctl reconcile`` command (same runtime, options,
informers and signal handling), so the benchmark's two rows differ only in step 8.
"""

from __future__ import annotations

import os
import sys

from ersctl import cli
from ersctl.api import EphemeralRunnerSet, RunnerID
from ersctl.runnerset import status
from ersctl.runnerset.classification import RunnerStates
from ersctl.runnerset.cleanup import delete_runners
from ersctl.runnerset.creation import create_runners, runner_body
from ersctl.runnerset.reconciler import EphemeralRunnerSetReconciler, Outcome
from ersctl.runnerset.scaling import ScaleDown, scale_down_candidates


class ArcPr4642Reconciler(EphemeralRunnerSetReconciler):
    """Step 8 as ARC PR #4642 has it: every finished runner is cleaned up under a marker."""

    def _completed_runners(self, ers: EphemeralRunnerSet) -> frozenset[RunnerID]:
        return frozenset()


class PrePr4642Reconciler(EphemeralRunnerSetReconciler):
    """Step 8 in the order before ARC PR #4642 (see the module docstring)."""

    def _scale(
        self, ers: EphemeralRunnerSet, states: RunnerStates, before: status.StatusView
    ) -> Outcome:
        if ers.patch_id != 0 and ers.patch_id == states.latest_patch_id:
            outcome = Outcome(action="hold", detail=f"patch {ers.patch_id} already serviced")
        else:
            try:
                outcome = self._compare(ers, states)
            finally:
                # The old deferred cleanup: after the comparison, no marker recorded.
                delete_runners(self._writer, states.finished)
        status.update_status(self._writer, ers, before=before, states=states)
        return outcome

    def _compare(self, ers: EphemeralRunnerSet, states: RunnerStates) -> Outcome:
        total = states.total  # finished and deleting runners are not counted
        if total < ers.replicas:
            created = create_runners(
                self._writer,
                runner_body(ers),
                count=ers.replicas - total,
                concurrency=self._create_concurrency,
            )
            self._metrics.runners_created(ers, created.created)
            if created.errors:
                raise created.errors[0]
            return Outcome(action="scale-up", detail=f"{created.created} runners created")
        if ers.patch_id == 0 and total > ers.replicas:
            candidates = scale_down_candidates(pending=states.pending, running=states.running)
            return self._scale_down(
                ers, ScaleDown(count=total - ers.replicas, candidates=candidates)
            )
        return Outcome(action="hold", detail=f"{total} runners for {ers.replicas} replicas")


RECONCILER_ENV = "BASELINE_RECONCILER"
"""Which of :data:`RECONCILERS` ``main`` runs (default ``pre-4642``)."""

RECONCILERS: dict[str, type[EphemeralRunnerSetReconciler]] = {
    "pre-4642": PrePr4642Reconciler,
    "arc-4642": ArcPr4642Reconciler,
}


def main(argv: list[str] | None = None) -> None:
    """``ersctl``'s command line with a baseline reconciler (env ``BASELINE_RECONCILER``)
    as its reconciler factory."""
    reconciler = RECONCILERS[os.environ.get(RECONCILER_ENV, "pre-4642")]
    cli.main(args=argv, prog_name="ersctl-baseline", obj=reconciler)


if __name__ == "__main__":
    main(sys.argv[1:])
