"""The contract between the runtime and every reconciler, as controller-runtime's
``reconcile`` and ``record`` packages draw it: a :class:`Request` names one object, a
:class:`Reconciler` drives it toward its spec and returns a :class:`Result`, and an
:class:`EventRecorder` records Kubernetes Events about it. Pure: no I/O, no client
library.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from ersctl.platform.errors import Failure


class EventReason(StrEnum):
    """The base of every Event reason: a controller's reasons are members of an enum
    derived from it, and the recorder takes nothing else, so a literal string at a call
    site is refused by mypy (a reason no one can look up) while the runtime itself
    names no controller's reasons."""


class ObjectRef(Protocol):
    """What the runtime reads of an object a controller hands it (an Event's subject, an
    own write): ``ersctl.api.KubeObject`` and its kinds' views are ObjectRefs."""

    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def resource_version(self) -> str: ...
    @property
    def api_version(self) -> str: ...
    @property
    def kind(self) -> str: ...


@dataclass(frozen=True)
class Request:
    """The work-queue key: one object of the controller's kind (``Request(namespace, name)``)."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Result:
    """What the runtime does after a successful reconcile.

    ``requeue_after`` (seconds) schedules another reconcile of the same key; ``None``
    waits for the next watch event or resync. A reconcile that raises is requeued with
    exponential backoff instead.
    """

    requeue_after: float | None = None


class RetryLater(Failure):
    """A reconcile failed for a reason that passes with time, and the failure says how
    long: the runtime requeues the key after ``after`` seconds (or its backoff, when
    longer) rather than at the backoff's pace alone (a rate-limited GitHub, whose limit
    resets at a known time: hammering it sooner only extends the wait)."""

    def __init__(self, message: str, *, after: float) -> None:
        super().__init__(message)
        self.after = after


class Reconciler(Protocol):
    def reconcile(self, request: Request) -> Result:
        """Drive the object named by ``request`` toward its spec.

        Raising means "requeue with backoff". The runtime never runs two reconciles of
        one key at once.
        """
        ...


class EventRecorder(Protocol):
    def event(self, obj: ObjectRef, *, type: str, reason: EventReason, message: str) -> None:
        """Record a Kubernetes Event about ``obj``. ``type`` is "Normal" or "Warning";
        ``reason`` one of the one enum's (a literal here would be a reason no one can
        look up).

        Best effort: never raises (an event that cannot be written is logged).
        """
        ...
