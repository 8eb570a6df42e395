"""ersctl: the EphemeralRunnerSet controller. Creates and deletes EphemeralRunners to
meet ``spec.replicas``, without creating runners for jobs that already finished."""

__version__ = "0.1.0"
