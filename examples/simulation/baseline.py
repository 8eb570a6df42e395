"""The controller as ARC ran it before PR #4642, for the guard benchmark only.

Not product code: this exists so ``examples/bench_guard.py`` can measure what the
guard buys. :class:`PrePr4642Reconciler` keeps every step of this project's
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

``python -m simulation.baseline reconcile [ersctl reconcile options]`` runs this
reconciler inside the unchanged ``ersctl reconcile`` command (same runtime, options,
informers and signal handling), so the benchmark's two rows differ only in step 8.
"""

from __future__ import annotations

import sys

from ersctl import cli
from ersctl.api import EphemeralRunnerSet
from ersctl.runnerset import status
from ersctl.runnerset.classification import RunnerStates
from ersctl.runnerset.cleanup import delete_runners
from ersctl.runnerset.creation import create_runners, runner_body
from ersctl.runnerset.reconciler import EphemeralRunnerSetReconciler, Outcome
from ersctl.runnerset.scaling import ScaleDown, scale_down_candidates


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


def main(argv: list[str] | None = None) -> None:
    """``ersctl``'s command line with the baseline reconciler as its reconciler factory."""
    cli.main(args=argv, prog_name="ersctl-baseline", obj=PrePr4642Reconciler)


if __name__ == "__main__":
    main(sys.argv[1:])
