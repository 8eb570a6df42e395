"""Removing runners from GitHub's scale-set service with the ERS's own credentials.

:class:`SecretRunnerRegistry` implements ``ersctl.ports.RunnerRegistry``. For an
EphemeralRunnerSet it reads the Secret named by
``spec.ephemeralRunnerSpec.githubConfigSecret`` in the set's namespace (through the
API reader: Secrets are not cached) once per block of removals
(:meth:`SecretRunnerRegistry.service_for`), and builds one ``ActionsClient`` per
Secret ``resourceVersion`` and config URL, so a rotated credential takes effect on the
next block and an unchanged one reuses the client's connection and tokens.

Secret keys, as ARC reads them: ``github_token`` (a PAT), or ``github_app_id``,
``github_app_installation_id`` and ``github_app_private_key`` (a GitHub App). A
Secret that is absent or holds neither is a :class:`CredentialsFieldError` naming
the field; the reconciler turns it into a Warning Event and changes no runner.
Nothing here ever logs or raises with a secret value in it: messages name keys only.
"""

from __future__ import annotations

import base64
import binascii
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from ersctl.api import EphemeralRunnerSet, FieldError, RunnerID
from ersctl.errors import ErsctlError, NotLeaderError
from ersctl.ports import ApiReader, RunnerService
from ghalistener.actions.auth import AppCredentials, PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import (
    ActionsError,
    ConfigUrlError,
    CredentialsError,
    JobStillRunningError,
    RunnerNotFoundError,
)
from ghalistener.actions.types import SystemInfo

log = logging.getLogger(__name__)

SECRET_FIELD: Final = "spec.ephemeralRunnerSpec.githubConfigSecret"  # noqa: S105 (a field path)
CONFIG_URL_FIELD: Final = "spec.ephemeralRunnerSpec.githubConfigUrl"
TOKEN_KEY: Final = "github_token"  # noqa: S105 (a key name)
APP_KEYS: Final = ("github_app_id", "github_app_installation_id", "github_app_private_key")

Credentials = PatCredentials | AppCredentials
ClientFactory = Callable[[str, Credentials], ActionsClient]


class CredentialsFieldError(FieldError):
    """The credentials Secret (or the config URL) cannot be used. Not watched: retry later."""


class RunnerServiceError(ErsctlError):
    """The scale-set service refused or failed a runner removal (message has no secret)."""


def credentials_from_secret(secret: Mapping[str, Any], *, where: str) -> Credentials:
    """The credentials a Secret document holds; CredentialsFieldError naming what is wrong.

    ``where`` names the Secret (``namespace/name``) in error messages.
    """
    values = _decoded(secret, where=where)
    if values.get(TOKEN_KEY):
        return _build(lambda: PatCredentials(token=values[TOKEN_KEY]), where=where)
    missing = [key for key in APP_KEYS if not values.get(key)]
    if missing == list(APP_KEYS):
        raise CredentialsFieldError(
            SECRET_FIELD, f"Secret {where} has neither {TOKEN_KEY} nor {'/'.join(APP_KEYS)}"
        )
    if missing:
        raise CredentialsFieldError(SECRET_FIELD, f"Secret {where} lacks {', '.join(missing)}")
    installation = values["github_app_installation_id"].strip()
    if not installation.isdigit():
        raise CredentialsFieldError(
            SECRET_FIELD, f"Secret {where}: github_app_installation_id is not a positive integer"
        )
    return _build(
        lambda: AppCredentials(
            app_id=values["github_app_id"].strip(),
            installation_id=int(installation),
            private_key=values["github_app_private_key"],
        ),
        where=where,
    )


def _decoded(secret: Mapping[str, Any], *, where: str) -> dict[str, str]:
    values: dict[str, str] = {}
    data = secret.get("data") or {}
    for key, encoded in data.items() if isinstance(data, dict) else ():
        try:
            values[str(key)] = base64.b64decode(str(encoded), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise CredentialsFieldError(
                SECRET_FIELD, f"Secret {where}: data.{key} is not base64-encoded UTF-8"
            ) from None
    string_data = secret.get("stringData") or {}
    if isinstance(string_data, dict):
        values.update({str(k): str(v) for k, v in string_data.items()})
    return values


def _build(make: Callable[[], Credentials], *, where: str) -> Credentials:
    try:
        return make()
    except CredentialsError as exc:
        # The message names the problem ("not a PEM private key"), never the value.
        raise CredentialsFieldError(SECRET_FIELD, f"Secret {where}: {exc}") from None


def _actions_client(config_url: str, credentials: Credentials) -> ActionsClient:
    return ActionsClient(
        config_url=config_url,
        credentials=credentials,
        system_info=SystemInfo(subsystem="controller"),
    )


@dataclass(eq=False)
class _Entry:
    """One cached client and the reconciles using it right now (guarded by the lock)."""

    resource_version: str
    client: ActionsClient
    users: int = 0
    retired: bool = False


class _Service:
    """The ``RunnerService`` handed out by :meth:`SecretRunnerRegistry.service_for`."""

    def __init__(
        self, client: ActionsClient, ers: EphemeralRunnerSet, fence: Callable[[], bool] | None
    ) -> None:
        self._client = client
        self._ers = ers
        self._fence = fence

    def remove_runner(self, runner_id: RunnerID) -> bool:
        """See ``ersctl.ports.RunnerService.remove_runner``."""
        if self._fence is not None and not self._fence():
            raise NotLeaderError(
                f"removing runner {runner_id} of {self._ers.key}: refused, "
                "this process no longer holds the lease"
            )
        try:
            self._client.remove_runner(runner_id)
        except JobStillRunningError:
            return False
        except RunnerNotFoundError:
            return True
        except ActionsError as exc:
            key = self._ers.key
            raise RunnerServiceError(f"removing runner {runner_id} of {key}: {exc}") from exc
        return True


class SecretRunnerRegistry:
    """``RunnerRegistry`` backed by each ERS's credentials Secret. Thread-safe.

    Clients are cached per (namespace, Secret, config URL), so sets that share one
    Secret but name different configuration URLs each keep theirs. A client replaced
    by a newer Secret version is closed once the last block using it ends: never
    under a reconcile mid-call, never left open for the life of the process.
    ``client_factory`` builds an ``ActionsClient`` from a config URL and credentials
    (default: the production client; pass one with a transport or system info of your
    choosing). ``fence`` is asked before every service call, like the writer's: when
    it answers False (the leader lease is lost) the call raises ``NotLeaderError``
    instead of reaching GitHub.
    """

    def __init__(
        self,
        *,
        api: ApiReader,
        client_factory: ClientFactory = _actions_client,
        fence: Callable[[], bool] | None = None,
    ) -> None:
        self._api = api
        self._factory = client_factory
        self._fence = fence
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str, str], _Entry] = {}
        # Replaced entries a block still uses; each is closed when its last user leaves.
        self._retired: set[_Entry] = set()

    @contextmanager
    def service_for(self, ers: EphemeralRunnerSet) -> Iterator[RunnerService]:
        """See ``ersctl.ports.RunnerRegistry.service_for``: one Secret read per block."""
        entry = self._acquire(ers)
        try:
            yield _Service(entry.client, ers, self._fence)
        finally:
            self._release(entry)

    def close(self) -> None:
        """Close every cached client (after the reconciles have stopped)."""
        with self._lock:
            entries = [*self._clients.values(), *self._retired]
            self._clients, self._retired = {}, set()
        for entry in entries:
            entry.client.close()

    def _acquire(self, ers: EphemeralRunnerSet) -> _Entry:
        name, config_url = _secret_name(ers), _config_url(ers)
        where = f"{ers.namespace}/{name}"
        secret = self._api.get_secret(ers.namespace, name)
        if secret is None:
            raise CredentialsFieldError(SECRET_FIELD, f"Secret {where} not found")
        version = str((secret.get("metadata") or {}).get("resourceVersion") or "")
        key = (ers.namespace, name, config_url)
        with self._lock:
            entry = self._clients.get(key)
            if entry is not None and entry.resource_version == version:
                entry.users += 1
                return entry
        # Built outside the lock (it may authenticate); two workers can race here.
        client = self._new_client(config_url, credentials_from_secret(secret, where=where))
        unused: list[ActionsClient] = []
        with self._lock:
            current = self._clients.get(key)
            if current is not None and current.resource_version == version:
                unused.append(client)  # another worker won: nobody has seen ours
                entry = current
            else:
                entry = self._clients[key] = _Entry(version, client)
                if current is not None:
                    unused.extend(self._retire(current))
            entry.users += 1
        for idle in unused:
            idle.close()
        return entry

    def _retire(self, entry: _Entry) -> list[ActionsClient]:
        """Mark ``entry`` replaced (lock held); the clients to close now (none while in use)."""
        entry.retired = True
        if entry.users:
            self._retired.add(entry)
            return []
        return [entry.client]

    def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.users -= 1
            done = entry.retired and entry.users == 0 and entry in self._retired
            if done:
                self._retired.discard(entry)
        if done:
            entry.client.close()

    def _new_client(self, config_url: str, credentials: Credentials) -> ActionsClient:
        try:
            return self._factory(config_url, credentials)
        except ConfigUrlError as exc:
            raise CredentialsFieldError(CONFIG_URL_FIELD, str(exc)) from None


def _secret_name(ers: EphemeralRunnerSet) -> str:
    name = ers.ephemeral_runner_spec.get("githubConfigSecret")
    if not isinstance(name, str) or not name:
        raise CredentialsFieldError(SECRET_FIELD, "must name a Secret")
    return name


def _config_url(ers: EphemeralRunnerSet) -> str:
    url = ers.ephemeral_runner_spec.get("githubConfigUrl")
    if not isinstance(url, str) or not url:
        raise CredentialsFieldError(CONFIG_URL_FIELD, "must be a GitHub configuration URL")
    return url
