"""How an object reaches GitHub: ARC's ``proxy`` and ``githubServerTLS`` fields.

A set's ``spec.ephemeralRunnerSpec`` and a runner's ``spec`` may carry, in ARC's schema::

    proxy:
      http:  {url: http://proxy.corp:3128, credentialSecretRef: proxy-credentials}
      https: {url: http://proxy.corp:3128, credentialSecretRef: proxy-credentials}
      noProxy: [internal.corp, 10.0.0.0/8]
    githubServerTLS:
      certificateFrom:
        configMapKeyRef: {name: ghes-ca, key: ca.crt}

- :func:`network_spec` reads those fields into references (:class:`NetworkSpec`,
  hashable: it is part of a client cache key); :func:`proxy_spec` the proxy alone.
- :func:`resolve` reads what they name, in the object's namespace: each
  ``credentialSecretRef`` Secret's ``username`` and ``password`` keys (absent keys read
  as empty, as ARC reads them) and the CA bundle under the ConfigMap's key; it returns
  the :class:`NetworkSettings` a client is built with and the resourceVersions read, so
  a rotated password or CA is noticed at once.

Unusable settings (a proxy URL that is no http(s) URL, a Secret or ConfigMap that does
not exist, a missing key) are a ``CredentialsFieldError`` naming the field, e.g.
``spec.ephemeralRunnerSpec.proxy.https.credentialSecretRef``; a CA that is not PEM is
found when the client is built (``ghalistener.actions.errors.RootCaError``). No message
holds a password. Pure: documents come through getters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ersctl.scaleset.documents import DocumentGetter, resource_version, secret_data
from ersctl.scaleset.ports import CredentialsFieldError
from ghalistener.actions.errors import ProxySettingsError
from ghalistener.actions.proxy import ProxyServer, ProxySettings, proxy_server


@dataclass(frozen=True, kw_only=True)
class ProxyServerSpec:
    """``proxy.http`` or ``proxy.https``: the URL and the credentials Secret ("": none)."""

    url: str
    credential_secret: str
    field: str
    """Path of this block (``spec.ephemeralRunnerSpec.proxy.https``), for messages."""


@dataclass(frozen=True, kw_only=True)
class ProxySpec:
    """An object's ``proxy`` block (present, possibly empty)."""

    http: ProxyServerSpec | None = None
    https: ProxyServerSpec | None = None
    no_proxy: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class CaSpec:
    """``githubServerTLS.certificateFrom.configMapKeyRef``: where the CA bundle is."""

    config_map: str
    key: str
    field: str


@dataclass(frozen=True, kw_only=True)
class NetworkSpec:
    """What an object names for reaching GitHub (none of it: the environment's proxy
    variables and the system's CAs apply, as in ARC)."""

    proxy: ProxySpec | None = None
    ca: CaSpec | None = None


@dataclass(frozen=True, kw_only=True)
class NetworkSettings:
    """Resolved :class:`NetworkSpec`: what a client is built with."""

    proxy: ProxySettings | None = None
    root_ca: str | None = None


DEFAULT_NETWORK: Final = NetworkSettings()
"""No proxy or CA of the object's own: the environment's proxy variables and the
system's CAs."""


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """:func:`resolve`'s answer: the settings, and a version that changes whenever a
    Secret or ConfigMap they came from changes (its objects' resourceVersions)."""

    settings: NetworkSettings
    version: tuple[str, ...]


def network_spec(spec: Mapping[str, Any], *, prefix: str) -> NetworkSpec:
    """The ``proxy`` and ``githubServerTLS`` of ``spec`` (found at path ``prefix``).

    CredentialsFieldError naming the first malformed field.
    """
    return NetworkSpec(proxy=proxy_spec(spec, prefix=prefix), ca=_ca_spec(spec, prefix=prefix))


def proxy_spec(spec: Mapping[str, Any], *, prefix: str) -> ProxySpec | None:
    """``spec.proxy`` (None when absent or null). CredentialsFieldError naming the first
    malformed field, a proxy URL that is no http(s) URL among them."""
    path = f"{prefix}.proxy"
    block = _mapping(spec.get("proxy"), path)
    if block is None:
        return None
    no_proxy = block.get("noProxy")
    if no_proxy is not None and (
        not isinstance(no_proxy, list) or not all(isinstance(e, str) for e in no_proxy)
    ):
        raise CredentialsFieldError(f"{path}.noProxy", "must be a list of strings")
    return ProxySpec(
        http=_server_spec(block, f"{path}.http"),
        https=_server_spec(block, f"{path}.https"),
        no_proxy=tuple(no_proxy or ()),
    )


def _server_spec(block: Mapping[str, Any], path: str) -> ProxyServerSpec | None:
    server = _mapping(block.get(path.rpartition(".")[2]), path)
    if server is None:
        return None
    url, ref = server.get("url"), server.get("credentialSecretRef")
    if not isinstance(url, str) or not url.strip():
        raise CredentialsFieldError(f"{path}.url", "must be a proxy URL")
    try:
        proxy_server(url)
    except ProxySettingsError as exc:
        raise CredentialsFieldError(f"{path}.url", str(exc)) from None
    if ref is not None and not isinstance(ref, str):
        raise CredentialsFieldError(f"{path}.credentialSecretRef", "must name a Secret")
    return ProxyServerSpec(url=url, credential_secret=ref or "", field=path)


def _ca_spec(spec: Mapping[str, Any], *, prefix: str) -> CaSpec | None:
    path = f"{prefix}.githubServerTLS"
    tls = _mapping(spec.get("githubServerTLS"), path)
    if tls is None:
        return None
    source = _mapping(tls.get("certificateFrom"), f"{path}.certificateFrom")
    ref = _mapping((source or {}).get("configMapKeyRef"), f"{path}.certificateFrom.configMapKeyRef")
    path = f"{path}.certificateFrom.configMapKeyRef"
    if ref is None:
        raise CredentialsFieldError(path, "must name the ConfigMap key holding the CA")
    name, key = ref.get("name"), ref.get("key")
    if not isinstance(name, str) or not name or not isinstance(key, str) or not key:
        raise CredentialsFieldError(path, "must have a name and a key")
    return CaSpec(config_map=name, key=key, field=path)


def _mapping(value: object, path: str) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise CredentialsFieldError(path, "must be an object")
    return value


def resolve(
    spec: NetworkSpec,
    *,
    namespace: str,
    get_secret: DocumentGetter,
    get_configmap: DocumentGetter,
) -> Resolved:
    """Read what ``spec`` names in ``namespace`` (one GET per Secret and ConfigMap).

    CredentialsFieldError naming the field whose Secret, ConfigMap or key is missing.
    """
    proxy: ProxySettings | None = None
    version: tuple[str, ...] = ()
    if spec.proxy is not None:
        proxy, version = resolve_proxy(spec.proxy, namespace=namespace, get_secret=get_secret)
    root_ca = None
    if spec.ca is not None:
        root_ca, ca_version = _read_ca(spec.ca, namespace=namespace, get=get_configmap)
        version = (*version, ca_version)
    return Resolved(settings=NetworkSettings(proxy=proxy, root_ca=root_ca), version=version)


def resolve_proxy(
    spec: ProxySpec, *, namespace: str, get_secret: DocumentGetter
) -> tuple[ProxySettings, tuple[str, ...]]:
    """The proxy settings of ``spec`` with their credentials, and the resourceVersions
    of the credential Secrets read. CredentialsFieldError as :func:`resolve`."""
    versions: list[str] = []

    def server(ref: ProxyServerSpec | None) -> ProxyServer | None:
        if ref is None:
            return None
        if not ref.credential_secret:
            return proxy_server(ref.url)
        field = f"{ref.field}.credentialSecretRef"
        where = f"{namespace}/{ref.credential_secret}"
        secret = get_secret(namespace, ref.credential_secret)
        if secret is None:
            raise CredentialsFieldError(field, f"Secret {where} not found")
        versions.append(f"secret {ref.credential_secret} {resource_version(secret)}")
        values = secret_data(secret, where=where, field=field)
        username, password = values.get("username", ""), values.get("password", "")
        return proxy_server(ref.url, username=username, password=password)

    settings = ProxySettings(
        http=server(spec.http), https=server(spec.https), no_proxy=spec.no_proxy
    )
    return settings, tuple(versions)


def _read_ca(spec: CaSpec, *, namespace: str, get: DocumentGetter) -> tuple[str, str]:
    where = f"{namespace}/{spec.config_map}"
    config_map = get(namespace, spec.config_map)
    if config_map is None:
        raise CredentialsFieldError(spec.field, f"ConfigMap {where} not found")
    data = config_map.get("data") or {}
    pem = data.get(spec.key) if isinstance(data, Mapping) else None
    if not isinstance(pem, str) or not pem.strip():
        raise CredentialsFieldError(spec.field, f"ConfigMap {where} has no key {spec.key!r}")
    return pem, f"configmap {spec.config_map} {resource_version(config_map)}"
