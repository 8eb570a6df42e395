"""Test support shipped with ersctl: an embedded Kubernetes API server
(:mod:`ersctl.testing.apiserver`) for tests, the end-to-end simulation, and trying the
controller without a cluster."""
