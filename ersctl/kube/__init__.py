"""The controller runtime: informers, cache, API reader, writer, work queue, leader
election and the manager that wires them (controller-runtime's shape, in Python).

Layers point down: ``manager`` -> ``controller`` (queue + workers) / ``informer`` /
``leader`` -> ``store``. ``cache`` (with ``copies``), ``apireader``, ``writer`` and
``events`` implement ``ersctl.runnerset.ports``; ``connect`` builds API clients. Only this
package talks to ``kubernetes.client``; its errors leave as ``ersctl.kube.errors.KubeError``.
"""
