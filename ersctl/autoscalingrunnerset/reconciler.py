"""The AutoscalingRunnerSet (ARS) reconciler: one scale set from registration to teardown.

One reconcile, in order (each step that writes returns; the write's watch event, or a
requeue, brings the next step):

1. Deleting: tear down top-down (:meth:`_teardown`): every listener of the ARS first,
   wherever it is (no new patches), then the EphemeralRunnerSets (their controller lets
   busy runners finish), then the scale set on GitHub, then ARC's cleanup-protection
   finalizer on every object the ARS's annotations name
   (``ersctl.autoscalingrunnerset.cleanup_protection``), then our finalizer. Each stage is
   confirmed with an uncached read before the next starts: a lagging cache must never
   let the scale set go while runners still use it.
2. Our finalizer, first, as ARC adds it: whatever comes next, deleting the ARS runs the
   teardown (an ARS refused for bad input still releases what ARC's chart protected).
3. Bad input (URL, Secret, template, min/max, runner group, a name taken in another
   group): a Warning Event naming the field and ``status.state``; nothing else changes.
4. The scale set: found by ARC's ``runner-scale-set-id`` annotation or by name in its
   runner group, registered when missing; its name, runner group and labels updated by
   ARC's rules (an empty ``spec.runnerGroup`` or ``spec.runnerScaleSetName`` leaves the
   scale set's as it is).
5. The credentials Secret gets ARC's cleanup-protection finalizer while used.
6. The EphemeralRunnerSet (ERS) it owns: created, named after the ARS (ARC 0.15), or
   brought to the template in place; a changed runner spec (by meaning:
   ``ersctl.autoscalingrunnerset.template_equality``) advances ``spec.actionableRevision``.
7. The AutoscalingListener (AL), at ARC's key (``ersctl.autoscalingrunnerset.desiredlistener``):
   any other listener of the ARS is deleted first (one session per scale set); then
   created (after checking the scale set still exists) or patched in place. A listener
   that keeps exiting has its scale set checked again, and one gone from GitHub is
   registered again (ARC's #4571, extended to a listener already crash-looping).
8. Status: ``phase``, ``state`` and ``message``, written only when one of them changes
   (the set's runner counts are metrics, not status: ``desired.RETIRED_COUNTS``);
   ``Failed`` with the reason when no listener Pod can start (no listener image).

An ARS made by ARC's Helm chart is adopted by the same steps: its annotations name the
scale set (no second registration), its ERS is found by ownerReference and kept
(whatever its name: ARC 0.14 generated it), its listener found at ARC's key.
"""

from __future__ import annotations

import logging

from ersctl.api import (
    ARS_FINALIZER,
    RUNNER_GROUP_NAME_ANNOTATION,
    RUNNER_SCALE_SET_ID_ANNOTATION,
    RUNNER_SCALE_SET_NAME_ANNOTATION,
    AutoscalingRunnerSet,
    EphemeralRunnerSet,
    FieldError,
    KubeObject,
)
from ersctl.autoscalingrunnerset import cleanup_protection, desired
from ersctl.autoscalingrunnerset.listener import ListenerStep
from ersctl.autoscalingrunnerset.ports import (
    ArsGoneError,
    EventRecorder,
    Objects,
    RunnerGroupNotFoundError,
    ScaleSetNameTakenError,
    ScaleSetService,
    ScaleSetServices,
)
from ersctl.autoscalingrunnerset.states import NORMAL, WARNING, Phase
from ersctl.kube.errors import ConflictError, NotLeaderError
from ersctl.kube.reconcile import Request, Result
from ersctl.platform.errors import Failure
from ersctl.reasons import Reason
from ersctl.scaleset.ports import CredentialsFieldError, ServiceError

log = logging.getLogger(__name__)


class RunnerSetNameTakenError(Failure):
    """The ERS name the ARS would create belongs to another owner."""


class AutoscalingRunnerSetReconciler:
    """Implements ``ersctl.kube.reconcile.Reconciler`` for AutoscalingRunnerSets.
    Holds no per-reconcile state (thread-safe across keys; the listener step remembers,
    per ARS, the listener exit it last checked the scale set for).

    ``listener_namespace``: where AutoscalingListeners are made (ARC: the controller's
    namespace); None puts each in its ARS's namespace. ``exclude_label_prefixes``: ARS
    labels with these prefixes are not propagated (ARC's flag). ``listener_blocker``: why no
    listener Pod can start here ("" when nothing is known to stop one), reported as the
    ARS's ``Failed`` phase instead of ``Running``. ``retry_after``: the requeue delay
    when the credentials Secret is unusable (Secrets are not watched, so a fix enqueues
    nothing). ``teardown_poll``: the requeue delay while waiting for a listener or the
    runner sets to go (their delete events normally come first).
    """

    def __init__(
        self,
        *,
        objects: Objects,
        services: ScaleSetServices,
        events: EventRecorder,
        listener_namespace: str | None = None,
        exclude_label_prefixes: tuple[str, ...] = (),
        listener_blocker: str = "",
        retry_after: float = 30.0,
        teardown_poll: float = 5.0,
    ) -> None:
        self._objects = objects
        self._exclude_label_prefixes = exclude_label_prefixes
        self._services = services
        self._events = events
        self._retry_after = retry_after
        self._teardown_poll = teardown_poll
        self._listener = ListenerStep(
            objects=objects,
            services=services,
            event=self._event,
            namespace=listener_namespace,
            blocker=listener_blocker,
            poll=teardown_poll,
        )

    def reconcile(self, request: Request) -> Result:
        """Reconcile one ARS. Raises (after a Warning Event) to requeue with backoff."""
        ars = self._objects.get_ars(request.namespace, request.name)
        if ars is None:
            return Result()
        ars = ars.without_label_prefixes(self._exclude_label_prefixes)
        try:
            return self._reconcile(ars)
        except FieldError as exc:
            reason = (
                Reason.SECRET_UNUSABLE
                if isinstance(exc, CredentialsFieldError)
                else Reason.INVALID_SPEC
            )
            return self._refuse(ars, reason, str(exc), retry=reason is Reason.SECRET_UNUSABLE)
        except RunnerGroupNotFoundError as exc:
            return self._refuse(ars, Reason.RUNNER_GROUP_NOT_FOUND, f"spec.runnerGroup: {exc}")
        except ScaleSetNameTakenError as exc:
            return self._refuse(ars, Reason.NAME_TAKEN, f"spec.runnerScaleSetName: {exc}")
        except RunnerSetNameTakenError as exc:
            return self._refuse(ars, Reason.RUNNER_SET_NAME_TAKEN, str(exc), retry=True)
        except (ConflictError, NotLeaderError):
            raise  # the cache was behind, or the lease is gone: retry quietly
        except ArsGoneError:
            # Another reconcile finished the teardown: nothing is left to do (a Warning
            # here would report a failure for a deletion that succeeded).
            log.debug("%s is gone", ars.key)
            return Result()
        except ServiceError as exc:
            self._set_state(ars, ars.phase or Phase.PENDING, Reason.GITHUB_FAILED, str(exc))
            self._record(ars, WARNING, Reason.GITHUB_FAILED, str(exc))
            raise
        except Failure as exc:
            self._record(ars, WARNING, Reason.RECONCILE_FAILED, str(exc))
            raise

    def _refuse(
        self, ars: AutoscalingRunnerSet, reason: Reason, message: str, *, retry: bool = False
    ) -> Result:
        """Bad input: say which field, change nothing else (a deleting ARS keeps its
        phase: its teardown waits for the fix)."""
        self._event(ars, WARNING, reason, message)
        phase = Phase.DELETING if ars.is_deleting else Phase.FAILED
        self._set_state(ars, phase, reason, message)
        return Result(requeue_after=self._retry_after if retry else None)

    def _reconcile(self, ars: AutoscalingRunnerSet) -> Result:
        if ars.is_deleting:
            return self._teardown(ars) if ars.has_finalizer(ARS_FINALIZER) else Result()
        if not ars.has_finalizer(ARS_FINALIZER):
            self._objects.patch_ars(
                ars,
                {
                    "metadata": {
                        "finalizers": [*ars.finalizers, ARS_FINALIZER],
                        "resourceVersion": ars.resource_version,
                    }
                },
            )
            return Result()
        desired.validate(ars)
        # GitHub is called (and the credentials Secret read) only by a step with
        # something to do: a steady ARS costs no request but its status write.
        if not ars.scale_set_id:
            with self._services.scale_sets_for(ars) as service:
                self._register(ars, service)
            return Result()
        if self._update_scale_set(ars) or cleanup_protection.protect_secret(self._objects, ars):
            return Result()
        ers = self._runner_set(ars)
        if ers is None:
            self._set_state(ars, Phase.PENDING, Reason.WAITING_FOR_LISTENER, "")
            return Result()
        outcome = self._listener.reconcile(ars, ers)
        self._set_state(ars, outcome.phase, outcome.reason, outcome.message)
        return Result(requeue_after=outcome.requeue_after)

    # -- the scale set on GitHub ---------------------------------------------------------

    def _register(self, ars: AutoscalingRunnerSet, service: ScaleSetService) -> None:
        """Find the scale set by name in its group (an ARS that lost its annotation, or
        one ARC registered) or register it; record it in ARC's annotations."""
        name = ars.runner_scale_set_name
        group_id = service.runner_group_id(ars.runner_group)
        found = service.find(group_id, name)
        if found is None:
            found = service.create(
                name=name, runner_group_id=group_id, labels=desired.scale_set_labels(ars)
            )
            self._event(ars, NORMAL, Reason.SCALE_SET_CREATED, f"registered scale set {found.id}")
        else:
            self._event(ars, NORMAL, Reason.SCALE_SET_FOUND, f"using scale set {found.id}")
        self._objects.patch_ars(
            ars,
            {
                "metadata": {
                    "annotations": {
                        RUNNER_SCALE_SET_ID_ANNOTATION: str(found.id),
                        RUNNER_SCALE_SET_NAME_ANNOTATION: found.name,
                        RUNNER_GROUP_NAME_ANNOTATION: found.runner_group_name,
                        desired.SCALE_SET_LABELS_ANNOTATION: ",".join(found.labels),
                    },
                    "labels": desired.github_url_labels(ars.github_config_url),
                }
            },
        )

    def _update_scale_set(self, ars: AutoscalingRunnerSet) -> bool:
        """ARC's update rules; True when the scale set was updated (annotations patched)."""
        changes = desired.scale_set_changes(ars)
        if not changes:
            return False
        wanted_labels = desired.scale_set_labels(ars)
        with self._services.scale_sets_for(ars) as service:
            group_id = (
                service.runner_group_id(ars.runner_group) if "runner group" in changes else None
            )
            updated = service.update(
                ars.scale_set_id,
                name=ars.runner_scale_set_name if "name" in changes else None,
                runner_group_id=group_id,
                labels=wanted_labels if "labels" in changes else None,
            )
        self._objects.patch_ars(
            ars,
            {
                "metadata": {
                    "annotations": {
                        RUNNER_SCALE_SET_NAME_ANNOTATION: updated.name,
                        RUNNER_GROUP_NAME_ANNOTATION: updated.runner_group_name,
                        desired.SCALE_SET_LABELS_ANNOTATION: ",".join(updated.labels),
                    }
                }
            },
        )
        what = ", ".join(changes)
        self._event(ars, NORMAL, Reason.SCALE_SET_UPDATED, f"scale set {updated.id}: {what}")
        return True

    # -- the EphemeralRunnerSet ----------------------------------------------------------

    def _runner_set(self, ars: AutoscalingRunnerSet) -> EphemeralRunnerSet | None:
        """The ERS the ARS owns, brought to its template; None while one is created."""
        owned = [ers for ers in self._objects.owned_runner_sets(ars) if not ers.is_deleting]
        if not owned:
            # The cache may not show a set created a moment ago: ask the server before
            # creating.
            owned = [
                ers
                for ers in self._objects.owned_runner_sets(ars, live=True)
                if not ers.is_deleting
            ]
        if not owned:
            self._create_runner_set(ars)
            return None
        *extra, ers = owned
        for old in extra:
            # ARC 0.14 rolled a template out by a new set per template; an adopted
            # leftover drains like any deleted set (busy runners finish).
            self._objects.delete_runner_set(old)
            self._event(ars, NORMAL, Reason.RUNNER_SET_REMOVED, f"deleted {old.name}")
        patch = desired.runner_set_update(ers, ars, ars.scale_set_id)
        if patch is not None:
            ers = self._objects.patch_runner_set(ers, patch)
            revision = patch.get("spec", {}).get("actionableRevision")
            if revision is not None:
                self._event(
                    ars,
                    NORMAL,
                    Reason.TEMPLATE_CHANGED,
                    f"{ers.name}: actionableRevision {revision}: idle runners are rebuilt",
                )
        return ers

    def _create_runner_set(self, ars: AutoscalingRunnerSet) -> None:
        """Create the ERS named after the ARS. One of that name that nothing owns (left
        by a deleted ARS with ``--cascade=orphan``) is adopted, as ARC 0.15, which finds
        its set by name, would use it; one another object owns is refused by name."""
        body = desired.new_runner_set(ars, ars.scale_set_id)
        try:
            created = self._objects.create_runner_set(body)
        except ConflictError:
            existing = self._objects.get_runner_set(ars.namespace, ars.name)
            if existing is None or existing.is_deleting:
                raise  # gone meanwhile, or going: try again
            owner = existing.controller_owner()
            if owner is not None and owner.get("uid") != ars.uid:
                raise RunnerSetNameTakenError(
                    f"EphemeralRunnerSet {existing.key} belongs to {owner.get('kind')} "
                    f"{owner.get('name')}: delete it, and this scale set makes its own"
                ) from None
            refs = [*existing.owner_references, desired.owner_reference(ars)]
            self._objects.patch_runner_set(
                existing,
                {
                    "metadata": {
                        "ownerReferences": refs,
                        "resourceVersion": existing.resource_version,
                    }
                },
            )
            self._event(ars, NORMAL, Reason.RUNNER_SET_ADOPTED, f"adopted {existing.name}")
            return
        self._event(ars, NORMAL, Reason.RUNNER_SET_CREATED, f"created {created.name}")

    # -- teardown ------------------------------------------------------------------------

    def _teardown(self, ars: AutoscalingRunnerSet) -> Result:
        listeners = self._listener.listeners_of(ars)
        if listeners:
            for listener in listeners:
                if not listener.is_deleting:
                    self._objects.delete_listener(listener)
            self._set_state(ars, Phase.DELETING, Reason.STOPPING_LISTENER, "")
            return Result(requeue_after=self._teardown_poll)
        sets = self._objects.owned_runner_sets(ars, live=True)
        if sets:
            for ers in sets:
                if not ers.is_deleting:
                    self._objects.delete_runner_set(ers)
            self._set_state(ars, Phase.DELETING, Reason.DRAINING_RUNNERS, "")
            return Result(requeue_after=self._teardown_poll)
        if ars.scale_set_id:
            with self._services.scale_sets_for(ars) as service:
                service.delete(ars.scale_set_id)
            ars = self._objects.patch_ars(
                ars, {"metadata": {"annotations": {RUNNER_SCALE_SET_ID_ANNOTATION: None}}}
            )
            self._event(ars, NORMAL, Reason.SCALE_SET_DELETED, "deleted the scale set on GitHub")
        # Last before our own finalizer, as ARC does: what ARC's chart (or we) protected
        # for this ARS would otherwise hold `helm uninstall` and the namespace forever.
        cleanup_protection.release_all(self._objects, ars)
        kept = [f for f in ars.finalizers if f != ARS_FINALIZER]
        self._objects.patch_ars(
            ars, {"metadata": {"finalizers": kept, "resourceVersion": ars.resource_version}}
        )
        self._listener.forget(ars)
        return Result()

    # -- status and events ---------------------------------------------------------------

    def _set_state(self, ars: AutoscalingRunnerSet, phase: str, state: str, message: str) -> None:
        patch = desired.status_update(ars, phase=phase, state=state, message=message)
        if patch is not None:
            self._objects.patch_ars_status(ars, patch)

    def _event(self, obj: KubeObject, type_: str, reason: Reason, message: str) -> None:
        """The Event, and its line in the log."""
        level = logging.WARNING if type_ == WARNING else logging.INFO
        log.log(level, "%s", message, extra={"fields": {"reason": reason}})
        self._record(obj, type_, reason, message)

    def _record(self, obj: KubeObject, type_: str, reason: Reason, message: str) -> None:
        """The Event alone: for a reconcile that then fails, which the runtime logs."""
        self._events.event(obj, type=type_, reason=reason, message=message)
