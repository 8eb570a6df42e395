"""The EphemeralRunnerSet controller: EphemeralRunners created and deleted to meet the
set's ``spec.replicas``, with the guard of ARC PR #4642 (no runner for a job that
already finished).

``reconciler`` is the reconcile, step by step, through the protocols of ``ports``.
Pure decisions: ``classification`` (what each runner is), ``scaling`` (what one
reconcile does: clean up, create, delete or hold), ``status`` (the status it reports)
and ``failures`` (when a Failed runner goes and when a failing set backs off). The
I/O: ``markers`` (the two status writes under an optimistic lock), ``expectations``
(its own creates and deletes the cache has not shown yet), ``creation`` and
``cleanup`` (the runner writes), ``failedrunners`` (Failed runners collected),
``proxysecret`` (the set's proxy Secret for its runners' Pods), ``metrics``, and
``table`` (``ersctl status``).
"""
