"""The AutoscalingRunnerSet reconciler's listener step: one AutoscalingListener (AL) per
scale set, at ARC's key (``ersctl.autoscalingrunnerset.desiredlistener``), and no other.

- Any other listener of the ARS (named before ARC 0.13.1 hashed the group and URL, or
  in another namespace, as ARC's in its controller's namespace when ours is elsewhere)
  is deleted first, and the one at ARC's key is made only once they are gone: two
  listeners would hold two message sessions for one scale set. Before it is made, the
  API server is asked too, since the cache may lag behind a listener made moments ago.
- The AL is created when missing, after checking its scale set still exists on GitHub
  (the listener bakes the id in and crash-loops on a dead one: ARC's #4571), or patched
  in place. One whose listener keeps exiting has its scale set checked again, once per
  exit; a scale set gone from GitHub is forgotten (ARC's id annotation dropped) and its
  AL deleted, so the next reconciles register it again and make a listener for it.
- Its outcome for the ARS's status: Running, Pending with the reason, or Failed when
  no listener Pod can start here (no listener image).

Thread-safe across keys, as the reconciler: the only state is, per ARS, the listener
exit last checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ersctl.api import (
    RUNNER_SCALE_SET_ID_ANNOTATION,
    AutoscalingListener,
    AutoscalingRunnerSet,
    EphemeralRunnerSet,
    KubeObject,
)
from ersctl.autoscalingrunnerset import desiredlistener as desired
from ersctl.autoscalingrunnerset.ports import Objects, ScaleSetServices
from ersctl.autoscalingrunnerset.states import NORMAL, WARNING, Phase
from ersctl.reasons import Reason

CRASH_LOOP_EXITS: Final = 2
"""Listener exits in a row after which the scale set is looked up again on GitHub."""

Event = Callable[[KubeObject, str, Reason, str], None]
"""Records an Event: object, type, reason, message."""


@dataclass(frozen=True)
class Outcome:
    """What the ARS's status says after the listener step, and when to look again."""

    phase: Phase
    reason: Reason
    message: str = ""
    requeue_after: float | None = None


class ListenerStep:
    """See the module docstring. ``blocker``: why no listener Pod can start here ("" when
    nothing is known to stop one); ``poll``: the requeue delay while a listener goes."""

    def __init__(
        self,
        *,
        objects: Objects,
        services: ScaleSetServices,
        event: Event,
        namespace: str | None,
        blocker: str,
        poll: float,
    ) -> None:
        self._objects = objects
        self._services = services
        self._event = event
        self._namespace = namespace
        self._blocker = blocker
        self._poll = poll
        self._checked_exits: dict[str, tuple[str, str]] = {}

    def reconcile(self, ars: AutoscalingRunnerSet, ers: EphemeralRunnerSet) -> Outcome:
        """Bring the listener of ``ars`` (scaling ``ers``) to what the ARS asks for."""
        key = desired.listener_key(ars, self._namespace)
        strays, current = self._strays_and_current(ars, key)
        if strays:
            self._delete_strays(ars, strays, key)
            names = ", ".join(al.key for al in strays)
            return Outcome(Phase.PENDING, Reason.REPLACING_LISTENER, names, self._poll)
        listener = self._ensure(ars, ers, key, current)
        if listener is None:
            return Outcome(Phase.PENDING, Reason.WAITING_FOR_LISTENER)
        if self._blocker:
            if ars.state != Reason.LISTENER_CANNOT_START:
                self._event(ars, WARNING, Reason.LISTENER_CANNOT_START, self._blocker)
            return Outcome(Phase.FAILED, Reason.LISTENER_CANNOT_START, self._blocker)
        return Outcome(Phase.RUNNING, Reason.RUNNING)

    def listeners_of(self, ars: AutoscalingRunnerSet) -> list[AutoscalingListener]:
        """Every listener of ``ars``, each confirmed by an uncached read: the one at
        ARC's key and any other the cache knows of."""
        keys = {desired.listener_key(ars, self._namespace)} | {
            (al.namespace, al.name) for al in self._objects.listeners_of(ars)
        }
        found = (self._objects.get_listener(ns, name, live=True) for ns, name in sorted(keys))
        return [al for al in found if al is not None]

    def forget(self, ars: AutoscalingRunnerSet) -> None:
        """Drop what is remembered of ``ars`` (it is gone)."""
        self._checked_exits.pop(ars.key, None)

    def _delete_strays(
        self, ars: AutoscalingRunnerSet, strays: list[AutoscalingListener], key: tuple[str, str]
    ) -> None:
        for stray in strays:
            if stray.is_deleting:
                continue
            self._objects.delete_listener(stray)
            message = (
                f"deleted listener {stray.key}: this scale set's listener is {key[0]}/{key[1]}"
            )
            self._event(ars, NORMAL, Reason.STRAY_LISTENER_DELETED, message)

    def _strays_and_current(
        self, ars: AutoscalingRunnerSet, key: tuple[str, str]
    ) -> tuple[list[AutoscalingListener], AutoscalingListener | None]:
        """The other listeners of ``ars``, and the one at ``key`` (None: not made yet).

        From the cache, unless it holds neither: then the listener is about to be made,
        and the cache may not hold yet one the last reconciles made, at another key (its
        runner group changed twice in a row: two listeners would hold two message
        sessions) or at this one (a create would fail as AlreadyExists), so the API
        server is asked."""
        strays = desired.strays(self._objects.listeners_of(ars), ars, key)
        if strays:
            return strays, None
        current = self._objects.get_listener(*key)
        if current is not None:
            return [], current
        listed = self._objects.listeners_of(ars, live_in=key[0])
        current = next((al for al in listed if (al.namespace, al.name) == key), None)
        return desired.strays(listed, ars, key), current

    def _ensure(
        self,
        ars: AutoscalingRunnerSet,
        ers: EphemeralRunnerSet,
        key: tuple[str, str],
        live: AutoscalingListener | None,
    ) -> AutoscalingListener | None:
        """Make, keep or update the listener at ``key``; ``live``: the one there now."""
        namespace, name = key
        want = desired.new_listener(
            ars, scale_set_id=ars.scale_set_id, runner_set_name=ers.name, namespace=namespace
        )
        if live is None:
            if self._forget_vanished_scale_set(ars, why="before its listener starts"):
                return None
            created = self._objects.create_listener(want)
            self._event(ars, NORMAL, Reason.LISTENER_CREATED, f"created {namespace}/{name}")
            return created
        if live.is_deleting:
            return None
        if self._keeps_exiting(ars, live) and self._forget_vanished_scale_set(
            ars, why="its listener kept exiting"
        ):
            self._objects.delete_listener(live)
            return None
        patch = desired.listener_update(live.raw, want)
        if patch is not None:
            live = self._objects.patch_listener(live, patch)
            self._event(ars, NORMAL, Reason.LISTENER_UPDATED, f"updated {namespace}/{name}")
        return live

    def _keeps_exiting(self, ars: AutoscalingRunnerSet, listener: AutoscalingListener) -> bool:
        """Has ``listener`` exited :data:`CRASH_LOOP_EXITS` times in a row, with an exit
        not looked at yet? (One look per exit: a steady set costs no GitHub call.)"""
        if listener.listener_restarts < CRASH_LOOP_EXITS:
            return False
        seen = (listener.uid, listener.last_listener_exit_time)
        if self._checked_exits.get(ars.key) == seen:
            return False
        self._checked_exits[ars.key] = seen
        return True

    def _forget_vanished_scale_set(self, ars: AutoscalingRunnerSet, *, why: str) -> bool:
        """True, after dropping ARC's id annotation (the next reconcile registers the
        scale set again), when the scale set is gone from GitHub."""
        with self._services.scale_sets_for(ars) as service:
            gone = service.get(ars.scale_set_id) is None
        if gone:
            self._objects.patch_ars(
                ars, {"metadata": {"annotations": {RUNNER_SCALE_SET_ID_ANNOTATION: None}}}
            )
            message = (
                f"scale set {ars.scale_set_id} is gone from GitHub ({why}): registering it again"
            )
            self._event(ars, WARNING, Reason.SCALE_SET_GONE, message)
        return gone
