"""Which requests use an explicit proxy: Go's httpproxy rules, as ARC's controller
applies them to a set's ``proxy`` (``ghalistener.actions.proxy``)."""

from __future__ import annotations

import pytest

from ghalistener.actions.errors import ProxySettingsError
from ghalistener.actions.proxy import ProxyServer, ProxySettings, proxy_server

HTTP = ProxyServer(url="http://http-proxy:3128")
HTTPS = ProxyServer(url="http://https-proxy:3128")


def routed(url: str, *no_proxy: str, http: bool = True, https: bool = True) -> str:
    """ "http", "https" (which proxy the request to ``url`` uses) or "direct"."""
    settings = ProxySettings(
        http=HTTP if http else None, https=HTTPS if https else None, no_proxy=no_proxy
    )
    scheme, _, rest = url.partition("://")
    authority = rest.split("/")[0]
    if authority.startswith("["):
        host, _, port = authority[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = authority.partition(":")
    server = settings.proxy_for(scheme, host, int(port) if port else None)
    return {None: "direct", HTTP: "http", HTTPS: "https"}[server]


@pytest.mark.parametrize(
    ("url", "http", "https", "expected"),
    [
        pytest.param("https://ghes.corp/x", True, True, "https", id="https uses the https proxy"),
        pytest.param("http://ghes.corp/x", True, True, "http", id="http uses the http proxy"),
        pytest.param("https://ghes.corp/x", True, False, "direct", id="no https proxy: direct"),
        pytest.param("http://ghes.corp/x", False, True, "direct", id="no http proxy: direct"),
    ],
)
def test_each_scheme_uses_its_own_proxy_and_never_the_other(
    url: str, http: bool, https: bool, expected: str
) -> None:
    assert routed(url, http=http, https=https) == expected


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://localhost:8443/", id="localhost"),
        pytest.param("https://127.0.0.1/", id="127.0.0.1"),
        pytest.param("https://127.10.0.3:8443/", id="all of 127/8"),
        pytest.param("https://[::1]/", id="::1"),
        pytest.param("https://[::ffff:127.0.0.1]/", id="IPv4-mapped loopback"),
    ],
)
def test_localhost_and_loopback_addresses_are_never_proxied(url: str) -> None:
    assert routed(url) == "direct"


@pytest.mark.parametrize(
    ("entries", "url", "expected"),
    [
        pytest.param(("*",), "https://github.com/", "direct", id="* exempts every host"),
        pytest.param(("example.com",), "https://example.com/", "direct", id="a domain itself"),
        pytest.param(("example.com",), "https://a.b.example.com/", "direct", id="subdomains"),
        pytest.param(("example.com",), "https://notexample.com/", "https", id="not a suffix"),
        pytest.param((".example.com",), "https://example.com/", "https", id=".domain: not itself"),
        pytest.param((".example.com",), "https://a.example.com/", "direct", id=".domain: subs"),
        pytest.param(("*.example.com",), "https://example.com/", "https", id="*.domain: not it"),
        pytest.param(("*.example.com",), "https://a.example.com/", "direct", id="*.domain"),
        pytest.param((" Example.COM ",), "https://example.com/", "direct", id="trimmed, any case"),
        pytest.param(("example.com:8443",), "https://example.com:8443/", "direct", id="port"),
        pytest.param(("example.com:8443",), "https://example.com/", "https", id="other port"),
        pytest.param(("ghes.corp:443",), "https://ghes.corp/", "direct", id="default port"),
        pytest.param(("10.0.0.0/8",), "https://10.1.2.3:8443/", "direct", id="CIDR, any port"),
        pytest.param(("10.0.0.0/8",), "https://11.0.0.1/", "https", id="outside the CIDR"),
        pytest.param(("10.0.0.5",), "https://10.0.0.5:9/", "direct", id="an IP, any port"),
        pytest.param(("10.0.0.5:80",), "http://10.0.0.5/", "direct", id="an IP:port"),
        pytest.param(("10.0.0.5:80",), "http://10.0.0.5:8080/", "http", id="an IP, other port"),
        pytest.param(("2001:db8::1",), "https://[2001:db8::1]/", "direct", id="IPv6"),
        pytest.param(("[2001:db8::1]:443",), "https://[2001:db8::1]/", "direct", id="[IPv6]:port"),
        pytest.param(("2001:db8::/32",), "https://[2001:db8::7]/", "direct", id="IPv6 CIDR"),
        pytest.param(("10.0.0.5",), "https://[::ffff:10.0.0.5]/", "direct", id="IPv4-mapped"),
        pytest.param(("0.1",), "https://10.0.0.1/", "https", id="a domain never matches an IP"),
        pytest.param((":80", "", " , "), "https://github.com/", "https", id="malformed: ignored"),
        pytest.param(("a.corp,b.corp",), "https://b.corp/", "direct", id="commas split entries"),
        pytest.param(("bücher.example",), "https://xn--bcher-kva.example/", "direct", id="IDNA"),
    ],
)
def test_no_proxy_entries_follow_gos_httpproxy(
    entries: tuple[str, ...], url: str, expected: str
) -> None:
    assert routed(url, *entries) == expected


@pytest.mark.parametrize(
    ("value", "url"),
    [
        pytest.param("http://proxy.corp:3128", "http://proxy.corp:3128", id="as given"),
        pytest.param("HTTPS://proxy.corp", "https://proxy.corp", id="scheme lower-cased"),
        pytest.param("proxy.corp:3128", "http://proxy.corp:3128", id="no scheme: http"),
        pytest.param("10.0.0.1:3128", "http://10.0.0.1:3128", id="an address and port"),
    ],
)
def test_a_proxy_url_is_read_as_go_reads_it(value: str, url: str) -> None:
    assert proxy_server(value).url == url


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param("socks5://proxy.corp:1080", "http:// or https://", id="socks5"),
        pytest.param("http://", "no host", id="no host"),
        pytest.param("http://proxy.corp:99999", "invalid port", id="bad port"),
        pytest.param("http://[::1", "not a URL", id="unparsable"),
    ],
)
def test_a_proxy_url_the_client_cannot_use_is_refused_without_quoting_it(
    value: str, problem: str
) -> None:
    with pytest.raises(ProxySettingsError, match=problem) as caught:
        proxy_server(value.replace("://", "://user:s3cret-pw@", 1) if "@" not in value else value)
    assert "s3cret-pw" not in str(caught.value)


def test_credentials_replace_the_urls_userinfo_and_stay_out_of_its_repr() -> None:
    server = proxy_server("http://old:old-pw@proxy.corp:3128", username="u", password="new-pw")

    assert (server.url, server.auth) == ("http://proxy.corp:3128", ("u", "new-pw"))
    assert "pw" not in repr(server)


def test_userinfo_in_the_url_is_the_credentials_when_no_secret_is_named() -> None:
    server = proxy_server("http://u%40corp:p%3Aw@proxy.corp:3128")

    assert (server.url, server.auth) == ("http://proxy.corp:3128", ("u@corp", "p:w"))


def test_the_url_with_credentials_escapes_them_as_gos_net_url_does() -> None:
    server = ProxyServer(
        url="http://proxy.corp:3128", username="svc user", password="p@ss:w/rd?#%$&+,;=!*"
    )

    assert server.url_with_credentials() == (
        "http://svc%20user:p%40ss%3Aw%2Frd%3F%23%25$&+,;=%21%2A@proxy.corp:3128"
    )
    assert server.secret_values() == (
        "p@ss:w/rd?#%$&+,;=!*",
        "p%40ss%3Aw%2Frd%3F%23%25$&+,;=%21%2A",
    )


def test_without_credentials_the_url_is_as_given() -> None:
    assert ProxyServer(url="http://proxy.corp:3128").url_with_credentials() == (
        "http://proxy.corp:3128"
    )
