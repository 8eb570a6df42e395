"""What each ``ersctl`` command does once its options are read and checked.

``ersctl.cli`` declares the commands (their options, help and the checks that need
nothing else) and imports a command's module here only when that command runs: these
are where the Kubernetes and GitHub clients and the controllers come in, so ``--help``,
a typo or a bad option value is answered without loading them.
"""
