"""The EphemeralRunner controller: one runner Pod per EphemeralRunner.

For each EphemeralRunner (ER) it registers a just-in-time runner with the scale-set
service (runner name = ER name), keeps that JIT config in a Secret owned by the ER,
runs the runner Pod from the ER's pod template, follows the Pod into the ER's
``status.phase``, retries a failed Pod with backoff, and removes the registration
before the ER goes away. ``ersctl reconcile`` runs it beside the other controllers, on
the same manager (``--no-runner-controller`` leaves it out).

Modules, pure first: ``pods`` builds the Secret and Pod documents; ``phases`` decides
what a Pod's state means for the ER; ``modes`` names the ways a runner fails;
``health`` holds the timed rules that free a slot a runner would hold for good. Then
the I/O: ``reconciler`` does the Kubernetes side through the protocols in ``ports``,
which ``stores`` implements; ``registration`` talks to the scale-set service;
``healing`` acts on the health rules; ``deregistration`` removes deleted runners'
registrations in the background; ``controller`` registers it all on the runtime's
manager (with a label-selected Pod informer); ``metrics`` exports its counters.
"""
