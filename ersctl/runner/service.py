"""Scale-set service clients for runners, from each runner's credentials Secret.

:class:`SecretRunnerServices` implements ``RunnerServices``: for an EphemeralRunner it
reads the Secret named by ``spec.githubConfigSecret`` in the runner's namespace
(uncached: Secrets are never watched) and returns an ``ActionsClient`` for
``spec.githubConfigUrl``, one per Secret resourceVersion, so a rotated credential
takes effect at once and an unchanged one reuses its connection and tokens. The
Secret's keys are parsed as the ERS controller parses them
(``ersctl.credentials.credentials_from_secret``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ersctl.api import EphemeralRunner
from ersctl.credentials import (
    ClientFactory,
    Credentials,
    CredentialsFieldError,
    credentials_from_secret,
)
from ersctl.runner.ports import RunnerService
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import ConfigUrlError
from ghalistener.actions.types import SystemInfo

SecretGetter = Callable[[str, str], "dict[str, Any] | None"]


def _actions_client(config_url: str, credentials: Credentials) -> ActionsClient:
    return ActionsClient(
        config_url=config_url,
        credentials=credentials,
        system_info=SystemInfo(subsystem="controller"),
    )


class SecretRunnerServices:
    """See the module docstring. Thread-safe; :meth:`close` closes every client."""

    def __init__(
        self, *, get_secret: SecretGetter, client_factory: ClientFactory = _actions_client
    ) -> None:
        self._get_secret = get_secret
        self._factory = client_factory
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str], tuple[str, str, ActionsClient]] = {}
        self._retired: list[ActionsClient] = []

    def for_runner(self, runner: EphemeralRunner) -> RunnerService:
        name = _required(runner, "githubConfigSecret")
        url = _required(runner, "githubConfigUrl")
        where = f"{runner.namespace}/{name}"
        secret = self._get_secret(runner.namespace, name)
        if secret is None:
            raise CredentialsFieldError("spec.githubConfigSecret", f"Secret {where} not found")
        version = str((secret.get("metadata") or {}).get("resourceVersion") or "")
        key = (runner.namespace, name)
        # Under the lock, so concurrent reconciles share one client per Secret version.
        # Building one does no I/O.
        with self._lock:
            cached = self._clients.get(key)
            if cached is not None and cached[:2] == (version, url):
                return cached[2]
            try:
                fresh = self._factory(url, credentials_from_secret(secret, where=where))
            except ConfigUrlError as exc:
                raise CredentialsFieldError("spec.githubConfigUrl", str(exc)) from None
            self._clients[key] = (version, url, fresh)
            if cached is not None:
                # Another reconcile may still be using it: closed with the rest in close().
                self._retired.append(cached[2])
        return fresh

    def close(self) -> None:
        with self._lock:
            clients = [c for _, _, c in self._clients.values()] + self._retired
            self._clients, self._retired = {}, []
        for actions in clients:
            actions.close()


def _required(runner: EphemeralRunner, key: str) -> str:
    value = runner.spec.get(key)
    if not isinstance(value, str) or not value:
        raise CredentialsFieldError(f"spec.{key}", "is required")
    return value
