"""Message sessions from the real scale-set client, opened for the listener loop.

``actions.MessageSession`` already satisfies ``ghalistener.listener.Session``: its
``close()`` deletes the session without waiting for a long poll in flight, which is
what lets SIGTERM end the listener within its 2 s budget.
"""

from __future__ import annotations

from ghalistener.actions.client import ActionsClient
from ghalistener.actions.session import MessageSession


class SessionOpener:
    """Opens sessions for one scale set; each call raises SessionConflictError on 409."""

    def __init__(self, *, client: ActionsClient, scale_set_id: int, owner_name: str) -> None:
        self._client = client
        self._scale_set_id = scale_set_id
        self._owner_name = owner_name

    def __call__(self) -> MessageSession:
        return MessageSession.open(
            self._client, scale_set_id=self._scale_set_id, owner_name=self._owner_name
        )
