"""The autoscaling controllers on ARC's AutoscalingRunnerSet and AutoscalingListener."""
