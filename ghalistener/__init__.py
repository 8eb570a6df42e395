"""ghalistener: long-polls GitHub's runner scale-set service and publishes the desired
runner count to an EphemeralRunnerSet as ``spec.replicas`` plus ``spec.patchID``."""

__version__ = "0.1.0"
