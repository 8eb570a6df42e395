"""The listener's Kubernetes side: the ERS desired count and the ER job fields.

Every call is one of ``ersctl.kube.client``'s, the one Kubernetes client both programs
share (and the one place the client library is imported): its errors leave as
``ersctl.kube.errors.KubeError``, and it skips the generated API methods, whose per-call
argument validation cost more CPU than the request (see there).

- :meth:`KubePublisher.publish_desired` sends one JSON merge patch
  ``{"spec": {"replicas": R, "patchID": P}, "metadata": {"annotations": ...}}`` to the
  configured EphemeralRunnerSet. The two annotations ride in the same patch, so every
  version of the set holds a count and what that count is made of: the runners whose
  completed jobs it leaves out (``ersctl.api.COMPLETED_RUNNERS_ANNOTATION``, what the
  controller refills at once) and the newest message whose statistics it has published
  (``ersctl.api.LAST_MESSAGE_ANNOTATION``, what a restarted listener reads back).
- :meth:`KubePublisher.check_target` is the start-up patch (empty); it returns what its
  answer says the previous listener published (:class:`Resumed`).
- :meth:`KubePublisher.record_job_started` writes the job fields to the named
  EphemeralRunner's ``status``; a runner that does not exist (404) is skipped. While the
  runner is Pending (a JSON patch ``test``), the same patch says what the controller
  would write next, ``phase: Running`` and ``ready: true`` (a runner that started a job
  is up and online): one status write per job instead of two. A runner that is not
  Pending (already finished, or its phase not written yet) gets the job fields alone,
  as a merge patch: its phase stays the controller's to decide.

Transient failures (no response, 409, 429, 5xx) are retried with capped exponential
backoff; anything else, or a transient failure that outlives the retries, raises.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import tenacity

from ersctl.api import (
    COMPLETED_RUNNERS_ANNOTATION,
    ER_PLURAL,
    ERS_PLURAL,
    GROUP,
    LAST_MESSAGE_ANNOTATION,
    VERSION,
    EphemeralRunnerSet,
    ERPhase,
    RunnerID,
    format_last_message,
    format_runner_ids,
    job_status_fields,
    parse_last_message,
    parse_runner_ids,
)
from ersctl.kube.client import ApiClient, Resource, Writer
from ersctl.kube.errors import KubeError, NotFoundError
from ersctl.platform.errors import ConfigError
from ghalistener.actions.retry import try_once_then_retry
from ghalistener.actions.types import JobStarted

log = logging.getLogger(__name__)
SETS: Final = Resource(group=GROUP, version=VERSION, plural=ERS_PLURAL)
RUNNERS: Final = Resource(group=GROUP, version=VERSION, plural=ER_PLURAL)

CHECK_TIMEOUT: Final = (5.0, 10.0)
UNPROCESSABLE: Final = 422
REQUEST_TIMEOUT: Final = (5.0, 30.0)
"""(connect, read) seconds for every API-server request: a hung server must not hang us."""


@dataclass(frozen=True, kw_only=True)
class KubeRetry:
    """Backoff for API-server writes. ``sleep`` is the seam that keeps tests instant;
    the CLI passes ``StopSignal.sleep`` so a stop cuts a backoff short (it raises)."""

    attempts: int = 6
    initial_wait: float = 0.5
    max_wait: float = 8.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)


@dataclass(frozen=True, kw_only=True)
class Resumed:
    """What the set says the scale set's previous listener published: the newest message
    whose statistics it used (0: none, or another scale set's) and the completions its
    last count left out (every count this listener publishes is newer, so leaves them out
    too)."""

    last_message_id: int = 0
    completed_runners: tuple[RunnerID, ...] = ()


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, KubeError) and exc.transient


def _log_retry(action: str) -> Callable[[tenacity.RetryCallState], None]:
    def before_sleep(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning(
            "retrying a failed Kubernetes request",
            extra={"fields": {"action": action, "attempt": state.attempt_number, "error": error}},
        )

    return before_sleep


class KubePublisher:
    """Writes the listener's decisions to one EphemeralRunnerSet and its runners.

    Calls block until done; they are made from the listener's loop thread only.
    """

    def __init__(
        self,
        *,
        api_client: ApiClient,
        namespace: str,
        name: str,
        scale_set_id: int = 0,
        retry: KubeRetry | None = None,
    ) -> None:
        self._writer = Writer(api_client)
        self.scale_set_id = scale_set_id
        self.namespace = namespace
        self.name = name
        self._retry = retry or KubeRetry()
        self._set_action = f"patch {ERS_PLURAL}/{namespace}/{name}"

    def check_target(self) -> Resumed:
        """Send the EphemeralRunnerSet an empty merge patch once (the caller retries a
        transient answer, ``check_at_start_up``, not a silent server): a
        no-op that needs only the ``patch`` the listener's Role grants (ARC's grants no
        ``get``), answered with the set, whose annotations say what was published before.
        KubeError when the API server cannot be reached or refuses;
        ConfigError naming the set's field when it does not exist."""
        try:
            answer = self._patch_set({}, timeout=CHECK_TIMEOUT)()
        except NotFoundError:
            raise ConfigError(
                "ephemeral_runner_set_name",
                f"EphemeralRunnerSet {self.namespace}/{self.name} not found",
            ) from None
        annotations = EphemeralRunnerSet(answer).annotations
        return Resumed(
            last_message_id=parse_last_message(
                annotations.get(LAST_MESSAGE_ANNOTATION, ""), scale_set_id=self.scale_set_id
            ),
            completed_runners=parse_runner_ids(annotations.get(COMPLETED_RUNNERS_ANNOTATION, ""))
            or (),
        )

    def publish_desired(
        self,
        *,
        replicas: int,
        patch_id: int,
        completed_runners: Iterable[int] = (),
        last_message_id: int = 0,
    ) -> None:
        """Merge-patch ``spec.replicas`` and ``spec.patchID`` of the ERS, with the runners
        whose completed jobs ``replicas`` leaves out and the newest message whose
        statistics the listener has published (see the module docstring).

        Raises KubeError when the patch cannot be applied (after retries).
        """
        annotations = {
            COMPLETED_RUNNERS_ANNOTATION: format_runner_ids(completed_runners),
            LAST_MESSAGE_ANNOTATION: format_last_message(self.scale_set_id, last_message_id),
        }
        body = {
            "metadata": {"annotations": annotations},
            "spec": {"replicas": replicas, "patchID": patch_id},
        }
        self._with_retries(self._set_action, self._patch_set(body, timeout=REQUEST_TIMEOUT))

    def _patch_set(
        self, body: dict[str, Any], *, timeout: tuple[float, float]
    ) -> Callable[[], dict[str, Any]]:
        return lambda: self._writer.patch(SETS, self.namespace, self.name, body, timeout=timeout)

    def record_job_started(self, job: JobStarted) -> bool:
        """Write the job fields into the runner's status (with ``phase: Running`` and
        ``ready: true`` while it is Pending: see the module docstring); False when it is
        gone.

        The runner is the EphemeralRunner named ``job.runner_name`` in the ERS's
        namespace. Idempotent: the same message applied twice writes the same fields (the
        second time as a merge patch, the runner being Running then).
        Raises KubeError for any failure other than 404 (after retries).
        """
        fields = job_status_fields(
            job_request_id=int(job.runner_request_id),
            job_id=job.job_id,
            repository=f"{job.owner_name}/{job.repository_name}",
            workflow_ref=job.job_workflow_ref,
            workflow_run_id=job.workflow_run_id,
            display_name=job.job_display_name,
        )
        action = f"patch {ER_PLURAL}/{self.namespace}/{job.runner_name}/status"
        busy = {**fields, "phase": ERPhase.RUNNING.value, "ready": True}
        while_pending = [
            {"op": "test", "path": "/status/phase", "value": ERPhase.PENDING.value},
            *(
                {"op": "add", "path": f"/status/{key}", "value": value}
                for key, value in busy.items()
            ),
        ]
        try:
            try:
                self._with_retries(action, self._status_call(job.runner_name, while_pending))
            except KubeError as exc:
                if exc.status != UNPROCESSABLE:  # 422: the test failed, not Pending
                    raise
                log.debug(
                    "runner %s is not Pending (%s): the job fields alone", job.runner_name, exc
                )
                self._with_retries(action, self._status_call(job.runner_name, {"status": fields}))
        except NotFoundError:
            return False
        return True

    def _status_call(
        self, runner_name: str, body: dict[str, Any] | list[dict[str, Any]]
    ) -> Callable[[], dict[str, Any]]:
        """A status write of the runner ``runner_name``: a JSON patch when ``body`` is a
        list of operations, else a merge patch."""
        status = self._writer.status
        if isinstance(body, list):
            return lambda: status.json_patch(
                RUNNERS, self.namespace, runner_name, body, timeout=REQUEST_TIMEOUT
            )
        return lambda: status.patch(
            RUNNERS, self.namespace, runner_name, body, timeout=REQUEST_TIMEOUT
        )

    def _with_retries(self, action: str, call: Callable[[], Any]) -> None:
        try_once_then_retry(
            call,
            retry_error=_is_transient,
            retrying=lambda: tenacity.Retrying(
                stop=tenacity.stop_after_attempt(self._retry.attempts),
                wait=tenacity.wait_exponential(
                    multiplier=self._retry.initial_wait, max=self._retry.max_wait
                ),
                retry=tenacity.retry_if_exception(_is_transient),
                sleep=self._retry.sleep,
                before_sleep=_log_retry(action),
                reraise=True,
            ),
        )
