"""Fault schedules: what goes wrong, and when. Pure.

:func:`fault_plan` is ``simulate.py --faults``: each fault at a fixed fraction of the
workload's arrival window, so a longer or shorter run keeps the same shape (the system
is busy when each one lands). :func:`soak_plan` is ``soak.py``'s: every kind of
:data:`SOAK_KINDS` at least once, more at seeded random moments, the same for the same
seed. The orchestrator maps each :class:`FaultKind` to an action on the system under test.
"""

from __future__ import annotations

import random
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
    LEADER_KILL = "leader-kill"
    """SIGKILL the controller replica holding the leader Lease; it is started again (as
    its Deployment would) and the other replica takes over once the Lease expires."""
    LISTENER_KILL = "listener-kill"
    """SIGKILL the listener process: its Pod fails, its controller makes another."""
    API_5XX = "api-5xx"
    """5xx answers from the API server to the next requests, whoever sends them."""
    WATCH_GONE = "watch-410"
    """Every open watch ends and the next re-watches get 410 Gone: informers relist."""
    SESSION_LOST = "session-lost"
    """The service drops the listener's message session (404 on its next call)."""
    MESSAGE_REDELIVERY = "message-redelivery"
    """The service delivers its latest acknowledged message again (stale statistics)."""
    POD_START_FAILURE = "pod-fails-at-start"
    """The next runner Pod fails before its runner connects; its replacement starts."""
    RUNNER_BROKEN = "runner-broken"
    """Every Pod of the next starting runner fails: the runner turns Failed and must be
    collected after the failed-runner TTL."""
    POD_JOB_FAILURE = "pod-fails-mid-job"
    """A busy runner's Pod fails mid-job: the job fails at GitHub, the runner is deleted."""
    POD_EVICTED = "pod-evicted"
    """The kubelet evicts a running runner Pod (its job, if any, fails at GitHub)."""
    POD_DRAINED = "pod-drained"
    """A drain deletes a runner Pod not annotated do-not-disrupt (a busy one's job fails)."""
    NODE_LOST = "node-lost"
    """A running runner Pod's node is lost: the Pod is deleted and stays terminating, and
    its runner is dead (its job, if any, fails at GitHub)."""
    IMAGE_PULL_FAILURE = "image-pull-failure"
    """The next starting runner Pod's image does not pull for a while (longer than the
    start timeout)."""
    RUNNER_NEVER_ONLINE = "runner-never-online"
    """The next starting runner Pod runs, but its runner never comes online at GitHub."""
    EXIT_WITHOUT_JOB = "exit-without-job"
    """The next starting runner comes online and exits 0 without running a job."""


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


_SYSTEM_KINDS: tuple[FaultKind, ...] = (
    FaultKind.LEADER_KILL,
    FaultKind.LISTENER_KILL,
    FaultKind.API_CONFLICTS,
    FaultKind.API_5XX,
    FaultKind.API_LATENCY,
    FaultKind.WATCH_GONE,
    FaultKind.GITHUB_5XX,
    FaultKind.TOKEN_EXPIRY,
    FaultKind.SESSION_LOST,
    FaultKind.MESSAGE_REDELIVERY,
    FaultKind.POD_START_FAILURE,
    FaultKind.RUNNER_BROKEN,
    FaultKind.POD_JOB_FAILURE,
)
HEALTH_KINDS: tuple[FaultKind, ...] = (
    FaultKind.POD_EVICTED,
    FaultKind.POD_DRAINED,
    FaultKind.NODE_LOST,
    FaultKind.IMAGE_PULL_FAILURE,
    FaultKind.RUNNER_NEVER_ONLINE,
    FaultKind.EXIT_WITHOUT_JOB,
)
"""The runner health faults (the runner controller's timed rules must clear each)."""
SOAK_KINDS: tuple[FaultKind, ...] = (*_SYSTEM_KINDS, *HEALTH_KINDS)
"""What the soak injects (``soak.py``): every kind at least once per run, each of
:data:`HEALTH_KINDS` up to :attr:`SoakFaults.health_repeats` times in a long one."""


@dataclass(frozen=True, kw_only=True)
class SoakFaults:
    """How densely the soak injects faults, and how far apart the disruptive ones stay.

    ``every``: mean seconds between two faults. ``apart``: the least seconds between two
    faults of one kind (a leader kill before the previous failover ended would find no
    leader to kill; a listener kill before its replacement started would kill nothing).
    """

    every: float = 6.0
    apart: tuple[tuple[FaultKind, float], ...] = (
        (FaultKind.LEADER_KILL, 25.0),
        (FaultKind.LISTENER_KILL, 45.0),
        (FaultKind.RUNNER_BROKEN, 20.0),
        *((kind, 8.0) for kind in HEALTH_KINDS),
    )
    margin: float = 0.05
    """Faults land inside ``[margin, 1 - margin]`` of the window (none at the very end)."""
    health_repeats: int = 3
    """Each of :data:`HEALTH_KINDS` lands this often in a window of
    ``health_repeats * health_every`` seconds or more (at least once in any)."""
    health_every: float = 90.0


def soak_plan(window: float, *, seed: int, faults: SoakFaults = SoakFaults()) -> tuple[Fault, ...]:
    """Faults at seeded random moments inside ``window``, in time order: each of
    :data:`SOAK_KINDS` once (the health kinds more often in a long window), then random
    kinds at random times up to about one per ``faults.every`` seconds, keeping each
    kind's ``apart`` spacing (a candidate too close to one of its kind is dropped). The
    same window and seed give the same plan."""
    rng = random.Random(f"soak-faults/{seed}")
    low, high = faults.margin * window, (1 - faults.margin) * window
    spacing = dict(faults.apart)
    planned: list[Fault] = []

    def fits(kind: FaultKind, at: float) -> bool:
        gap = spacing.get(kind, 0.0)
        return all(abs(f.at - at) >= gap for f in planned if f.kind == kind)

    repeats = max(1, min(faults.health_repeats, int(window // faults.health_every)))
    for kind in SOAK_KINDS:
        for _ in range(repeats if kind in HEALTH_KINDS else 1):
            for _ in range(20):  # every kind once: retry the moment, not the kind
                at = round(rng.uniform(low, high), 2)
                if fits(kind, at):
                    planned.append(Fault(at=at, kind=kind))
                    break
    extra = max(0, int(window / faults.every) - len(planned))
    for _ in range(extra):
        kind, at = rng.choice(SOAK_KINDS), round(rng.uniform(low, high), 2)
        if fits(kind, at):
            planned.append(Fault(at=at, kind=kind))
    return tuple(sorted(planned, key=lambda f: (f.at, f.kind)))
