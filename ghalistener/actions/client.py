"""``ActionsClient``: the runner scale-set service endpoints (work in progress)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import httpx

from ghalistener.actions.auth import AppCredentials, PatCredentials
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.types import (
    JitConfig,
    RunnerGroup,
    RunnerReference,
    RunnerScaleSet,
    RunnerScaleSetMessage,
    RunnerScaleSetSession,
    SystemInfo,
)


class ActionsClient:
    """Client of GitHub's runner scale-set service (signatures first; bodies follow)."""

    def __init__(
        self,
        *,
        config_url: str,
        credentials: PatCredentials | AppCredentials,
        root_ca: str | None = None,
        system_info: SystemInfo | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        raise NotImplementedError

    def get_runner_scale_set(self, runner_group_id: int, name: str) -> RunnerScaleSet | None:
        raise NotImplementedError

    def get_runner_scale_set_by_id(self, scale_set_id: int) -> RunnerScaleSet:
        raise NotImplementedError

    def get_runner_group_by_name(self, name: str) -> RunnerGroup:
        raise NotImplementedError

    def generate_jit_runner_config(
        self, scale_set_id: int, name: str, work_folder: str = "_work"
    ) -> JitConfig:
        raise NotImplementedError

    def get_runner(self, runner_id: int) -> RunnerReference | None:
        raise NotImplementedError

    def get_runner_by_name(self, name: str) -> RunnerReference | None:
        raise NotImplementedError

    def remove_runner(self, runner_id: int) -> None:
        raise NotImplementedError

    def create_message_session(self, scale_set_id: int, owner_name: str) -> RunnerScaleSetSession:
        raise NotImplementedError

    def refresh_message_session(self, scale_set_id: int, session_id: str) -> RunnerScaleSetSession:
        raise NotImplementedError

    def delete_message_session(self, scale_set_id: int, session_id: str) -> None:
        raise NotImplementedError

    def get_message(
        self, session: RunnerScaleSetSession, *, last_message_id: int, max_capacity: int
    ) -> RunnerScaleSetMessage | None:
        raise NotImplementedError

    def delete_message(self, session: RunnerScaleSetSession, message_id: int) -> None:
        raise NotImplementedError

    def acquire_jobs(self, session: RunnerScaleSetSession, request_ids: Sequence[int]) -> list[int]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError
