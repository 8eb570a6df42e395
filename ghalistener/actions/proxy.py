"""Explicit proxy settings, and Go's rules for which requests use them.

ARC's controller gives its GitHub client a proxy function built from an object's
``proxy`` block with Go's ``golang.org/x/net/http/httpproxy``; this module is that
decision, pure, so a set behind a proxy is routed here exactly as ARC routes it:

1. A request to an ``https`` URL uses the https proxy, one to an ``http`` URL the http
   proxy; neither stands in for the other (an https request with only an http proxy
   set goes direct).
2. A request to ``localhost`` or to a loopback IP address never uses a proxy.
3. ``noProxy`` (entries trimmed, lower-cased, commas inside an entry split it): ``*``
   exempts every host; an IP address (``10.0.0.1``, ``[::1]:8443``, optionally with a
   port) or a CIDR block (``10.0.0.0/8``) exempts IP-literal hosts; a domain exempts
   itself and its subdomains (``example.com``), only its subdomains with a leading
   ``.`` or ``*.``, optionally on one port (``example.com:8443``); a domain entry never
   matches an IP-literal host. An entry that fits none of these is ignored.
4. A request's port is its URL's, else 80 for ``http`` and 443 for ``https``.

:class:`ProxySettings.proxy_for` applies them; ``ghalistener.actions.transport`` sends
each request the way it answers. :func:`proxy_server` reads a proxy URL as Go's
``parseProxy`` does (``proxy:3128`` means ``http://proxy:3128``) and refuses what the
HTTP client cannot use. Nothing here puts a password into a message or a ``repr``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from functools import cached_property
from typing import Final
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

from ghalistener.actions.errors import ProxySettingsError

_DEFAULT_PORTS: Final = {"http": "80", "https": "443"}
# What Go's net/url leaves unescaped in userinfo besides letters, digits and "-._~".
_USERINFO_SAFE: Final = "$&+,;="

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, kw_only=True)
class ProxyServer:
    """One proxy: its URL without userinfo, and the credentials of its
    ``Proxy-Authorization`` (None: none is sent). The password is left out of ``repr``."""

    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def auth(self) -> tuple[str, str] | None:
        """``(username, password)`` for basic proxy authorization, or None."""
        if self.username is None and self.password is None:
            return None
        return self.username or "", self.password or ""

    def url_with_credentials(self) -> str:
        """The URL with the credentials as userinfo, escaped as Go's ``net/url`` escapes
        them: the ``http_proxy``/``https_proxy`` value ARC gives runner Pods."""
        auth = self.auth
        if auth is None:
            return self.url
        parts = urlsplit(self.url)
        userinfo = f"{_escape(auth[0])}:{_escape(auth[1])}"
        return urlunsplit(parts._replace(netloc=f"{userinfo}@{parts.netloc}"))

    def secret_values(self) -> tuple[str, ...]:
        """The password as given and as it appears inside :meth:`url_with_credentials`."""
        if not self.password:
            return ()
        return tuple(dict.fromkeys((self.password, _escape(self.password))))


def proxy_server(
    value: str, *, username: str | None = None, password: str | None = None
) -> ProxyServer:
    """The proxy at URL ``value``; ``username``/``password`` (when either is given)
    replace any userinfo the URL carries, as ARC's ``credentialSecretRef`` does.

    A value without a scheme or host is read with ``http://`` in front, as Go reads it.
    ProxySettingsError unless the result is an ``http``/``https`` URL with a host and a
    valid port; the message never quotes the value (its userinfo may hold a password).
    """
    value = value.strip()
    parts = _split(value)
    if "://" not in value and (not parts.scheme or not parts.hostname):
        parts = _split("http://" + value)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ProxySettingsError(f"must be an http:// or https:// URL, not {scheme}://")
    if not parts.hostname:
        raise ProxySettingsError("has no host")
    try:
        _ = parts.port  # reading it validates it
    except ValueError:
        raise ProxySettingsError("has an invalid port") from None
    if username is None and password is None and (parts.username or parts.password):
        username, password = unquote(parts.username or ""), unquote(parts.password or "")
    netloc = parts.netloc.rpartition("@")[2]
    url = urlunsplit((scheme, netloc, parts.path, parts.query, parts.fragment))
    return ProxyServer(url=url, username=username, password=password)


def _split(value: str) -> SplitResult:
    try:
        return urlsplit(value)
    except ValueError:
        raise ProxySettingsError("is not a URL") from None


@dataclass(frozen=True, kw_only=True)
class ProxySettings:
    """The proxies of one object (``proxy.http``, ``proxy.https``) and its ``noProxy``
    entries; :meth:`proxy_for` picks one for a request by the module's rules."""

    http: ProxyServer | None = None
    https: ProxyServer | None = None
    no_proxy: tuple[str, ...] = ()

    def proxy_for(self, scheme: str, host: str, port: int | None) -> ProxyServer | None:
        """The proxy for a request to ``scheme://host:port`` (``host`` ASCII, IPv6
        without brackets; ``port`` None for the scheme's default), None for direct."""
        server = self.https if scheme == "https" else self.http if scheme == "http" else None
        if server is None:
            return None
        shown_port = str(port) if port is not None else _DEFAULT_PORTS.get(scheme, "")
        return server if self._exemptions.use_proxy(host, shown_port) else None

    @property
    def servers(self) -> tuple[ProxyServer, ...]:
        """The distinct proxies configured (none, one, or the http and the https one)."""
        return tuple(dict.fromkeys(s for s in (self.http, self.https) if s is not None))

    def secret_values(self) -> tuple[str, ...]:
        """Every password of these settings, in every form a log line could show it."""
        return tuple(value for server in self.servers for value in server.secret_values())

    @cached_property
    def _exemptions(self) -> _Exemptions:
        return _Exemptions.parse(",".join(self.no_proxy))


@dataclass(frozen=True)
class _Exemptions:
    """The parsed ``noProxy`` list (httpproxy's ip and domain matchers)."""

    everything: bool = False
    networks: tuple[IpNetwork, ...] = ()
    addresses: tuple[tuple[IpAddress, str], ...] = ()
    domains: tuple[tuple[str, str, bool], ...] = ()  # (".suffix", port, also the bare name)

    @classmethod
    def parse(cls, no_proxy: str) -> _Exemptions:
        networks: list[IpNetwork] = []
        addresses: list[tuple[IpAddress, str]] = []
        domains: list[tuple[str, str, bool]] = []
        for entry in (e.strip().lower() for e in no_proxy.split(",")):
            if not entry:
                continue
            if entry == "*":
                return cls(everything=True)
            if "/" in entry and (network := _network(entry)) is not None:
                networks.append(network)
                continue
            host, port = _split_host_port(entry)
            if (address := _address(host)) is not None:
                addresses.append((address, port))
                continue
            if not host:
                continue  # malformed, e.g. ":80": ignored, as Go ignores it
            host = host[1:] if host.startswith("*.") else host
            bare = not host.startswith(".")
            domains.append(("." + _idna(host.lstrip(".")), port, bare))
        return cls(networks=tuple(networks), addresses=tuple(addresses), domains=tuple(domains))

    def use_proxy(self, host: str, port: str) -> bool:
        """False when a request to ``host``:``port`` must go direct."""
        host = host.strip().lower()
        address = _address(host)
        if host == "localhost" or (address is not None and address.is_loopback):
            return False
        if self.everything:
            return False
        if address is not None:
            if any(address in network for network in self.networks):
                return False
            return not any(address == a and p in ("", port) for a, p in self.addresses)
        return not any(
            (host.endswith(suffix) or (bare and host == suffix[1:])) and p in ("", port)
            for suffix, p, bare in self.domains
        )


def _address(text: str) -> IpAddress | None:
    """The IP address ``text`` spells (an IPv4-mapped IPv6 address as its IPv4, as Go
    compares them), or None."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _network(text: str) -> IpNetwork | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _split_host_port(entry: str) -> tuple[str, str]:
    """Go's ``net.SplitHostPort``, falling back to ``(entry, "")`` where it fails."""
    if entry.startswith("["):
        end = entry.find("]")
        if end > 0 and entry[end + 1 : end + 2] == ":":
            return entry[1:end], entry[end + 2 :]
        return entry, ""
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, ""


def _idna(host: str) -> str:
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _escape(text: str) -> str:
    return quote(text, safe=_USERINFO_SAFE)
