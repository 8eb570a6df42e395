"""``MessageSession``: one message session, with "401 -> refresh -> retry once" (WIP)."""

from __future__ import annotations

from ghalistener.actions.client import ActionsClient
from ghalistener.actions.types import RunnerScaleSetMessage, Statistics


class MessageSession:
    """An open message session of one scale set (signatures first; bodies follow)."""

    statistics: Statistics

    @classmethod
    def open(cls, client: ActionsClient, *, scale_set_id: int, owner_name: str) -> MessageSession:
        raise NotImplementedError

    def get_message(
        self, *, last_message_id: int, max_capacity: int
    ) -> RunnerScaleSetMessage | None:
        raise NotImplementedError

    def delete_message(self, message_id: int) -> None:
        raise NotImplementedError

    def acquire_jobs(self, request_ids: list[int]) -> list[int]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError
