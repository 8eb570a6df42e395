"""Message sessions from the real scale-set client, shaped for the listener loop.

``actions.MessageSession`` serializes its calls, so its ``close()`` waits for a long
poll in flight (up to ~50 s). The listener abandons that poll on SIGTERM and must
delete the session within its 2 s budget, so :class:`StoppableSession` deletes the
session through the (thread-safe) client directly instead.
"""

from __future__ import annotations

import threading

from ghalistener.actions import ActionsClient, MessageSession
from ghalistener.actions.types import RunnerScaleSetMessage, Statistics


class StoppableSession:
    """A MessageSession whose ``close()`` does not wait for an in-flight long poll.

    Satisfies ``ghalistener.listener.Session``. ``close()`` deletes the session once.
    """

    def __init__(
        self, *, session: MessageSession, client: ActionsClient, scale_set_id: int
    ) -> None:
        self._session = session
        self._client = client
        self._scale_set_id = scale_set_id
        self._close_lock = threading.Lock()
        self._closed = False

    @property
    def statistics(self) -> Statistics:
        return self._session.statistics

    def get_message(
        self, *, last_message_id: int, max_capacity: int
    ) -> RunnerScaleSetMessage | None:
        return self._session.get_message(last_message_id=last_message_id, max_capacity=max_capacity)

    def delete_message(self, message_id: int) -> None:
        self._session.delete_message(message_id)

    def acquire_jobs(self, request_ids: list[int]) -> list[int]:
        return self._session.acquire_jobs(request_ids)

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._client.delete_message_session(self._scale_set_id, self._session.session_id)


class SessionOpener:
    """Opens sessions for one scale set; each call raises SessionConflictError on 409."""

    def __init__(self, *, client: ActionsClient, scale_set_id: int, owner_name: str) -> None:
        self._client = client
        self._scale_set_id = scale_set_id
        self._owner_name = owner_name

    def __call__(self) -> StoppableSession:
        session = MessageSession.open(
            self._client, scale_set_id=self._scale_set_id, owner_name=self._owner_name
        )
        return StoppableSession(
            session=session, client=self._client, scale_set_id=self._scale_set_id
        )
