"""ARC's controller command line (``/manager``, the image's name for ARC's manager binary),
run as ``ersctl reconcile``.

ARC's Helm chart runs its controller as ``/manager`` with Go-style flags and three
environment variables. This package takes exactly those, as ARC 0.14.2's and 0.15.1's
``main.go`` define them (Go's ``flag`` syntax: ``ersctl.platform.goflags``), and runs
``ersctl reconcile`` with the arguments that mean the same, so that there is one
controller start-up and ``/manager`` can do nothing ``ersctl reconcile`` cannot.

- :mod:`.flags`: every flag of ARC's manager and what ersctl makes of it (pure);
- :mod:`.translate`: ARC's arguments and environment -> ``ersctl reconcile``'s (pure);
- :mod:`.manager`: the ``ersctl-manager`` console script (``/manager``).
"""
