"""The scale-set service from the credentials Secret each object names.

- :func:`credentials_from_secret` reads a credentials Secret with the one parser both
  programs use (``ghalistener.actions.credentials``): ARC's keys and rules. A Secret
  that is absent or unusable is a ``CredentialsFieldError`` naming the field; the
  reconcilers turn it into a Warning Event and change nothing.
- :class:`ClientCache` is the one cache of ``ActionsClient`` per (namespace, Secret,
  config URL) and Secret ``resourceVersion``, with leases that close a replaced client
  after its last user and a leader fence before every call.
- :class:`SecretRunnerServices` implements ``ersctl.scaleset.ports.RunnerServices`` on
  it, for both controllers: one Secret read per block of calls.

Nothing here ever logs or raises with a secret value in it: messages name keys only.
The credential values are registered with the log redactor when a client is built.
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

from ersctl.api import EphemeralRunner, EphemeralRunnerSet
from ersctl.kube.errors import check_fence
from ersctl.platform import logs
from ersctl.scaleset.ports import (
    CredentialsFieldError,
    RunnerNameTakenError,
    RunnerService,
    ServiceError,
)
from ghalistener.actions.auth import Credentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.credentials import CredentialsKeyError, parse_credentials, secret_values
from ghalistener.actions.errors import (
    ActionsError,
    ConfigUrlError,
    JobStillRunningError,
    RunnerExistsError,
    RunnerNotFoundError,
)
from ghalistener.actions.types import JitConfig, RunnerReference, SystemInfo

log = logging.getLogger(__name__)

RUNNER_SPEC_PATH: Final = "spec.ephemeralRunnerSpec"
SECRET_FIELD: Final = f"{RUNNER_SPEC_PATH}.githubConfigSecret"
CONFIG_URL_FIELD: Final = f"{RUNNER_SPEC_PATH}.githubConfigUrl"

ClientFactory = Callable[[str, Credentials], ActionsClient]
SecretGetter = Callable[[str, str], "Mapping[str, Any] | None"]


def credentials_from_secret(
    secret: Mapping[str, Any], *, where: str, field: str = SECRET_FIELD
) -> Credentials:
    """The credentials a Secret document holds; CredentialsFieldError naming what is wrong.

    ``where`` names the Secret (``namespace/name``) in error messages, ``field`` is the
    path of the field that named it (the error's path).
    """
    values = _decoded(secret, where=where, field=field)
    try:
        return parse_credentials(values)
    except CredentialsKeyError as exc:
        raise CredentialsFieldError(field, f"Secret {where}: {exc}") from None


def _decoded(secret: Mapping[str, Any], *, where: str, field: str) -> dict[str, str]:
    values: dict[str, str] = {}
    data = secret.get("data") or {}
    for key, encoded in data.items() if isinstance(data, dict) else ():
        try:
            values[str(key)] = base64.b64decode(str(encoded), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise CredentialsFieldError(
                field, f"Secret {where}: data.{key} is not base64-encoded UTF-8"
            ) from None
    string_data = secret.get("stringData") or {}
    if isinstance(string_data, dict):
        values.update({str(k): str(v) for k, v in string_data.items()})
    return values


def _actions_client(config_url: str, credentials: Credentials) -> ActionsClient:
    return ActionsClient(
        config_url=config_url,
        credentials=credentials,
        system_info=SystemInfo(subsystem="controller"),
    )


@dataclass(frozen=True, kw_only=True)
class SecretRef:
    """The credentials an object names: a Secret in its namespace and a config URL.

    ``secret_field`` and ``url_field`` are the object's field paths, named in errors.
    """

    namespace: str
    secret: str
    config_url: str
    secret_field: str = SECRET_FIELD
    url_field: str = CONFIG_URL_FIELD

    @property
    def where(self) -> str:
        """``namespace/name`` of the Secret, for messages."""
        return f"{self.namespace}/{self.secret}"


def secret_ref(namespace: str, spec: Mapping[str, Any], *, prefix: str) -> SecretRef:
    """The ``githubConfigSecret``/``githubConfigUrl`` pair of ``spec`` (found at field
    path ``prefix``); CredentialsFieldError naming the field when one is absent."""
    fields = {key: f"{prefix}.{key}" for key in ("githubConfigSecret", "githubConfigUrl")}
    values = {key: spec.get(key) for key in fields}
    for key, problem in (
        ("githubConfigSecret", "must name a Secret"),
        ("githubConfigUrl", "must be a GitHub configuration URL"),
    ):
        if not isinstance(values[key], str) or not values[key]:
            raise CredentialsFieldError(fields[key], problem)
    return SecretRef(
        namespace=namespace,
        secret=str(values["githubConfigSecret"]),
        config_url=str(values["githubConfigUrl"]),
        secret_field=fields["githubConfigSecret"],
        url_field=fields["githubConfigUrl"],
    )


class ClientLease:
    """A cached client held for one block (see :meth:`ClientCache.lease`)."""

    def __init__(self, client: ActionsClient, fence: Callable[[], bool] | None) -> None:
        self._client = client
        self._fence = fence

    def client(self, action: str) -> ActionsClient:
        """The client for one call; ``NotLeaderError`` (naming ``action``) instead once
        the fence answers False. Ask again for every call: each is fenced on its own."""
        check_fence(self._fence, action)
        return self._client


@dataclass(eq=False)
class _Entry:
    """One cached client and the blocks using it right now (guarded by the lock)."""

    resource_version: str
    client: ActionsClient
    users: int = 0
    retired: bool = False


class ClientCache:
    """Scale-set service clients per (namespace, Secret, config URL). Thread-safe.

    Each :meth:`lease` reads the Secret once (``get_secret``: uncached, Secrets are not
    watched) and hands out the client built for its ``resourceVersion``: an unchanged
    Secret reuses the client's connection and tokens, a rotated one gets a new client
    at once. Objects sharing one Secret but naming different config URLs each keep
    theirs. A replaced client is closed when the last block using it ends: never under
    a call in flight, never kept for the life of the process. ``client_factory``
    builds a client from a config URL and credentials (None: the production
    ``ActionsClient``). ``fence`` is asked
    before every call (:meth:`ClientLease.client`); False (the leader lease is lost)
    refuses the call with ``NotLeaderError``. No secret value is logged or put in an
    error message.
    """

    def __init__(
        self,
        *,
        get_secret: SecretGetter,
        client_factory: ClientFactory | None = None,
        fence: Callable[[], bool] | None = None,
    ) -> None:
        self._get_secret = get_secret
        self._factory = client_factory or _actions_client
        self._fence = fence
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str, str], _Entry] = {}
        # Replaced entries a block still uses; each is closed when its last user leaves.
        self._retired: set[_Entry] = set()

    @contextmanager
    def lease(self, ref: SecretRef) -> Iterator[ClientLease]:
        """Hold ``ref``'s client for the block. Entering reads the Secret and raises
        ``CredentialsFieldError`` naming the field when it or the URL is unusable."""
        entry = self._acquire(ref)
        try:
            yield ClientLease(entry.client, self._fence)
        finally:
            self._release(entry)

    def close(self) -> None:
        """Close every client (after the blocks have ended)."""
        with self._lock:
            entries = [*self._clients.values(), *self._retired]
            self._clients, self._retired = {}, set()
        for entry in entries:
            entry.client.close()

    def _acquire(self, ref: SecretRef) -> _Entry:
        secret = self._get_secret(ref.namespace, ref.secret)
        if secret is None:
            raise CredentialsFieldError(ref.secret_field, f"Secret {ref.where} not found")
        version = str((secret.get("metadata") or {}).get("resourceVersion") or "")
        key = (ref.namespace, ref.secret, ref.config_url)
        with self._lock:
            entry = self._clients.get(key)
            if entry is not None and entry.resource_version == version:
                entry.users += 1
                return entry
        # Built outside the lock (a factory may be slow); two blocks can race here.
        client = self._new_client(ref, secret)
        unused: list[ActionsClient] = []
        with self._lock:
            current = self._clients.get(key)
            if current is not None and current.resource_version == version:
                unused.append(client)  # another block won: nobody has seen ours
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

    def _new_client(self, ref: SecretRef, secret: Mapping[str, Any]) -> ActionsClient:
        credentials = credentials_from_secret(secret, where=ref.where, field=ref.secret_field)
        logs.redact(secret_values(credentials))
        try:
            return self._factory(ref.config_url, credentials)
        except ConfigUrlError as exc:
            raise CredentialsFieldError(ref.url_field, str(exc)) from None


class _Service:
    """The ``RunnerService`` of one block: each call asks the fence first."""

    def __init__(self, lease: ClientLease, obj: EphemeralRunnerSet | EphemeralRunner) -> None:
        self._lease = lease
        self._key = obj.key

    def generate_jit_config(
        self, scale_set_id: int, name: str, work_folder: str = "_work"
    ) -> JitConfig:
        action = f"registering runner {name} of {self._key}"
        client = self._lease.client(action)
        try:
            return client.generate_jit_runner_config(scale_set_id, name, work_folder)
        except RunnerExistsError as exc:
            raise RunnerNameTakenError(f"{action}: {exc}") from exc
        except ActionsError as exc:
            raise ServiceError(f"{action}: {exc}") from exc

    def get_runner_by_name(self, name: str) -> RunnerReference | None:
        action = f"looking up runner {name} of {self._key}"
        client = self._lease.client(action)
        try:
            return client.get_runner_by_name(name)
        except ActionsError as exc:
            raise ServiceError(f"{action}: {exc}") from exc

    def remove_runner(self, runner_id: int) -> bool:
        action = f"removing runner {runner_id} of {self._key}"
        client = self._lease.client(action)
        try:
            client.remove_runner(runner_id)
        except JobStillRunningError:
            return False
        except RunnerNotFoundError:
            return True
        except ActionsError as exc:
            raise ServiceError(f"{action}: {exc}") from exc
        return True


class SecretRunnerServices(ClientCache):
    """``RunnerServices`` for both controllers: a :class:`ClientCache` (same
    constructor) that hands out services for sets and runners. Thread-safe;
    :meth:`close` closes every client.

    ``fence`` is asked before every service call; False (the lease is lost) raises
    ``NotLeaderError`` instead of reaching GitHub.
    """

    @contextmanager
    def service_for(self, obj: EphemeralRunnerSet | EphemeralRunner) -> Iterator[RunnerService]:
        """See ``ersctl.scaleset.ports.RunnerServices.service_for``."""
        if isinstance(obj, EphemeralRunnerSet):
            ref = secret_ref(obj.namespace, obj.ephemeral_runner_spec, prefix=RUNNER_SPEC_PATH)
        else:
            ref = secret_ref(obj.namespace, obj.spec, prefix="spec")
        with self.lease(ref) as lease:
            yield _Service(lease, obj)
