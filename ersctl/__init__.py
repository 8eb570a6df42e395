"""ersctl: the controllers of ARC's ``actions.github.com/v1alpha1`` kinds, run by
``ersctl reconcile`` (or ARC's ``/manager`` command line) on one manager.

The EphemeralRunnerSet controller creates and deletes EphemeralRunners to meet
``spec.replicas`` without creating runners for jobs that already finished; the
EphemeralRunner controller registers each runner and runs its Pod; the
AutoscalingRunnerSet and AutoscalingListener controllers give a scale set its
registration, its EphemeralRunnerSet and its listener Pod. Each controller's package
says what it holds; they share the runtime (``kube``), GitHub's scale-set service
(``scaleset``), the resource model (``api``), ARC's names (``naming``) and CRDs
(``crds``), and with ghalistener ``platform``. ``cli`` and ``wiring`` start them;
``arc`` translates ARC's command line. docs/architecture.md draws the whole.
"""

__version__ = "0.1.0"
