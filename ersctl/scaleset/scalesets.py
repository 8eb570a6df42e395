"""The ``ScaleSetService`` of one AutoscalingRunnerSet: its scale set on GitHub found,
registered, updated and deleted through the one cached client of its credentials
(``ersctl.scaleset.clients.ClientCache``), every call fenced by leadership; handed
out by :class:`SecretScaleSetServices`.

Updates send the whole scale set (its current settings with the changed ones applied):
the service's PATCH replaces what it is given, so a field left out would be reset.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ersctl.api import AutoscalingRunnerSet
from ersctl.scaleset.clients import ClientLease, SecretRunnerServices, secret_ref
from ersctl.scaleset.ports import (
    RunnerGroupNotFoundError,
    ScaleSet,
    ScaleSetNameTakenError,
    ScaleSetService,
    ServiceError,
    service_error,
)
from ghalistener.actions.errors import ActionsError, RequestError
from ghalistener.actions.types import (
    Label,
    RunnerScaleSet,
    RunnerSetting,
    ScaleSetId,
)

DEFAULT_RUNNER_GROUP_ID = 1
"""The id of every organization's "Default" runner group."""

_EXISTS_TYPE = "RunnerScaleSetExistsException"


def _value(found: RunnerScaleSet) -> ScaleSet:
    return ScaleSet(
        id=int(found.id),
        name=found.name,
        runner_group_id=found.runner_group_id,
        runner_group_name=found.runner_group_name,
        labels=tuple(label.name for label in found.labels),
    )


def _not_found(exc: ActionsError) -> bool:
    return isinstance(exc, RequestError) and exc.status == 404


class ScaleSetAdmin:
    """Implements ``ersctl.scaleset.ports.ScaleSetService`` for the block of one lease."""

    def __init__(self, lease: ClientLease, key: str) -> None:
        self._lease = lease
        self._key = key

    def runner_group_id(self, name: str) -> int:
        if not name:
            return DEFAULT_RUNNER_GROUP_ID
        action = f"looking up runner group {name!r} for {self._key}"
        try:
            group = self._lease.client(action).get_runner_group_by_name(name)
        except ActionsError as exc:
            raise service_error(action, exc) from exc
        if group is None:
            raise RunnerGroupNotFoundError(f"runner group {name!r} not found")
        return group.id

    def find(self, runner_group_id: int, name: str) -> ScaleSet | None:
        action = f"looking up scale set {name!r} for {self._key}"
        try:
            found = self._lease.client(action).get_runner_scale_set(runner_group_id, name)
        except ActionsError as exc:
            raise service_error(action, exc) from exc
        return None if found is None else _value(found)

    def get(self, scale_set_id: int) -> ScaleSet | None:
        return None if (found := self._get(scale_set_id)) is None else _value(found)

    def _get(self, scale_set_id: int) -> RunnerScaleSet | None:
        action = f"reading scale set {scale_set_id} for {self._key}"
        try:
            return self._lease.client(action).get_runner_scale_set_by_id(scale_set_id)
        except ActionsError as exc:
            if _not_found(exc):
                return None
            raise service_error(action, exc) from exc

    def create(self, *, name: str, runner_group_id: int, labels: list[str]) -> ScaleSet:
        action = f"registering scale set {name!r} for {self._key}"
        wanted = RunnerScaleSet(
            id=ScaleSetId(0),  # the service assigns it
            name=name,
            runner_group_id=runner_group_id,
            labels=tuple(Label(name=label) for label in labels),
            runner_setting=RunnerSetting(ephemeral=True, disable_update=True),
        )
        try:
            return _value(self._lease.client(action).create_runner_scale_set(wanted))
        except ActionsError as exc:
            if isinstance(exc, RequestError) and (
                exc.status == 409 or exc.type_name == _EXISTS_TYPE
            ):
                raise ScaleSetNameTakenError(
                    f"scale set name {name!r} is taken in another runner group"
                ) from exc
            raise service_error(action, exc) from exc

    def update(
        self,
        scale_set_id: int,
        *,
        name: str | None = None,
        runner_group_id: int | None = None,
        labels: list[str] | None = None,
    ) -> ScaleSet:
        current = self._get(scale_set_id)
        if current is None:
            raise ServiceError(f"scale set {scale_set_id} of {self._key} not found")
        wanted = RunnerScaleSet(
            id=current.id,
            name=current.name if name is None else name,
            runner_group_id=(
                current.runner_group_id if runner_group_id is None else runner_group_id
            ),
            labels=current.labels if labels is None else tuple(Label(name=x) for x in labels),
            runner_setting=current.runner_setting,
        )
        action = f"updating scale set {scale_set_id} for {self._key}"
        try:
            return _value(self._lease.client(action).update_runner_scale_set(scale_set_id, wanted))
        except ActionsError as exc:
            raise service_error(action, exc) from exc

    def delete(self, scale_set_id: int) -> bool:
        action = f"deleting scale set {scale_set_id} of {self._key}"
        try:
            self._lease.client(action).delete_runner_scale_set(scale_set_id)
        except ActionsError as exc:
            if _not_found(exc):
                return True
            raise service_error(action, exc) from exc
        return True


class SecretScaleSetServices(SecretRunnerServices):
    """:class:`SecretRunnerServices` (same constructor, the same client cache) that also
    hands out the ``ScaleSetService`` of an AutoscalingRunnerSet: one client per
    credentials Secret serves all three controllers."""

    @contextmanager
    def scale_sets_for(self, ars: AutoscalingRunnerSet) -> Iterator[ScaleSetService]:
        """The service with ``ars``'s credentials (``spec.githubConfigSecret``,
        ``spec.githubConfigUrl``, ``spec.proxy``, ``spec.githubServerTLS``), held for
        the block; ``CredentialsFieldError`` naming the ARS field on entering."""
        ref = secret_ref(ars.namespace, ars.spec, prefix="spec")
        with self.lease(ref) as lease:
            yield ScaleSetAdmin(lease, ars.key)
