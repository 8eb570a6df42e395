"""The AutoscalingListener reconciler: one listener Pod per scale set, and what it needs.

``reconcile(Request(namespace, name))`` for an AutoscalingListener (AL), in order:

1. Gone -> done. Being deleted -> teardown in ARC's order: the Pod first (no new
   patches once it is gone; waited for, 1 s apart), then the config Secret, the proxy
   Secret, the RoleBinding, the Role and the ServiceAccount, under ARC 0.15's names and,
   when they were made for this scale set, ARC 0.14's; then the finalizer goes.
2. Everything the listener is made of is computed before anything is written: the
   credentials from the scale set's ``githubConfigSecret`` (in
   ``spec.autoscalingRunnerSetNamespace``), the CA of ``githubServerTLS``, the proxy
   credentials, the config, the Pod with ``spec.template`` merged in. Bad input is a
   ``FieldError`` naming the AL's field: a Warning Event (``InvalidListener``), a retry
   with backoff, and nothing else changes.
3. The finalizer ``autoscalinglistener.actions.github.com/finalizer`` (ARC's).
4. The ServiceAccount, Role and RoleBinding, the proxy Secret and the config Secret
   (``ersctl.autoscalinglistener.objects.ListenerNames``: ARC 0.15's names, or ARC
   0.14's for a listener whose ServiceAccount 0.14 made, so a listener taken over keeps
   its own); each created, or brought to the AL: labels and annotations merged in
   (``spec.serviceAccountMetadata`` and the others reach them, a workload-identity
   annotation included), a Role's rules and a Secret's data rewritten when they differ
   (rotated credentials, min/max, the metrics block).
5. The Pod: created when absent, unless an exited one is still backing off
   (``ersctl.autoscalinglistener.restarts``); an exited Pod is deleted, its exit
   counted in the AL's status, a Warning Event (``ListenerExited``) says when the next
   one starts; a Pod started from another config, proxy, spec or ServiceAccount
   annotations is rolled (Normal Event ``ListenerRolled``): the listener reads them
   once. Labels and annotations alone are patched onto the running Pod.
6. Steady: look again after :data:`RECHECK_SECONDS`, as the credentials Secret is not
   watched (a rotated token must reach the listener without a watch on every Secret).

A change of the runner template only does not reach the listener (it is not in the
AL), so the Pod keeps running, as ARC's does. The set controller's cleanup marker
(``status.finishedRunnerCleanupPatchID``) stays sound without that restart: it is
reset to 0 when a new revision is applied so that the rebuild of the idle runners is
not suppressed, not because the listener restarts. A listener that keeps running keeps
counting its patch IDs up from where it was, so its next patch carries an ID no marker
holds, and a marker of 0 suppresses nothing; the one collision the reset has to live
with, a restarted listener counting again from 0 through a stale marker, needs a
restart, which this avoids.

Nothing here logs or records a credential, only object names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from ersctl.api import AL_FINALIZER, AutoscalingListener, FieldError, metadata_patch
from ersctl.autoscalinglistener import objects, rbac
from ersctl.autoscalinglistener.config import listener_config_json
from ersctl.autoscalinglistener.objects import ListenerNames, ListenerSettings
from ersctl.autoscalinglistener.ports import Json, ListenerInputs, ListenerStore, ObjectStore
from ersctl.autoscalinglistener.restarts import (
    Exit,
    RestartPolicy,
    exit_of,
    restarts_after,
    seconds_until_next_pod,
)
from ersctl.ephemeralrunner.phases import format_time
from ersctl.kube.errors import ConflictError, KubeError
from ersctl.kube.reconcile import EventRecorder, Request, Result
from ersctl.reasons import Reason

log = logging.getLogger(__name__)

RECHECK_SECONDS: Final = 60.0
TEARDOWN_RETRY: Final = 1.0
"""Seconds between looks at a listener Pod being deleted (ARC: 1 s)."""
POD_EXISTS_RETRY: Final = 5.0


class ListenerReconciler:
    """Implements ``ersctl.kube.reconcile.Reconciler`` for AutoscalingListeners.
    Thread-safe if its ports are; the runtime never runs two reconciles of one AL."""

    def __init__(
        self,
        *,
        listeners: ListenerStore,
        objects: ObjectStore,
        inputs: ListenerInputs,
        events: EventRecorder,
        settings: ListenerSettings,
        policy: RestartPolicy | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._listeners = listeners
        self._objects = objects
        self._inputs = inputs
        self._events = events
        self._settings = settings
        self._policy = policy or RestartPolicy()
        self._clock = clock
        # Listener key -> uid of the last exited Pod counted: until the Pod cache shows
        # that Pod deleted, every reconcile (its own status write's event first) sees it
        # exited again, and counting it each time took one exit to an 80 s backoff.
        self._counted: dict[str, str] = {}

    def reconcile(self, request: Request) -> Result:
        """See the module docstring. Raises to be retried with backoff."""
        listener = self._listeners.get_listener(request.namespace, request.name)
        if listener is None:
            self._counted.pop(str(request), None)
            return Result()
        try:
            return self._reconcile(listener)
        except FieldError as exc:
            # Say which field, and retry with backoff: the Secret or ConfigMap it names
            # is not watched, so the retry is what finds it once it is fixed. The Event
            # only: the runtime logs the failed reconcile (a line here made two).
            self._events.event(
                listener, type="Warning", reason=Reason.INVALID_LISTENER, message=str(exc)
            )
            raise

    def _reconcile(self, listener: AutoscalingListener) -> Result:
        if listener.is_deleting:
            return self._teardown(listener)
        # Everything is computed (and bad input found) before anything is written.
        names, live_account = self._names(listener)
        access = self._inputs.github_access(listener)
        config = listener_config_json(listener, access, self._settings)
        variables = self._inputs.proxy_variables(listener)
        account = rbac.service_account(listener, names)
        identity = {
            **((live_account or {}).get("metadata") or {}).get("annotations", {}),
            **account["metadata"]["annotations"],
        }
        pod = objects.listener_pod(
            listener,
            names=names,
            config_json=config,
            settings=self._settings,
            proxy=variables,
            service_account_annotations=identity,
        )
        listener = self._ensure_finalizer(listener)
        self._bring("serviceaccounts", account, live_account)
        self._ensure("roles", rbac.role(listener, names), fields=("rules",))
        self._ensure("rolebindings", rbac.role_binding(listener, names), fields=("subjects",))
        if variables is not None:
            self._ensure(
                "secrets", objects.proxy_secret(listener, names, variables), fields=("data",)
            )
        config_changed = self._ensure(
            "secrets", objects.config_secret(listener, config), fields=("data",)
        )
        return self._sync_pod(listener, pod, config_changed=config_changed)

    # -- what the Pod needs ---------------------------------------------------------------

    def _names(self, listener: AutoscalingListener) -> tuple[ListenerNames, Json | None]:
        """The names of the listener's objects, and its ServiceAccount if it exists:
        ARC 0.15's, unless only ARC 0.14's ServiceAccount exists for this scale set."""
        current = objects.listener_names(listener)
        account = self._objects.get("serviceaccounts", listener.namespace, current.service_account)
        if account is not None:
            return current, account
        legacy = objects.listener_names(listener, legacy=True)
        if legacy.service_account != current.service_account:
            old = self._objects.get("serviceaccounts", listener.namespace, legacy.service_account)
            if old is not None and objects.made_for(old, listener):
                return legacy, old
        return current, None

    def _ensure_finalizer(self, listener: AutoscalingListener) -> AutoscalingListener:
        if listener.has_finalizer(AL_FINALIZER):
            return listener
        patch = {
            "metadata": {
                "finalizers": [*listener.finalizers, AL_FINALIZER],
                "resourceVersion": listener.resource_version,
            }
        }
        return self._listeners.patch_listener(listener, patch)

    def _ensure(self, plural: str, body: Json, *, fields: tuple[str, ...] = ()) -> bool:
        """:meth:`_bring` the object ``body`` describes, read first."""
        meta = body["metadata"]
        existing = self._objects.get(plural, meta["namespace"], meta["name"])
        return self._bring(plural, body, existing, fields=fields)

    def _bring(
        self, plural: str, body: Json, existing: Json | None, *, fields: tuple[str, ...] = ()
    ) -> bool:
        """Create the object ``body`` describes, or bring ``existing`` to it: its labels
        and annotations merged in, each of ``fields`` (``rules``, ``data``...) replaced
        when it differs. True when ``fields`` were written (or the object created)."""
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        if existing is None:
            log.info("creating %s %s/%s", plural, namespace, name)
            self._objects.create(plural, body)
            return True
        changed = {key: body[key] for key in fields if existing.get(key) != body[key]}
        patch: Json = dict(changed)
        metadata = metadata_patch(existing, body)
        if metadata:
            patch["metadata"] = metadata
        if patch:
            log.info("updating %s %s/%s", plural, namespace, name)
            self._objects.patch(plural, namespace, name, patch)
        return bool(changed)

    # -- the Pod ----------------------------------------------------------------------------

    def _sync_pod(
        self, listener: AutoscalingListener, wanted: dict[str, Any], *, config_changed: bool
    ) -> Result:
        pod = self._objects.get_pod(listener.namespace, listener.name)
        if pod is None:
            return self._create_pod(listener, wanted)
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return Result()  # its deletion event brings us back
        exited = exit_of(pod)
        if exited is not None and self._counted.get(listener.key) == exited.pod_uid:
            return Result()  # counted and deleted already: its deletion event brings us back
        if exited is not None:
            result = self._record_exit(listener, exited)
            self._counted[listener.key] = exited.pod_uid
            return result
        started_with = (meta.get("annotations") or {}).get(objects.LISTENER_HASH_ANNOTATION)
        wanted_hash = wanted["metadata"]["annotations"][objects.LISTENER_HASH_ANNOTATION]
        # A Pod without our hash (ARC's, taken over) keeps running unless its config
        # changed; from then on it carries the hash of what it is taken as.
        if (started_with is not None and started_with != wanted_hash) or (
            started_with is None and config_changed
        ):
            message = "the listener changed (its credentials, runner bounds, metrics, proxy, template or identity)"
            self._events.event(
                listener, type="Normal", reason=Reason.LISTENER_ROLLED, message=message
            )
            log.info("listener %s: %s; restarting its pod", listener.key, message)
            self._objects.delete(
                "pods", listener.namespace, listener.name, uid=str(meta.get("uid") or "")
            )
            return Result()
        metadata = metadata_patch(pod, wanted)
        if metadata:
            self._objects.patch("pods", listener.namespace, listener.name, {"metadata": metadata})
        return Result(requeue_after=RECHECK_SECONDS)

    def _create_pod(self, listener: AutoscalingListener, body: dict[str, Any]) -> Result:
        wait = seconds_until_next_pod(
            restarts=listener.listener_restarts,
            last_exit=listener.last_listener_exit_time,
            now=self._clock(),
            policy=self._policy,
        )
        if wait > 0:
            return Result(requeue_after=wait)
        try:
            self._objects.create("pods", body)
        except ConflictError:
            # Ours from an earlier pass, not yet in the watch cache: its event comes.
            return Result(requeue_after=POD_EXISTS_RETRY)
        except KubeError as exc:
            if exc.status == 422:  # the merged template makes a Pod the server refuses
                raise FieldError(
                    "spec.template", f"the listener Pod is invalid: {exc.message}"
                ) from None
            raise
        log.info("created listener pod %s", listener.key)
        return Result(requeue_after=RECHECK_SECONDS)

    def _record_exit(self, listener: AutoscalingListener, exited: Exit) -> Result:
        restarts = restarts_after(exited, previous=listener.listener_restarts, policy=self._policy)
        delay = self._policy.delay(restarts)
        self._objects.delete("pods", listener.namespace, listener.name, uid=exited.pod_uid)
        status = {"listenerRestarts": restarts, "lastListenerExitTime": format_time(self._clock())}
        self._listeners.patch_listener_status(listener, {"status": status})
        code = "" if exited.exit_code is None else f", exit code {exited.exit_code}"
        message = (
            f"the listener pod exited ({exited.reason}{code}); restart {restarts} in a row, "
            f"the next pod starts in {delay:g}s"
        )
        self._events.event(listener, type="Warning", reason=Reason.LISTENER_EXITED, message=message)
        log.warning("listener %s: %s", listener.key, message)
        return Result(requeue_after=delay)

    # -- teardown ----------------------------------------------------------------------------

    def _teardown(self, listener: AutoscalingListener) -> Result:
        if not listener.has_finalizer(AL_FINALIZER):
            return Result()
        pod = self._objects.get_pod(listener.namespace, listener.name)
        if pod is not None:
            if not (pod.get("metadata") or {}).get("deletionTimestamp"):
                log.info("listener %s is being deleted: deleting its pod", listener.key)
                self._objects.delete("pods", listener.namespace, listener.name)
            return Result(requeue_after=TEARDOWN_RETRY)
        current = objects.listener_names(listener)
        self._objects.delete("secrets", listener.namespace, current.config_secret)
        self._delete_made(listener, current, checked=False)
        legacy = objects.listener_names(listener, legacy=True)
        if legacy != current:
            # ARC 0.14's names, deleted only when made for this scale set: the name is
            # the scale set's, and nothing else should ever hold it, but a guess is not
            # a reason to delete someone's object.
            self._delete_made(listener, legacy, checked=True)
        kept = [f for f in listener.finalizers if f != AL_FINALIZER]
        patch = {"metadata": {"finalizers": kept, "resourceVersion": listener.resource_version}}
        self._listeners.patch_listener(listener, patch)
        log.info("listener %s: torn down", listener.key)
        return Result()

    def _delete_made(
        self, listener: AutoscalingListener, names: ListenerNames, *, checked: bool
    ) -> None:
        """Delete the proxy Secret, RoleBinding, Role and ServiceAccount of ``names``
        (``checked``: each only when it was made for this scale set)."""
        here, there = listener.namespace, listener.scale_set_namespace
        # The proxy Secret only with a proxy (ARC's rule; one left over from a proxy
        # since removed goes with the AL, its owner).
        proxy = listener.section("proxy") is not None
        targets = [
            ("secrets", here if proxy else "", names.proxy_secret),
            ("rolebindings", there, names.role_binding),
            ("roles", there, names.role),
            ("serviceaccounts", here, names.service_account),
        ]
        for plural, namespace, name in targets:
            if not namespace:
                continue
            if checked:
                found = self._objects.get(plural, namespace, name)
                if found is None or not objects.made_for(found, listener):
                    continue
            self._objects.delete(plural, namespace, name)
