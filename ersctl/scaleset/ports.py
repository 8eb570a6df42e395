"""The one port through which the controllers call GitHub's scale-set service.

The EphemeralRunnerSet controller removes runners (scale-down, cleanup); the
EphemeralRunner controller registers them (JIT configs), looks them up and removes
them. Both hold a :class:`RunnerService` for one object's credentials, from
:meth:`RunnerServices.service_for`. The AutoscalingRunnerSet controller registers,
updates and deletes scale sets through a :class:`ScaleSetService`. Pure: protocols,
values and the errors of the contract.

Errors every method may raise: :class:`ServiceError` (the service refused or failed
the call; the message names it and never holds a secret; :class:`RateLimitedError`
when that was its rate limit, which says when to try again) and
``ersctl.kube.errors.NotLeaderError`` (the leader lease is lost: refused without a
call). Entering ``service_for`` raises :class:`CredentialsFieldError` naming the field
when the object's credentials Secret or configuration URL is absent or unusable.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Final, Protocol

from ersctl.api import EphemeralRunner, EphemeralRunnerSet, FieldError
from ersctl.kube.reconcile import RetryLater
from ersctl.platform.errors import Failure
from ghalistener.actions.errors import ActionsError
from ghalistener.actions.errors import RateLimitedError as ActionsRateLimitedError
from ghalistener.actions.types import JitConfig, RunnerReference


class CredentialsFieldError(FieldError):
    """The credentials Secret (or the config URL) an object names cannot be used.

    Secrets are not watched, so a reconcile that meets this retries later.
    """


class ServiceError(Failure):
    """The scale-set service refused or failed a call (``__cause__`` says how)."""


class RateLimitedError(ServiceError, RetryLater):
    """The service refused the call for its rate limit: the reconcile is requeued after
    the limit resets (the client does not retry it: a worker asleep in a retry serves
    no other object), or after :data:`RATE_LIMIT_WAIT` when the service does not say."""


RATE_LIMIT_WAIT: Final = 60.0


def service_error(action: str, error: ActionsError) -> ServiceError:
    """The :class:`ServiceError` of ``action`` that failed with ``error``."""
    message = f"{action}: {error}"
    if isinstance(error, ActionsRateLimitedError):
        wait = RATE_LIMIT_WAIT if error.retry_after is None else error.retry_after
        return RateLimitedError(message, after=wait)
    return ServiceError(message)


class RunnerNameTakenError(ServiceError):
    """``generate_jit_config``: a runner of that name is registered already."""


class RunnerService(Protocol):
    """The scale-set service with the credentials of one object. Thread-safe."""

    def generate_jit_config(
        self, scale_set_id: int, name: str, work_folder: str = "_work"
    ) -> JitConfig:
        """Register the runner ``name`` in the scale set and return its JIT config.

        :class:`RunnerNameTakenError` when that name is registered already.
        """
        ...

    def get_runner_by_name(self, name: str) -> RunnerReference | None:
        """The registered runner named ``name``, or None."""
        ...

    def remove_runner(self, runner_id: int) -> bool:
        """Remove the registration ``runner_id``.

        True when the runner is gone (removed now, or already unknown to the service);
        False when it is still running a job (leave it to finish).
        """
        ...


class RunnerServices(Protocol):
    """Hands out the :class:`RunnerService` for an object's credentials."""

    def service_for(
        self, obj: EphemeralRunnerSet | EphemeralRunner
    ) -> AbstractContextManager[RunnerService]:
        """Resolve ``obj``'s credentials now and hold its service for the block.

        The Secret named by ``githubConfigSecret`` (``spec.ephemeralRunnerSpec`` of a
        set, ``spec`` of a runner) in ``obj``'s namespace is read once on entering, so a
        caller that enters before its first write changes nothing on bad credentials.
        The service is valid only inside the block. Usable from several threads.
        """
        ...


class ScaleSetNameTakenError(ServiceError):
    """The scale set name is registered already, in another runner group."""


class RunnerGroupNotFoundError(ServiceError):
    """No runner group has the name the ARS gives."""


@dataclass(frozen=True, kw_only=True)
class ScaleSet:
    """A scale set as the reconciler needs it."""

    id: int
    name: str
    runner_group_id: int
    runner_group_name: str
    labels: tuple[str, ...]


class ScaleSetService(Protocol):
    """The scale-set service with one ARS's credentials."""

    def runner_group_id(self, name: str) -> int:
        """The id of the runner group ``name`` ("" is the default group, id 1).
        :class:`RunnerGroupNotFoundError` when there is none."""
        ...

    def find(self, runner_group_id: int, name: str) -> ScaleSet | None:
        """The scale set ``name`` in the group, or None."""
        ...

    def get(self, scale_set_id: int) -> ScaleSet | None:
        """The scale set with this id, or None when the service does not know it."""
        ...

    def create(self, *, name: str, runner_group_id: int, labels: list[str]) -> ScaleSet:
        """Register a scale set (ephemeral runners, runner updates off, as ARC).
        :class:`ScaleSetNameTakenError` when the name is taken in another group."""
        ...

    def update(
        self,
        scale_set_id: int,
        *,
        name: str | None = None,
        runner_group_id: int | None = None,
        labels: list[str] | None = None,
    ) -> ScaleSet:
        """Change the given settings of a scale set; the others stay as they are."""
        ...

    def delete(self, scale_set_id: int) -> bool:
        """Delete a scale set; True when it is gone (deleted now, or unknown already)."""
        ...
