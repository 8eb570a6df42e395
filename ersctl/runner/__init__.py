"""The EphemeralRunner controller: one runner Pod per EphemeralRunner.

For each EphemeralRunner (ER) it registers a just-in-time runner with the scale-set
service (runner name = ER name), keeps that JIT config in a Secret owned by the ER,
runs the runner Pod from the ER's pod template, follows the Pod into the ER's
``status.phase``, retries a failed Pod with backoff, and removes the registration
before the ER goes away.

Modules, pure first: ``pods`` builds the Secret and Pod documents; ``phases`` decides
what a Pod's state means for the ER; ``reconciler`` does the I/O through the small
protocols in ``ports``; ``kube`` implements those over the Kubernetes API and
``service`` over the scale-set client.
"""
