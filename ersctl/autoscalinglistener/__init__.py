"""The AutoscalingListener controller: one running listener Pod per scale set.

For each AutoscalingListener (AL), written by the AutoscalingRunnerSet controller (ours
or ARC's), it makes what ARC's listener needs, named and shaped as ARC's resource builder
makes them: the config Secret (the configuration ARC's controller writes, byte for byte,
so either listener image runs from it), the ServiceAccount, the Role and RoleBinding in
the scale set's namespace, a proxy Secret when the scale set has a proxy, and the listener
Pod. An exited Pod is replaced after a backoff that grows with its consecutive exits
(ARC restarts it at once, a hot loop against GitHub when its token is revoked). Deleting
the AL removes them in ARC's order, the Pod first.

Modules: ``controller`` registers it on the runtime's manager; ``reconciler`` is the
reconcile, ``objects``, ``config``, ``rbac`` and ``template`` build what it creates and
``restarts`` decides when a Pod comes back (all pure); ``inputs`` and ``stores`` are its
Kubernetes-backed ``ports``.
"""
