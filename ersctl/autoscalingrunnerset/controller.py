"""Registers the AutoscalingRunnerSet controller on the runtime's manager.

Its primary resource is ``autoscalingrunnersets`` (spec and metadata changes; its own
status writes enqueue nothing); it owns EphemeralRunnerSets (every event: a set changed
or gone is brought back to its ARS's template) and is told about AutoscalingListeners
through their ``spec.autoscalingRunnerSetNamespace/Name`` (ARC puts a listener in the controller's
namespace, where no ownerReference can reach the ARS): their spec and metadata
changes, and each listener exit the listener controller records. Secrets, and the ServiceAccounts,
Roles and RoleBindings whose cleanup-protection finalizer a teardown removes, are read
uncached and not watched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from ersctl.api import (
    AL_PLURAL,
    ARS_PLURAL,
    ERS_PLURAL,
    AutoscalingListener,
    AutoscalingRunnerSet,
    EphemeralRunnerSet,
)
from ersctl.arcclient.kinds import AUTOSCALING_SETS, LISTENERS, SETS
from ersctl.arcclient.reader import ApiReader
from ersctl.arcclient.writer import Writer
from ersctl.autoscalingrunnerset import desiredlistener
from ersctl.autoscalingrunnerset.ports import ArsGoneError, ScaleSetServices
from ersctl.autoscalingrunnerset.reconciler import AutoscalingRunnerSetReconciler
from ersctl.kube.copies import json_copy
from ersctl.kube.errors import NotFoundError
from ersctl.kube.manager import Manager
from ersctl.kube.predicates import (
    SPEC_OR_METADATA_PREDICATE,
    AlwaysPass,
    UpdateFilter,
    spec_or_metadata_changed,
)
from ersctl.kube.reconcile import Request
from ersctl.kube.store import OWNER_UID_INDEX, Store, metadata

CONTROLLER_NAME: Final = "autoscalingrunnerset"

JsonObject = dict[str, Any]


def listener_update_matters(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """An AL update matters to its ARS when its spec or metadata changed, or when its
    listener exited again (the ARS then checks that its scale set still exists)."""
    exit_time = "lastListenerExitTime"
    return spec_or_metadata_changed(old, new) or (old.get("status") or {}).get(exit_time) != (
        new.get("status") or {}
    ).get(exit_time)


LISTENER_PREDICATE: Final = UpdateFilter(listener_update_matters)


def listener_owner(obj: Any) -> Iterable[Request]:
    """The ARS an AutoscalingListener names in its spec."""
    spec = obj.get("spec") if hasattr(obj, "get") else None
    if not isinstance(spec, dict):
        return []
    namespace, name = (
        spec.get("autoscalingRunnerSetNamespace"),
        spec.get("autoscalingRunnerSetName"),
    )
    if isinstance(namespace, str) and isinstance(name, str) and namespace and name:
        return [Request(namespace, name)]
    return []


class KubeObjects:
    """Implements ``ersctl.autoscalingrunnerset.ports.Objects``: reads from the manager's caches
    (or, ``live``, the API reader), writes through the fenced writer."""

    def __init__(
        self, *, sets: Store, runner_sets: Store, listeners: Store, api: ApiReader, writer: Writer
    ) -> None:
        self._sets = sets
        self._runner_sets = runner_sets
        self._listeners = listeners
        self._api = api
        self._writer = writer

    def get_ars(self, namespace: str, name: str) -> AutoscalingRunnerSet | None:
        raw = self._sets.get(namespace, name)
        return None if raw is None else AutoscalingRunnerSet(json_copy(raw))

    def owned_runner_sets(
        self, ars: AutoscalingRunnerSet, *, live: bool = False
    ) -> list[EphemeralRunnerSet]:
        if live:
            found = [
                EphemeralRunnerSet(raw) for raw in self._api.list_objects(ERS_PLURAL, ars.namespace)
            ]
            found = [ers for ers in found if (ers.controller_owner() or {}).get("uid") == ars.uid]
        else:
            found = [
                EphemeralRunnerSet(json_copy(raw))
                for raw in self._runner_sets.by_index(OWNER_UID_INDEX, ars.uid)
                if metadata(raw).get("namespace") == ars.namespace
            ]
        found.sort(key=lambda ers: (ers.creation_timestamp, ers.name))
        return found

    def get_runner_set(self, namespace: str, name: str) -> EphemeralRunnerSet | None:
        raw = self._api.get_object(ERS_PLURAL, namespace, name)
        return None if raw is None else EphemeralRunnerSet(raw)

    def listeners_of(
        self, ars: AutoscalingRunnerSet, *, live_in: str | None = None
    ) -> list[AutoscalingListener]:
        if live_in is not None:
            listed = self._api.list_objects(AL_PLURAL, live_in)
            return [AutoscalingListener(raw) for raw in listed if desiredlistener.serves(raw, ars)]
        # Filtered before the copy: a reconcile copies its own listeners, not everyone's.
        return [
            AutoscalingListener(json_copy(raw))
            for raw in self._listeners.values()
            if desiredlistener.serves(raw, ars)
        ]

    def get_listener(
        self, namespace: str, name: str, *, live: bool = False
    ) -> AutoscalingListener | None:
        if live:
            raw = self._api.get_object(AL_PLURAL, namespace, name)
        else:
            cached = self._listeners.get(namespace, name)
            raw = None if cached is None else json_copy(cached)
        return None if raw is None else AutoscalingListener(raw)

    def patch_ars(self, ars: AutoscalingRunnerSet, patch: JsonObject) -> AutoscalingRunnerSet:
        return self._patch_ars(ars, patch, status=False)

    def patch_ars_status(
        self, ars: AutoscalingRunnerSet, patch: JsonObject
    ) -> AutoscalingRunnerSet:
        return self._patch_ars(ars, patch, status=True)

    def _patch_ars(
        self, ars: AutoscalingRunnerSet, patch: JsonObject, *, status: bool
    ) -> AutoscalingRunnerSet:
        try:
            written = self._writer.patch_object(
                ARS_PLURAL, ars.namespace, ars.name, patch, status=status
            )
        except NotFoundError as exc:
            raise ArsGoneError(exc.action, status=exc.status, reason=exc.reason) from exc
        return AutoscalingRunnerSet(written)

    def create_runner_set(self, body: JsonObject) -> EphemeralRunnerSet:
        return EphemeralRunnerSet(self._writer.create_object(ERS_PLURAL, body))

    def patch_runner_set(self, ers: EphemeralRunnerSet, patch: JsonObject) -> EphemeralRunnerSet:
        return self._writer.patch_ers(ers, patch)

    def delete_runner_set(self, ers: EphemeralRunnerSet) -> None:
        self._writer.delete_object(ERS_PLURAL, ers.namespace, ers.name)

    def create_listener(self, body: JsonObject) -> AutoscalingListener:
        return AutoscalingListener(self._writer.create_object(AL_PLURAL, body))

    def patch_listener(
        self, listener: AutoscalingListener, patch: JsonObject
    ) -> AutoscalingListener:
        return AutoscalingListener(
            self._writer.patch_object(AL_PLURAL, listener.namespace, listener.name, patch)
        )

    def delete_listener(self, listener: AutoscalingListener) -> None:
        self._writer.delete_object(AL_PLURAL, listener.namespace, listener.name)

    def get_builtin(self, plural: str, namespace: str, name: str) -> JsonObject | None:
        return self._api.get_builtin(plural, namespace, name)

    def patch_builtin(
        self, plural: str, namespace: str, name: str, patch: JsonObject
    ) -> JsonObject:
        return self._writer.patch_builtin(plural, namespace, name, patch)


def add_autoscaling_runner_set_controller(
    manager: Manager,
    *,
    services: ScaleSetServices,
    listener_namespace: str | None = None,
    exclude_label_prefixes: tuple[str, ...] = (),
    listener_blocker: str = "",
    teardown_poll: float = 5.0,
    workers: int | None = None,
) -> AutoscalingRunnerSetReconciler:
    """Build the ARS reconciler and register it (and the ARS and AL informers) on
    ``manager``; writes are fenced by its leadership, GitHub calls by ``services``."""
    objects = KubeObjects(
        sets=manager.store(AUTOSCALING_SETS),
        runner_sets=manager.store(SETS),
        listeners=manager.store(LISTENERS),
        api=ApiReader(manager.api_reader),
        writer=Writer(manager.writer),
    )
    reconciler = AutoscalingRunnerSetReconciler(
        objects=objects,
        services=services,
        events=manager.events,
        listener_namespace=listener_namespace,
        exclude_label_prefixes=exclude_label_prefixes,
        listener_blocker=listener_blocker,
        teardown_poll=teardown_poll,
    )
    manager.add_controller(
        CONTROLLER_NAME,
        reconciler,
        workers=workers,
        for_=AUTOSCALING_SETS,
        owns=[SETS],
        watches={LISTENERS: listener_owner},
        predicates={
            AUTOSCALING_SETS.plural: SPEC_OR_METADATA_PREDICATE,
            SETS.plural: AlwaysPass(),
            LISTENERS.plural: LISTENER_PREDICATE,
        },
    )
    return reconciler
