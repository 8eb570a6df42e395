"""The AutoscalingRunnerSet and AutoscalingListener controllers, told apart by their
modules' prefixes.

AutoscalingRunnerSet (``runnerset_*``): ``runnerset_reconciler`` takes one scale set
from registration to teardown: it registers the scale set with GitHub (or adopts ARC's
by its ``runner-scale-set-id`` annotation), keeps its EphemeralRunnerSet
(``runnerset_desired``, pure) and its one AutoscalingListener (``runnerset_listener``,
the listener's fields from ``listener_desired``, pure) as the ARS asks, reports a
phase and state (``runnerset_states``, pure), and on deletion removes the listener,
drains the set and releases what ARC's chart protected (``cleanup_protection``).
``template_equality`` (pure) compares runner templates by meaning, so an adopted set is
not rebuilt. ``runnerset_ports`` are its protocols, ``runnerset_controller`` registers it.

AutoscalingListener (``listener_*``): ``listener_reconciler`` runs one listener Pod per
scale set from ARC's config Secret (``listener_config``, fed by ``listener_inputs``),
ServiceAccount, Role and RoleBinding (``listener_rbac``) and Pod
(``listener_objects``, ``listener_template``), all pure builders; it restarts an exited
listener with backoff (``listener_restarts``, pure) and removes it all under ARC's
finalizer when the AutoscalingListener goes. ``listener_ports`` are its protocols,
``listener_stores`` implement them, ``listener_controller`` registers it.

What the ARS controller writes into an AutoscalingListener and what the listener
controller does with it is in docs/architecture.md.
"""
