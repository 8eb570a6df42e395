"""The controller runtime and the one Kubernetes client of both programs
(controller-runtime's shape, in Python): informers and their caches, the work queue,
leader election, the event recorder and the manager that wires them, over the generic
client (``client``: Reader, Writer and its status SubResourceWriter for any kind, ``resources`` naming
kinds and resources).

It knows no kind: each controller declares what it watches when it registers on the
manager (``ersctl.arcclient`` declares ARC's kinds and holds their typed views). Layers
point down: ``manager`` -> ``controller`` (queue + workers) / ``informer`` / ``leader``
-> ``store``. Only this package imports the client library (``kubernetes``, ``urllib3``);
its errors leave as ``ersctl.kube.errors.KubeError``. Held by import contracts
(``pyproject.toml``) and by a test that no module here spells one of ARC's kinds.
"""
