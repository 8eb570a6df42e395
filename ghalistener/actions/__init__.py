"""Client of GitHub's runner scale-set service (the Python counterpart of actions/scaleset).

Entry points: ``ActionsClient`` (endpoints), ``MessageSession`` (the message queue of
one session), the credentials ``PatCredentials`` / ``AppCredentials``, and the
exception tree in ``ghalistener.actions.errors``.
"""

from __future__ import annotations

from ghalistener.actions.auth import AppCredentials, PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.session import MessageSession
from ghalistener.actions.types import SystemInfo

__all__ = [
    "ActionsClient",
    "AppCredentials",
    "MessageSession",
    "PatCredentials",
    "RetryPolicy",
    "SystemInfo",
]
