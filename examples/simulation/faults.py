"""The fault schedule of ``--faults``: what goes wrong, and when. Pure.

Each fault is placed at a fraction of the workload's arrival window so a longer or
shorter run keeps the same shape: the system is busy when each one lands. The
orchestrator maps each :class:`FaultKind` to an action on the system under test.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FaultKind(StrEnum):
    GITHUB_5XX = "github-5xx"
    """A burst of 5xx answers from the scale-set service."""
    TOKEN_EXPIRY = "token-expiry"  # noqa: S105 (a fault name, not a secret)
    """Every message-queue and runner token expires (401 until refreshed)."""
    API_CONFLICTS = "api-409"
    """409 Conflict on the next EphemeralRunnerSet status writes."""
    API_LATENCY = "api-latency"
    """Slow API server answers for a while."""
    LISTENER_RESTART = "listener-restart"
    """SIGTERM the listener and start it again (the patch ID sequence restarts at 0)."""
    CONTROLLER_RESTART = "controller-restart"
    """SIGKILL the controller mid-work and start it again (no graceful shutdown)."""
    TEMPLATE_EDIT = "template-edit"
    """The AutoscalingRunnerSet's runner template edited: idle runners are rebuilt, busy
    ones finish their jobs (only with an AutoscalingRunnerSet)."""


@dataclass(frozen=True, kw_only=True)
class Fault:
    at: float
    kind: FaultKind

    @property
    def label(self) -> str:
        return str(self.kind)


# (fraction of the arrival window, fault): spread so that the system recovers from
# each one before the next lands (a 5xx burst costs the listener a few seconds of
# retry backoff), and busy runners exist at every restart.
_SHAPE: tuple[tuple[float, FaultKind], ...] = (
    (0.05, FaultKind.GITHUB_5XX),
    (0.20, FaultKind.TOKEN_EXPIRY),
    (0.30, FaultKind.API_CONFLICTS),
    (0.50, FaultKind.LISTENER_RESTART),
    (0.60, FaultKind.API_LATENCY),
    (0.70, FaultKind.CONTROLLER_RESTART),
    (0.90, FaultKind.GITHUB_5XX),
)


def fault_plan(window: float, *, autoscaling: bool = False) -> tuple[Fault, ...]:
    """Every kind of fault at least once, in time order, inside ``[0, window]``; the
    template edit only with an AutoscalingRunnerSet (``autoscaling``)."""
    shape = sorted((*_SHAPE, (0.40, FaultKind.TEMPLATE_EDIT))) if autoscaling else _SHAPE
    return tuple(Fault(at=round(frac * window, 2), kind=kind) for frac, kind in shape)
