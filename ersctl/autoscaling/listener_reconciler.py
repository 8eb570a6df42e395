"""The AutoscalingListener reconciler: one listener Pod per scale set, and what it needs.

``reconcile(Request(namespace, name))`` for an AutoscalingListener (AL), in order:

1. Gone -> done. Being deleted -> teardown in ARC's order: the Pod first (no new
   patches once it is gone; waited for, 1 s apart), then the config Secret, the proxy
   Secret, the RoleBinding, the Role and the ServiceAccount; then the finalizer goes.
2. Everything the listener is made of is computed before anything is written: the
   credentials from the scale set's ``githubConfigSecret`` (in
   ``spec.autoscalingRunnerSetNamespace``), the CA of ``githubServerTLS``, the proxy
   credentials, the config, the Pod with ``spec.template`` merged in. Bad input is a
   ``FieldError`` naming the AL's field: a Warning Event (``InvalidListener``), a retry
   with backoff, and nothing else changes.
3. The finalizer ``autoscalinglistener.actions.github.com/finalizer`` (ARC's).
4. The ServiceAccount, Role (its rules brought back when they differ, by ARC's
   ``role-policy-rules-hash`` label) and RoleBinding; the proxy Secret; the config
   Secret, rewritten when its content differs (rotated credentials, min/max, the
   metrics block).
5. The Pod: created when absent, unless an exited one is still backing off
   (``ersctl.autoscaling.listener_restarts``); an exited Pod is deleted, its exit
   counted in the AL's status, a Warning Event (``ListenerExited``) says when the next
   one starts; a Pod started from another config, template or scale-set spec (ARC's
   ``runner-spec-hash`` annotation) is rolled (Normal Event ``ListenerRolled``): the
   listener reads its config once.
6. Steady: look again after :data:`RECHECK_SECONDS`, as the credentials Secret is not
   watched (a rotated token must reach the listener without a watch on every Secret).

Nothing here logs or records a credential, only object names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from ersctl.api import AL_FINALIZER, AutoscalingListener, FieldError
from ersctl.autoscaling import listener_objects as objects
from ersctl.autoscaling.listener_objects import ListenerSettings
from ersctl.autoscaling.listener_ports import ListenerInputs, ListenerStore, ObjectStore
from ersctl.autoscaling.listener_restarts import (
    LISTENER_EXITED,
    Exit,
    RestartPolicy,
    exit_of,
    restarts_after,
    seconds_until_next_pod,
)
from ersctl.kube.errors import ConflictError, KubeError
from ersctl.kube.reconcile import EventRecorder, Request, Result
from ersctl.runner.phases import format_time

log = logging.getLogger(__name__)

RECHECK_SECONDS: Final = 60.0
TEARDOWN_RETRY: Final = 1.0
"""Seconds between looks at a listener Pod being deleted (ARC: 1 s)."""
POD_EXISTS_RETRY: Final = 5.0
REASON_INVALID: Final = "InvalidListener"
REASON_ROLLED: Final = "ListenerRolled"


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
            # is not watched, so the retry is what finds it once it is fixed.
            log.warning("listener %s: %s", listener.key, exc)
            self._events.event(listener, type="Warning", reason=REASON_INVALID, message=str(exc))
            raise

    def _reconcile(self, listener: AutoscalingListener) -> Result:
        if listener.is_deleting:
            return self._teardown(listener)
        # Everything is computed (and bad input found) before anything is written.
        access = self._inputs.github_access(listener)
        config = objects.listener_config_json(listener, access, self._settings)
        variables = self._inputs.proxy_variables(listener)
        pod = objects.listener_pod(
            listener, config_json=config, settings=self._settings, proxy=variables
        )
        listener = self._ensure_finalizer(listener)
        proxy = None if variables is None else objects.proxy_secret(listener, variables)
        self._ensure_rbac(listener)
        if proxy is not None:
            self._ensure_secret(proxy)
        config_changed = self._ensure_secret(objects.config_secret(listener, config))
        return self._sync_pod(listener, pod, config_changed=config_changed)

    # -- what the Pod needs ---------------------------------------------------------------

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

    def _ensure_rbac(self, listener: AutoscalingListener) -> None:
        self._ensure("serviceaccounts", objects.service_account(listener))
        role = objects.role(listener)
        existing = self._ensure("roles", role)
        labels = (existing.get("metadata") or {}).get("labels") or {}
        wanted = role["metadata"]["labels"][objects.RULES_HASH_LABEL]
        if labels.get(objects.RULES_HASH_LABEL) != wanted:
            # Rules written by another version: bring them back to what the listener uses.
            meta = role["metadata"]
            patch = {"metadata": {"labels": meta["labels"]}, "rules": role["rules"]}
            self._objects.patch("roles", meta["namespace"], meta["name"], patch)
        self._ensure("rolebindings", objects.role_binding(listener))

    def _ensure(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """The object ``body`` describes: the existing one, else ``body`` created."""
        meta = body["metadata"]
        existing = self._objects.get(plural, meta["namespace"], meta["name"])
        if existing is not None:
            return existing
        log.info("creating %s %s/%s", plural, meta["namespace"], meta["name"])
        return self._objects.create(plural, body)

    def _ensure_secret(self, body: dict[str, Any]) -> bool:
        """Create the Secret, or rewrite its data when it differs; True when written."""
        meta = body["metadata"]
        existing = self._objects.get("secrets", meta["namespace"], meta["name"])
        if existing is None:
            self._objects.create("secrets", body)
            return True
        if existing.get("data") == body["data"]:
            return False
        log.info("updating secret %s/%s", meta["namespace"], meta["name"])
        patch = {"metadata": {"labels": meta.get("labels")}, "data": body["data"]}
        self._objects.patch("secrets", meta["namespace"], meta["name"], patch)
        return True

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
        if (started_with is not None and started_with != wanted_hash) or (
            started_with is None and config_changed
        ):
            message = "the listener changed (its credentials, runner bounds, metrics, template or scale set)"
            self._events.event(listener, type="Normal", reason=REASON_ROLLED, message=message)
            log.info("listener %s: %s; restarting its pod", listener.key, message)
            self._objects.delete(
                "pods", listener.namespace, listener.name, uid=str(meta.get("uid") or "")
            )
            return Result()
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
        self._events.event(listener, type="Warning", reason=LISTENER_EXITED, message=message)
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
        name = objects.scale_set_listener_name(listener)
        proxy = listener.section("proxy") is not None
        for plural, namespace, object_name, made in (
            ("secrets", listener.namespace, objects.config_secret_name(listener), True),
            ("secrets", listener.namespace, objects.proxy_secret_name(listener), proxy),
            ("rolebindings", listener.scale_set_namespace, name, True),
            ("roles", listener.scale_set_namespace, name, True),
            ("serviceaccounts", listener.namespace, name, True),
        ):
            if made and namespace:
                self._objects.delete(plural, namespace, object_name)
        kept = [f for f in listener.finalizers if f != AL_FINALIZER]
        patch = {"metadata": {"finalizers": kept, "resourceVersion": listener.resource_version}}
        self._listeners.patch_listener(listener, patch)
        log.info("listener %s: torn down", listener.key)
        return Result()
