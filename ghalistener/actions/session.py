"""``MessageSession``: one open message session and its queue.

The one place where "queue token expired (401) -> refresh the session -> retry once"
is written; get, ack and acquire all go through it. A 404 (SessionNotFoundError) is
passed up: the listener recreates the session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import MessageQueueTokenExpiredError
from ghalistener.actions.types import (
    RunnerScaleSetMessage,
    RunnerScaleSetSession,
    SessionId,
    Statistics,
)

T = TypeVar("T")


class MessageSession:
    """An open message session of one scale set.

    get/ack/acquire/refresh are serialized by a lock (a refresh replaces the session for
    everyone). ``close`` deletes the session server-side and may be called more than
    once, from any thread.
    """

    def __init__(
        self, *, client: ActionsClient, scale_set_id: int, session: RunnerScaleSetSession
    ) -> None:
        self._client = client
        self._scale_set_id = scale_set_id
        self._session = session
        self._lock = threading.RLock()
        self._close_lock = threading.Lock()
        self._closed = False

    @classmethod
    def open(cls, client: ActionsClient, *, scale_set_id: int, owner_name: str) -> MessageSession:
        """Create a session; SessionConflictError when another listener holds the scale set."""
        session = client.create_message_session(scale_set_id, owner_name)
        return cls(client=client, scale_set_id=scale_set_id, session=session)

    def __enter__(self) -> MessageSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MessageSession(scale_set_id={self._scale_set_id}, session_id={self.session_id!r})"

    @property
    def session_id(self) -> SessionId:
        """The service's id of this session."""
        return self._session.session_id

    @property
    def statistics(self) -> Statistics:
        """Statistics carried by the session at open or at the last refresh."""
        return self._session.statistics

    def get_message(
        self, *, last_message_id: int, max_capacity: int
    ) -> RunnerScaleSetMessage | None:
        """Long-poll for the next message after ``last_message_id``; None when none came."""
        return self._with_refresh(
            lambda s: self._client.get_message(
                s, last_message_id=last_message_id, max_capacity=max_capacity
            )
        )

    def delete_message(self, message_id: int) -> None:
        """Acknowledge ``message_id`` (unacknowledged messages are delivered again)."""
        self._with_refresh(lambda s: self._client.delete_message(s, message_id))

    def acquire_jobs(self, request_ids: list[int]) -> list[int]:
        """Acquire the given job requests; returns those actually acquired."""
        if not request_ids:
            return []
        return self._with_refresh(
            lambda s: self._client.acquire_jobs(self._scale_set_id, s, request_ids)
        )

    def refresh(self) -> None:
        """Renew the queue token (and statistics) now."""
        with self._lock:
            self._session = self._client.refresh_message_session(
                self._scale_set_id, self._session.session_id
            )

    def close(self) -> None:
        """Delete the session server-side (once; later calls do nothing).

        Safe to call from another thread while a long poll is held: it does not wait for
        the poll, which then ends (the service answers it with 404 or 202).
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._client.delete_message_session(self._scale_set_id, self._session.session_id)

    def _with_refresh(self, call: Callable[[RunnerScaleSetSession], T]) -> T:
        # The queue token is short-lived; the service says so with a 401. One refresh
        # and one retry: a second 401 is a real failure and is raised.
        with self._lock:
            try:
                return call(self._session)
            except MessageQueueTokenExpiredError:
                self.refresh()
                return call(self._session)
