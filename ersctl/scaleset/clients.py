"""The scale-set service from the credentials Secret each object names.

- :func:`credentials_from_secret` reads a credentials Secret with the one parser both
  programs use (``ghalistener.actions.credentials``): ARC's keys and rules. A Secret
  that is absent or unusable is a ``CredentialsFieldError`` naming the field; the
  reconcilers turn it into a Warning Event and change nothing.
- :class:`ClientCache` is the one cache of ``ActionsClient`` per (namespace, Secret,
  config URL, proxy and CA references) and the ``resourceVersion`` of every Secret and
  ConfigMap those name, with leases that close a replaced client after its last user
  and a leader fence before every call.
- :class:`SecretRunnerServices` implements ``ersctl.scaleset.ports.RunnerServices`` on
  it, for both controllers: one Secret read per block of calls.

Nothing here ever logs or raises with a secret value in it: messages name keys only.
The credential values and proxy passwords are registered with the log redactor when a
client is built.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from ersctl.api import EphemeralRunner, EphemeralRunnerSet
from ersctl.kube.errors import check_fence
from ersctl.platform import logs
from ersctl.scaleset.documents import DocumentGetter, resource_version, secret_data
from ersctl.scaleset.network import NetworkSettings, NetworkSpec, network_spec, resolve
from ersctl.scaleset.ports import (
    CredentialsFieldError,
    RunnerNameTakenError,
    RunnerService,
    service_error,
)
from ghalistener.actions.auth import Credentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.credentials import CredentialsKeyError, parse_credentials, secret_values
from ghalistener.actions.errors import (
    ActionsError,
    ConfigUrlError,
    JobStillRunningError,
    RootCaError,
    RunnerExistsError,
    RunnerNotFoundError,
)
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.types import JitConfig, RunnerReference, SystemInfo

log = logging.getLogger(__name__)

RUNNER_SPEC_PATH: Final = "spec.ephemeralRunnerSpec"
SECRET_FIELD: Final = f"{RUNNER_SPEC_PATH}.githubConfigSecret"
CONFIG_URL_FIELD: Final = f"{RUNNER_SPEC_PATH}.githubConfigUrl"

ClientFactory = Callable[[str, Credentials, NetworkSettings], ActionsClient]
"""Builds a client for a config URL and credentials that honours the settings' proxy
and CA (``ActionsClient(proxy=..., root_ca=...)``)."""


def credentials_from_secret(
    secret: Mapping[str, Any], *, where: str, field: str = SECRET_FIELD
) -> Credentials:
    """The credentials a Secret document holds; CredentialsFieldError naming what is wrong.

    ``where`` names the Secret (``namespace/name``) in error messages, ``field`` is the
    path of the field that named it (the error's path).
    """
    values = secret_data(secret, where=where, field=field)
    try:
        return parse_credentials(values)
    except CredentialsKeyError as exc:
        raise CredentialsFieldError(field, f"Secret {where}: {exc}") from None


def controller_client(
    config_url: str,
    credentials: Credentials,
    network: NetworkSettings,
    *,
    retry: RetryPolicy | None = None,
) -> ActionsClient:
    """The controller's GitHub client for one set or runner: its proxy and CA honoured
    (``retry``: the default policy unless a test wants one that never sleeps). A
    rate-limited answer is never retried here: the error says when the limit resets,
    and the reconcile is requeued for then (``ersctl.scaleset.ports.RateLimitedError``)."""
    policy = dataclasses.replace(retry or RetryPolicy(), retry_rate_limited=False)
    return ActionsClient(
        config_url=config_url,
        credentials=credentials,
        proxy=network.proxy,
        root_ca=network.root_ca,
        system_info=SystemInfo(subsystem="controller"),
        retry=policy,
    )


@dataclass(frozen=True, kw_only=True)
class SecretRef:
    """What an object names for its GitHub calls: a credentials Secret in its namespace,
    a config URL, and its proxy and CA references (``network``).

    ``secret_field`` and ``url_field`` are the object's field paths, named in errors.
    """

    namespace: str
    secret: str
    config_url: str
    network: NetworkSpec = dataclasses.field(default_factory=NetworkSpec)
    secret_field: str = SECRET_FIELD
    url_field: str = CONFIG_URL_FIELD

    @property
    def where(self) -> str:
        """``namespace/name`` of the Secret, for messages."""
        return f"{self.namespace}/{self.secret}"


def secret_ref(namespace: str, spec: Mapping[str, Any], *, prefix: str) -> SecretRef:
    """The ``githubConfigSecret``/``githubConfigUrl`` pair of ``spec`` (found at field
    path ``prefix``) with its ``proxy`` and ``githubServerTLS``; CredentialsFieldError
    naming the field when one is absent or malformed."""
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
        network=network_spec(spec, prefix=prefix),
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


_Key = tuple[str, str, str, NetworkSpec]
"""(namespace, Secret, config URL, proxy and CA references)."""


@dataclass(eq=False)
class _Entry:
    """One cached client and the blocks using it right now (guarded by the lock)."""

    version: tuple[str, ...]
    client: ActionsClient
    users: int = 0
    retired: bool = False


class ClientCache:
    """Scale-set service clients per (namespace, Secret, config URL, proxy and CA
    references). Thread-safe.

    Each :meth:`lease` reads the credentials Secret, the proxy credential Secrets and
    the CA ConfigMap once (``get_secret``, ``get_configmap``: uncached, neither is
    watched) and hands out the client built for their resourceVersions: unchanged
    ones reuse the client's connections and tokens, a rotated credential, proxy password
    or CA gets a new client at once. Objects sharing one Secret but naming different
    config URLs or proxies each keep theirs. A replaced client is closed when the last
    block using it ends: never under a call in flight. ``client_factory`` builds a
    client from a config URL, credentials and network settings (None: the production
    ``ActionsClient``). ``fence`` is asked before every call
    (:meth:`ClientLease.client`); False (the leader lease is lost) refuses the call with
    ``NotLeaderError``. No secret value is logged or put in an error message.
    """

    def __init__(
        self,
        *,
        get_secret: DocumentGetter,
        get_configmap: DocumentGetter,
        client_factory: ClientFactory | None = None,
        fence: Callable[[], bool] | None = None,
    ) -> None:
        self._get_secret = get_secret
        self._get_configmap = get_configmap
        self._factory = client_factory or controller_client
        self._fence = fence
        self._lock = threading.Lock()
        self._clients: dict[_Key, _Entry] = {}
        self._building: dict[_Key, threading.Lock] = {}
        # Replaced entries a block still uses; each is closed when its last user leaves.
        self._retired: set[_Entry] = set()

    @contextmanager
    def lease(self, ref: SecretRef) -> Iterator[ClientLease]:
        """Hold ``ref``'s client for the block. Entering reads the Secrets and ConfigMap
        and raises ``CredentialsFieldError`` naming the field when one of them, the URL
        or a proxy setting is unusable."""
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
        network = resolve(
            ref.network,
            namespace=ref.namespace,
            get_secret=self._get_secret,
            get_configmap=self._get_configmap,
        )
        version = (resource_version(secret), *network.version)
        key = (ref.namespace, ref.secret, ref.config_url, ref.network)
        entry = self._use_current(key, version)
        if entry is not None:
            return entry
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        # One build per key at a time, outside the cache's lock (a factory is slow: an
        # SSL context, a token): a burst's workers all asking for a new Secret's client
        # built one each and threw all but one away (a sixth of a burst's CPU).
        with building:
            entry = self._use_current(key, version)
            if entry is not None:
                return entry
            return self._build(ref, secret, network.settings, key, version)

    def _use_current(self, key: _Key, version: tuple[str, ...]) -> _Entry | None:
        """The cached entry of ``key`` at ``version``, now with one more user; or None."""
        with self._lock:
            entry = self._clients.get(key)
            if entry is not None and entry.version == version:
                entry.users += 1
                return entry
        return None

    def _build(
        self,
        ref: SecretRef,
        secret: Mapping[str, Any],
        network: NetworkSettings,
        key: _Key,
        version: tuple[str, ...],
    ) -> _Entry:
        """A new client for ``key`` at ``version``, replacing the cached one (the caller
        holds ``key``'s build lock, so no other block builds it meanwhile)."""
        client = self._new_client(ref, secret, network)
        with self._lock:
            current = self._clients.get(key)
            entry = self._clients[key] = _Entry(version, client, users=1)
            unused = self._retire(current) if current is not None else []
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

    def _new_client(
        self, ref: SecretRef, secret: Mapping[str, Any], network: NetworkSettings
    ) -> ActionsClient:
        credentials = credentials_from_secret(secret, where=ref.where, field=ref.secret_field)
        logs.redact(secret_values(credentials))
        if network.proxy is not None:
            logs.redact(network.proxy.secret_values())
        try:
            return self._factory(ref.config_url, credentials, network)
        except ConfigUrlError as exc:
            raise CredentialsFieldError(ref.url_field, str(exc)) from None
        except RootCaError as exc:
            # A CA that is no PEM would fail every call: the ConfigMap's field, not a
            # failed request, is what the operator must fix.
            ca = ref.network.ca
            assert ca is not None  # only a CA from the ConfigMap reaches the factory
            where = f"ConfigMap {ref.namespace}/{ca.config_map} key {ca.key!r}"
            raise CredentialsFieldError(
                ca.field, f"{where} is not a PEM certificate: {exc.reason}"
            ) from None


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
            raise service_error(action, exc) from exc

    def get_runner_by_name(self, name: str) -> RunnerReference | None:
        action = f"looking up runner {name} of {self._key}"
        client = self._lease.client(action)
        try:
            return client.get_runner_by_name(name)
        except ActionsError as exc:
            raise service_error(action, exc) from exc

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
            raise service_error(action, exc) from exc
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
