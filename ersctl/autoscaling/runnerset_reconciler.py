"""The AutoscalingRunnerSet (ARS) reconciler: one scale set from registration to teardown.

One reconcile, in order (each step that writes returns; the write's watch event, or a
requeue, brings the next step):

1. Deleting: tear down top-down (:meth:`_teardown`): the listener first (no new
   patches), then the EphemeralRunnerSets (their controller lets busy runners finish),
   then the scale set on GitHub, then ARC's cleanup-protection finalizer on every
   object the ARS's annotations name (the credentials Secret; from ARC's chart also its
   ServiceAccounts, Roles and RoleBindings), then our finalizer. Each stage is
   confirmed with an uncached read before the next starts: a lagging cache must never
   let the scale set go while runners still use it.
2. Bad input (URL, Secret, template, min/max, runner group, a name taken in another
   group): a Warning Event naming the field and ``status.state``; nothing else changes.
3. Our finalizer, then the scale set: found by ARC's ``runner-scale-set-id`` annotation
   or by name in its runner group, registered when missing; its name, runner group and
   labels updated by ARC's rules (an empty ``spec.runnerGroup`` or
   ``spec.runnerScaleSetName`` leaves the scale set's as it is).
4. The credentials Secret gets ARC's cleanup-protection finalizer while used.
5. The EphemeralRunnerSet (ERS) it owns: created (``generateName: <ars>-``) or brought
   to the template; a changed runner spec advances ``spec.actionableRevision``.
6. The AutoscalingListener (AL): created (after checking the scale set still exists)
   or patched in place when min/max, the template or the credentials change.
7. Status: the set's counts, ``phase`` and ``state``.

An ARS made by ARC's Helm chart is adopted by the same steps: its annotations name the
scale set (no second registration), its ERS is found by ownerReference and kept (its
runner spec compared by content, so no runner is rebuilt for a hash ARC computed).
"""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Final

from ersctl.api import (
    ARS_FINALIZER,
    CLEANUP_PROTECTED,
    CLEANUP_PROTECTED_SECRET,
    CLEANUP_PROTECTION_FINALIZER,
    CLEANUP_SECRET_ANNOTATION,
    RUNNER_GROUP_NAME_ANNOTATION,
    RUNNER_SCALE_SET_ID_ANNOTATION,
    RUNNER_SCALE_SET_NAME_ANNOTATION,
    AutoscalingListener,
    AutoscalingRunnerSet,
    CleanupProtected,
    EphemeralRunnerSet,
    FieldError,
    JsonObject,
    KubeObject,
)
from ersctl.autoscaling import runnerset_desired as desired
from ersctl.autoscaling.runnerset_ports import (
    ArsGoneError,
    EventRecorder,
    Objects,
    RunnerGroupNotFoundError,
    ScaleSetNameTakenError,
    ScaleSetService,
    ScaleSetServices,
)
from ersctl.kube.errors import ConflictError, ForbiddenError, NotFoundError, NotLeaderError
from ersctl.kube.reconcile import Request, Result
from ersctl.naming import listener_name
from ersctl.platform.errors import Failure
from ersctl.scaleset.ports import CredentialsFieldError, ServiceError

log = logging.getLogger(__name__)

NORMAL: Final = "Normal"
WARNING: Final = "Warning"


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    FAILED = "Failed"
    DELETING = "Deleting"


class Reason(StrEnum):
    """Event reasons, and the ``status.state`` values they stand for."""

    RUNNING = "Running"
    INVALID_SPEC = "InvalidSpec"
    SECRET_UNUSABLE = "CredentialsUnusable"  # noqa: S105
    RUNNER_GROUP_NOT_FOUND = "RunnerGroupNotFound"
    NAME_TAKEN = "ScaleSetNameTaken"
    GITHUB_FAILED = "GitHubCallFailed"
    RECONCILE_FAILED = "ReconcileFailed"
    SCALE_SET_CREATED = "ScaleSetCreated"
    SCALE_SET_FOUND = "ScaleSetFound"
    SCALE_SET_UPDATED = "ScaleSetUpdated"
    SCALE_SET_GONE = "ScaleSetGone"
    SCALE_SET_DELETED = "ScaleSetDeleted"
    RUNNER_SET_CREATED = "RunnerSetCreated"
    RUNNER_SET_REMOVED = "ExtraRunnerSetDeleted"
    TEMPLATE_CHANGED = "RunnerTemplateChanged"
    LISTENER_CREATED = "ListenerCreated"
    LISTENER_UPDATED = "ListenerUpdated"
    WAITING_FOR_LISTENER = "WaitingForListener"
    STOPPING_LISTENER = "StoppingListener"
    DRAINING_RUNNERS = "DrainingRunners"


class AutoscalingRunnerSetReconciler:
    """Implements ``ersctl.kube.reconcile.Reconciler`` for AutoscalingRunnerSets.
    Holds no per-reconcile state (thread-safe across keys).

    ``listener_namespace``: where AutoscalingListeners are made (ARC: the controller's
    namespace); None puts each in its ARS's namespace. ``exclude_label_prefixes``: ARS
    labels with these prefixes are not propagated (ARC's flag). ``retry_after``: the requeue delay when the credentials Secret is unusable (Secrets
    are not watched, so a fix enqueues nothing). ``teardown_poll``: the requeue delay
    while waiting for the listener or the runner sets to go (their delete events
    normally come first).
    """

    def __init__(
        self,
        *,
        objects: Objects,
        services: ScaleSetServices,
        events: EventRecorder,
        listener_namespace: str | None = None,
        exclude_label_prefixes: tuple[str, ...] = (),
        retry_after: float = 30.0,
        teardown_poll: float = 5.0,
    ) -> None:
        self._objects = objects
        self._exclude_label_prefixes = exclude_label_prefixes
        self._services = services
        self._events = events
        self._listener_namespace = listener_namespace
        self._retry_after = retry_after
        self._teardown_poll = teardown_poll

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
        except (ConflictError, NotLeaderError):
            raise  # the cache was behind, or the lease is gone: retry quietly
        except ArsGoneError:
            # Another reconcile finished the teardown: nothing is left to do (a Warning
            # here would report a failure for a deletion that succeeded).
            log.debug("%s is gone", ars.key)
            return Result()
        except ServiceError as exc:
            self._set_state(ars, ars.phase or Phase.PENDING, Reason.GITHUB_FAILED, str(exc))
            self._event(ars, WARNING, Reason.GITHUB_FAILED, str(exc))
            raise
        except Failure as exc:
            self._event(ars, WARNING, Reason.RECONCILE_FAILED, str(exc))
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
        desired.validate(ars)
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
        # GitHub is called (and the credentials Secret read) only by a step with
        # something to do: a steady ARS costs no request but its status write.
        if not ars.scale_set_id:
            with self._services.scale_sets_for(ars) as service:
                self._register(ars, service)
            return Result()
        if self._update_scale_set(ars) or self._protect_secret(ars):
            return Result()
        ers = self._runner_set(ars)
        listener = None if ers is None else self._ensure_listener(ars, ers)
        if listener is None:
            self._set_state(ars, Phase.PENDING, Reason.WAITING_FOR_LISTENER, "", ers)
        else:
            self._set_state(ars, Phase.RUNNING, Reason.RUNNING, "", ers)
        return Result()

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

    # -- the credentials Secret and ARC's cleanup protection ----------------------------

    def _protect_secret(self, ars: AutoscalingRunnerSet) -> bool:
        """ARC's cleanup-protection finalizer on the credentials Secret while the ARS uses
        it (so deleting it cannot strand the teardown); moved when the ARS names another
        Secret. True when the ARS was patched (its annotation names the Secret)."""
        secret = ars.github_config_secret
        protected = ars.annotations.get(CLEANUP_SECRET_ANNOTATION)
        if protected == secret:
            return False
        if protected:
            self._release(CLEANUP_PROTECTED_SECRET, ars.namespace, protected)
        live = self._objects.get_builtin("secrets", ars.namespace, secret)
        if live is None:
            raise CredentialsFieldError("spec.githubConfigSecret", f"Secret {secret} not found")
        finalizers = (live.get("metadata") or {}).get("finalizers") or []
        if CLEANUP_PROTECTION_FINALIZER not in finalizers:
            self._objects.patch_builtin(
                "secrets",
                ars.namespace,
                secret,
                {
                    "metadata": {
                        "finalizers": [*finalizers, CLEANUP_PROTECTION_FINALIZER],
                        "resourceVersion": (live.get("metadata") or {}).get("resourceVersion"),
                    }
                },
            )
        self._objects.patch_ars(
            ars, {"metadata": {"annotations": {CLEANUP_SECRET_ANNOTATION: secret}}}
        )
        return True

    def _release(self, target: CleanupProtected, namespace: str, name: str) -> None:
        """Take ARC's cleanup-protection finalizer, and no other, off one object an ARS
        named. Gone already is fine; any other failure raises (the ARS keeps its
        finalizer and the teardown is retried)."""
        try:
            live = self._objects.get_builtin(target.plural, namespace, name)
        except ForbiddenError:
            if not target.forbidden_is_gone:
                raise
            return
        meta = (live or {}).get("metadata") or {}
        finalizers = meta.get("finalizers") or []
        if CLEANUP_PROTECTION_FINALIZER not in finalizers:
            return
        kept = [f for f in finalizers if f != CLEANUP_PROTECTION_FINALIZER]
        try:
            # Locked by resourceVersion: a finalizer another controller added meanwhile
            # is never dropped by a merge patch written from an older list.
            self._objects.patch_builtin(
                target.plural,
                namespace,
                name,
                {"metadata": {"finalizers": kept, "resourceVersion": meta.get("resourceVersion")}},
            )
        except NotFoundError:
            return  # deleted between the read and the patch

    # -- the EphemeralRunnerSet ----------------------------------------------------------

    def _runner_set(self, ars: AutoscalingRunnerSet) -> EphemeralRunnerSet | None:
        """The ERS the ARS owns, brought to its template; None while one is created."""
        owned = [ers for ers in self._objects.owned_runner_sets(ars) if not ers.is_deleting]
        if not owned:
            # The cache may not show a set created a moment ago: ask the server before
            # creating (generateName would happily make a second one).
            owned = [
                ers
                for ers in self._objects.owned_runner_sets(ars, live=True)
                if not ers.is_deleting
            ]
        if not owned:
            created = self._objects.create_runner_set(desired.new_runner_set(ars, ars.scale_set_id))
            self._event(ars, NORMAL, Reason.RUNNER_SET_CREATED, f"created {created.name}")
            return None
        *extra, ers = owned
        for old in extra:
            # ARC (before revisions) rolled a template out by a new set per template;
            # an adopted leftover drains like any deleted set (busy runners finish).
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

    # -- the AutoscalingListener ---------------------------------------------------------

    def _listener_key(self, ars: AutoscalingRunnerSet) -> tuple[str, str]:
        namespace = self._listener_namespace or ars.namespace
        return namespace, listener_name(ars.namespace, ars.name)

    def _ensure_listener(
        self, ars: AutoscalingRunnerSet, ers: EphemeralRunnerSet
    ) -> AutoscalingListener | None:
        namespace, name = self._listener_key(ars)
        want = desired.new_listener(
            ars,
            scale_set_id=ars.scale_set_id,
            runner_set_name=ers.name,
            namespace=namespace,
        )
        live = self._objects.get_listener(namespace, name)
        if live is None:
            # The listener bakes the scale set id in and crash-loops when it is gone
            # (deleted in GitHub's settings): register again rather than start it.
            with self._services.scale_sets_for(ars) as service:
                gone = service.get(ars.scale_set_id) is None
            if gone:
                self._objects.patch_ars(
                    ars, {"metadata": {"annotations": {RUNNER_SCALE_SET_ID_ANNOTATION: None}}}
                )
                self._event(
                    ars, WARNING, Reason.SCALE_SET_GONE, f"scale set {ars.scale_set_id} is gone"
                )
                return None
            created = self._objects.create_listener(want)
            self._event(ars, NORMAL, Reason.LISTENER_CREATED, f"created {namespace}/{name}")
            return created
        if live.is_deleting:
            return None
        patch = desired.listener_update(live.raw, want)
        if patch is not None:
            live = self._objects.patch_listener(live, patch)
            self._event(ars, NORMAL, Reason.LISTENER_UPDATED, f"updated {namespace}/{name}")
        return live

    # -- teardown ------------------------------------------------------------------------

    def _teardown(self, ars: AutoscalingRunnerSet) -> Result:
        namespace, name = self._listener_key(ars)
        listener = self._objects.get_listener(namespace, name, live=True)
        if listener is not None:
            if not listener.is_deleting:
                self._objects.delete_listener(listener)
            self._set_state(ars, Phase.DELETING, Reason.STOPPING_LISTENER, "")
            return Result(requeue_after=self._teardown_poll)
        sets = self._objects.owned_runner_sets(ars, live=True)
        if sets:
            for ers in sets:
                if not ers.is_deleting:
                    self._objects.delete_runner_set(ers)
            counts = desired.runner_counts(sets[-1])
            self._set_state(ars, Phase.DELETING, Reason.DRAINING_RUNNERS, "", counts=counts)
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
        for target in CLEANUP_PROTECTED:
            named = ars.annotations.get(target.annotation)
            if named:
                self._release(target, ars.namespace, named)
        kept = [f for f in ars.finalizers if f != ARS_FINALIZER]
        self._objects.patch_ars(
            ars, {"metadata": {"finalizers": kept, "resourceVersion": ars.resource_version}}
        )
        return Result()

    # -- status and events ---------------------------------------------------------------

    def _set_state(
        self,
        ars: AutoscalingRunnerSet,
        phase: str,
        state: str,
        message: str,
        ers: EphemeralRunnerSet | None = None,
        *,
        counts: JsonObject | None = None,
    ) -> None:
        if counts is None:
            counts = desired.runner_counts(ers)
        patch = desired.status_update(ars, phase=phase, state=state, message=message, counts=counts)
        if patch is not None:
            self._objects.patch_ars_status(ars, patch)

    def _event(self, obj: KubeObject, type_: str, reason: str, message: str) -> None:
        log.log(logging.WARNING if type_ == WARNING else logging.INFO, "%s: %s", obj.key, message)
        self._events.event(obj, type=type_, reason=reason, message=message)
