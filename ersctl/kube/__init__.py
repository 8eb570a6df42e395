"""The controller runtime: informers, cache, API reader, writer, work queue, leader
election and the manager that wires them (controller-runtime's shape, in Python).

Layers point down: ``manager`` -> ``informer``/``queue``/``leader`` -> ``store``;
``cache``, ``apireader``, ``writer`` and ``events`` implement ``ersctl.ports``.
Only this package talks to ``kubernetes.client``; its errors leave as
``ersctl.errors.KubeError``.
"""
