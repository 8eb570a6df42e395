"""The exception tree of the listener program (the scale-set client has its own).

::

    ersctl.platform.errors.Failure            (exit 1)
    +-- ConfigError                            the configuration is unusable; ``field`` names it (exit 2)
    +-- ersctl.kube.errors.KubeError           an API-server request failed after its retries
    +-- ListenerError
        +-- SessionHeldError                   another listener kept the message session through every retry

Kubernetes errors come from the boundary both programs share (``ersctl.kube.calls``),
and the configuration error and exit codes from ``ersctl.platform.errors``. Errors of
the scale-set client (``ghalistener.actions.errors.ActionsError``) pass through
unchanged. No message ever contains a secret.
"""

from __future__ import annotations

from ersctl.platform.errors import Failure


class ListenerError(Failure):
    """Base class of the listener's own errors."""


class SessionHeldError(ListenerError):
    """The service kept answering 409: another listener holds the scale set's session."""
