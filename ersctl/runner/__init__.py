"""The EphemeralRunner controller: one runner Pod per EphemeralRunner.

For each EphemeralRunner (ER) it registers a just-in-time runner with the scale-set
service (runner name = ER name), keeps that JIT config in a Secret owned by the ER,
runs the runner Pod from the ER's pod template, follows the Pod into the ER's
``status.phase``, retries a failed Pod with backoff, and removes the registration
before the ER goes away. ``ersctl reconcile --runner-controller`` runs it beside the
EphemeralRunnerSet controller, on the same manager.

Modules, pure first: ``pods`` builds the Secret and Pod documents; ``phases`` decides
what a Pod's state means for the ER; ``registration`` talks to the scale-set service;
``reconciler`` does the Kubernetes side through the protocols in ``ports``; ``kube``
and ``service`` implement those; ``controller`` registers it all on the runtime's
manager (with a label-selected Pod informer); ``metrics`` exports its counters;
``scaleset`` is ``ersctl scaleset``, which gives a new scale set its id. ``podsim``
plays kubelet and runner binary for runner Pods, for simulations without a cluster.
"""
