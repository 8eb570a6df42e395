"""The AutoscalingRunnerSet controller: one GitHub scale set, from registration to teardown.

For each AutoscalingRunnerSet (ARS) it finds the runner scale set on GitHub (by ARC's
``runner-scale-set-id`` annotation, or by name in its runner group) and registers it when
missing; keeps the one EphemeralRunnerSet it owns at the ARS's runner template, in place
(a changed runner spec advances the set's ``spec.actionableRevision``); keeps one
AutoscalingListener at ARC's name and key (any other listener of the ARS is deleted
first: two would hold two sessions for one scale set); and reports in the ARS's status
and Events. Deleting the ARS tears it down top-down (listeners, runner sets, the scale
set on GitHub), then releases ARC's cleanup protection from what it used. Names, labels
and annotations are ARC's, so an ARS from ARC's Helm chart is adopted as it is, and ARC's
controller, switched back, finds every object where it looks.

Modules: ``controller`` registers it on the runtime's manager; ``reconciler`` is the
reconcile; ``desired`` and ``desiredlistener`` the documents it asks for, ``listener``
its listener step, ``states`` its phases and Event reasons, ``ports`` what it needs from
the world; ``template_equality`` and ``cleanup_protection`` are ARC's rules it follows.
"""
