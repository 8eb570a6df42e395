"""The HTTP boundary: httpx in, typed ``RequestError`` out.

Everything the client sends goes through ``HttpSender.send``: it applies the retry
policy, logs each exchange at DEBUG with a redacted URL, and translates every httpx
failure (``httpx.HTTPError``: transport errors, a body that fails to decode, too many
redirects; and ``httpx.InvalidURL`` from building the request) into ``RequestError``
(status None). ``error_from_response`` and ``error_from_exception`` are the only places
request errors are built. Explicit proxy settings (``ghalistener.actions.proxy``) are
applied here and only here, request by request (:class:`ProxyRoutes`).
"""

from __future__ import annotations

import functools
import json
import logging
import re
import ssl
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

import httpx

from ersctl.platform.redaction import REDACTED, Redactor
from ghalistener.actions.errors import (
    BODY_EXCERPT_LIMIT,
    JobStillRunningError,
    RateLimitedError,
    RequestError,
    RootCaError,
    RunnerExistsError,
    RunnerNotFoundError,
)
from ghalistener.actions.proxy import ProxyServer, ProxySettings
from ghalistener.actions.retry import RetryPolicy, is_rate_limited, rate_limit_wait

log = logging.getLogger(__name__)

#: Ordinary calls: GitHub answers quickly or not at all.
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
#: The message long poll: the service holds the request up to ~50 s, so read longer.
LONG_POLL_TIMEOUT = httpx.Timeout(30.0, connect=10.0, read=70.0)

_SERVICE_EXCEPTIONS: tuple[tuple[str, type[RequestError]], ...] = (
    ("AgentExistsException", RunnerExistsError),
    ("AgentNotFoundException", RunnerNotFoundError),
    ("JobStillRunningException", JobStillRunningError),
)
_SECRET_QUERY_KEYS = ("token", "sig", "secret", "password", "key", "code")
# user:password@ in a URL quoted by an exception (a proxy URL from the environment).
_USERINFO = re.compile(r"//[^/@\s]*@")


def redact_url(url: httpx.URL | str, redactor: Redactor | None = None) -> str:
    """Return ``url`` without userinfo and with secret-looking query values hidden."""
    parsed = httpx.URL(str(url))
    if parsed.userinfo:
        parsed = parsed.copy_with(username=None, password=None)
    params = [
        (k, REDACTED if any(s in k.lower() for s in _SECRET_QUERY_KEYS) else v)
        for k, v in parsed.params.multi_items()
    ]
    if params:
        parsed = parsed.copy_with(params=params)
    text = str(parsed)
    return redactor(text) if redactor else text


def is_valid_url(value: str) -> bool:
    """True when ``value`` is an absolute http(s) URL that httpx accepts.

    URLs the service hands us (the admin connection's, the session's queue URL) are
    checked on arrival, so a bad one is a parse error naming the field rather than an
    httpx error wherever a request is later built from it.
    """
    try:
        parsed = httpx.URL(value)
    except httpx.InvalidURL:
        return False
    return parsed.scheme in ("http", "https") and bool(parsed.host)


def body_excerpt(response: httpx.Response, redactor: Redactor | None = None) -> str:
    """The first ``BODY_EXCERPT_LIMIT`` characters of the body, BOM stripped, secrets hidden."""
    text = response.content.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
    if redactor:
        text = redactor(text)
    if len(text) > BODY_EXCERPT_LIMIT:
        return text[:BODY_EXCERPT_LIMIT] + "..."
    return text


def error_from_response(
    response: httpx.Response,
    *,
    error_type: type[RequestError] | None = None,
    message: str | None = None,
    redactor: Redactor | None = None,
) -> RequestError:
    """Build the exception for an unwanted response: the only place errors are made.

    The message is what the server said, after the caller's ``message`` (what failed)
    when there is one: GitHub's and the actions service's JSON ``message`` (their
    ``{"message", "documentation_url"}`` and ``{"typeName", "message"}`` bodies) or a
    ``text/plain`` body; else the caller's message, else the body's excerpt. So a PAT
    without the scope reads ``registration token request failed: Resource not
    accessible by personal access token (POST ..., status 403)``, as ARC's and
    actions/scaleset's clients put the service's message into their errors.
    ``typeName`` picks RunnerExists/RunnerNotFound/JobStillRunning unless
    ``error_type`` (the caller's mapping of this status) says otherwise.
    """
    excerpt = body_excerpt(response, redactor)
    type_name, said = _service_exception(response, excerpt)
    limited = is_rate_limited(response)
    fallback = RateLimitedError if limited else RequestError
    cls = error_type or _class_for_type_name(type_name) or fallback
    if message and said:
        text = f"{message}: {said}"
    else:
        text = message or said or excerpt or response.reason_phrase or "request failed"
    return cls(
        redactor(text) if redactor else text,
        method=response.request.method,
        url=redact_url(response.request.url, redactor),
        status=response.status_code,
        activity_id=response.headers.get("ActivityId"),
        github_request_id=response.headers.get("X-GitHub-Request-Id"),
        type_name=type_name,
        body=excerpt,
        retry_after=rate_limit_wait(response, now=time.time()) if limited else None,
    )


HttpxFailure = httpx.HTTPError | httpx.InvalidURL
"""Every exception httpx raises for a request (``InvalidURL`` is no ``HTTPError``)."""


def error_from_exception(
    method: str, url: str, error: HttpxFailure, *, redactor: Redactor
) -> RequestError:
    """Build the exception for an exchange that yielded no usable response (status None).

    ``url`` must already be redacted; the library's reason is scrubbed of secrets and
    of URL userinfo (a proxy URL from the environment may carry a password).
    """
    detail = _USERINFO.sub("//", redactor(str(error)))[:BODY_EXCERPT_LIMIT]
    what = "no response" if isinstance(error, httpx.TransportError) else "request failed"
    reason = f"{what}: {type(error).__name__}" + (f": {detail}" if detail else "")
    return RequestError(reason, method=method, url=url, status=None)


class _LazyText:
    """Text computed the first time it is shown (``str()``, a log line's ``%s``), then kept."""

    def __init__(self, compute: Callable[[], str]) -> None:
        self._compute = compute
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            self._text = self._compute()
        return self._text


def _shown_url(url: httpx.URL | str, redactor: Redactor) -> str:
    """``redact_url``, or a placeholder when the URL is too broken to parse."""
    try:
        return redact_url(url, redactor)
    except httpx.InvalidURL:
        return "[invalid URL]"


def _service_exception(response: httpx.Response, excerpt: str) -> tuple[str | None, str]:
    """``(typeName, what the server said)``: its JSON ``message`` or its plain-text body
    (``""`` when the body says nothing of the kind, e.g. an HTML page or a success body)."""
    if "text/plain" in response.headers.get("Content-Type", ""):
        return None, excerpt
    try:
        decoded = json.loads(response.content.decode("utf-8", errors="replace").lstrip("\ufeff"))
    except ValueError:
        return None, ""
    if not isinstance(decoded, dict):
        return None, ""
    type_name = decoded.get("typeName")
    message = decoded.get("message")
    return (
        type_name if isinstance(type_name, str) else None,
        message.strip()[:BODY_EXCERPT_LIMIT] if isinstance(message, str) else "",
    )


def _class_for_type_name(type_name: str | None) -> type[RequestError] | None:
    for marker, cls in _SERVICE_EXCEPTIONS:
        if type_name and marker in type_name:
            return cls
    return None


# Loading a CA bundle into a TLS context costs ~20 ms of CPU, and httpx makes a context
# for every client and transport given verify=True: a controller building a client per
# scale set, or a test suite building hundreds, paid it each time. Contexts are
# thread-safe, and httpcore only sets ALPN on them per connection, the same (HTTP/1.1)
# for every client here, so each is made once per process; a client with http2=True
# would need a context of its own.
@functools.cache
def default_tls_context() -> ssl.SSLContext:
    """What httpx verifies with for ``verify=True`` (its CA bundle, or SSL_CERT_FILE /
    SSL_CERT_DIR as read the first time), made once per process."""
    return httpx.create_ssl_context()


@functools.lru_cache(maxsize=32)
def ssl_context(root_ca: str | None) -> ssl.SSLContext | bool:
    """TLS verification: system trust, plus ``root_ca`` (a PEM string) when given; one
    context per distinct ``root_ca`` per process.

    Every certificate of ``root_ca`` is a trust anchor, as in Go's client (ARC's):
    a bundle holding only the intermediate CA that signed the server's certificate
    is enough, with no chain up to a self-signed root. RootCaError when ``root_ca``
    holds no PEM certificate.
    """
    if not root_ca:
        return True
    context = ssl.create_default_context()
    # OpenSSL otherwise insists on reaching a self-signed root and answers "unable to
    # get issuer certificate" for the intermediate-only bundles ARC users hand over.
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    try:
        context.load_verify_locations(cadata=root_ca)
    except (ssl.SSLError, TypeError, ValueError) as exc:
        # SSLError.reason is often None: name the kind of failure rather than print "None".
        reason = getattr(exc, "reason", None) or type(exc).__name__
        raise RootCaError(
            f"server_root_ca is not a valid PEM certificate: {reason}", reason=str(reason)
        ) from None
    return context


class ProxyRoutes(httpx.BaseTransport):
    """Sends each request through the proxy ``settings.proxy_for`` picks for its URL
    (with that proxy's basic ``Proxy-Authorization``), or directly: Go's httpproxy rules
    request by request, which httpx's URL-pattern mounts cannot express (CIDR blocks,
    the loopback exemption). ``verify`` checks the servers and an ``https://`` proxy
    alike, as Go's transport checks both with one TLS configuration. Thread-safe.
    """

    def __init__(self, settings: ProxySettings, *, verify: ssl.SSLContext | bool) -> None:
        self._settings = settings
        context = _tls(verify)
        self._direct = httpx.HTTPTransport(verify=context)
        self._via: dict[ProxyServer, httpx.HTTPTransport] = {
            server: httpx.HTTPTransport(verify=context, proxy=_proxy(server, verify))
            for server in settings.servers
        }

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        server = self._settings.proxy_for(url.scheme, url.raw_host.decode("ascii"), url.port)
        transport = self._direct if server is None else self._via[server]
        return transport.handle_request(request)

    def close(self) -> None:
        for transport in (self._direct, *self._via.values()):
            transport.close()


def _tls(verify: ssl.SSLContext | bool) -> ssl.SSLContext:
    return verify if isinstance(verify, ssl.SSLContext) else default_tls_context()


def _proxy(server: ProxyServer, verify: ssl.SSLContext | bool) -> httpx.Proxy:
    # httpcore refuses a TLS context for a plain-http proxy; an https:// proxy is checked
    # with the custom CA too (httpcore's default context otherwise).
    tls = verify if isinstance(verify, ssl.SSLContext) else None
    https = server.url.startswith("https://")
    return httpx.Proxy(server.url, auth=server.auth, ssl_context=tls if https else None)


class _NoCookies(httpx.Cookies):
    """A cookie jar that keeps nothing a response sets."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class _CookielessClient(httpx.Client):
    """An ``httpx.Client`` that neither stores nor sends cookies, like ARC's client (Go's
    ``http.Client`` without a jar): a cookie the service sets is never sent back.
    It also saves the CPU httpx spends on every response mimicking urllib's cookie
    handling (a sixth of a request's cost in the listener's profile)."""

    _no_cookies: Final = _NoCookies()

    @property
    def cookies(self) -> httpx.Cookies:
        return self._no_cookies

    @cookies.setter
    def cookies(self, cookies: object) -> None:
        raise TypeError("this client keeps no cookies")


class HttpSender:
    """Sends requests with retries and translates failures (thread-safe as httpx.Client).

    ``proxy`` given: every request is routed by it (:class:`ProxyRoutes`) and the
    environment's proxy variables are ignored, as ARC's controller gives a set's proxy
    function to its client. No ``proxy``: ``trust_env`` is on, so HTTPS_PROXY /
    HTTP_PROXY / NO_PROXY apply (how ARC configures the listener). A custom
    ``transport`` (e.g. ``httpx.MockTransport``) carries every request itself: proxies
    and ``root_ca`` are then its business. RootCaError for a ``root_ca`` holding no PEM.
    """

    def __init__(
        self,
        *,
        user_agent: str,
        retry: RetryPolicy,
        redactor: Redactor,
        root_ca: str | None = None,
        proxy: ProxySettings | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._retry = retry
        self._redactor = redactor
        verify = ssl_context(root_ca)
        if transport is None and proxy is not None:
            redactor.add(proxy.secret_values(), pin=True)
            transport = ProxyRoutes(proxy, verify=verify)
        self._client = _CookielessClient(
            headers={"User-Agent": user_agent},
            timeout=DEFAULT_TIMEOUT,
            verify=_tls(verify),
            transport=transport,
            trust_env=True,
        )

    @property
    def redactor(self) -> Redactor:
        """The redactor shared by every error this sender builds."""
        return self._redactor

    def send(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        headers: Mapping[str, str],
        json_body: Any = None,
        params: Mapping[str, str] | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        also_retry: Collection[int] = (),
    ) -> httpx.Response:
        """Send one request (retried per policy) and return the final response.

        Any status may come back; the caller decides what is an error. Raises
        RequestError (status None) when no response arrived after the last try, or when
        httpx failed otherwise (an invalid URL, a body that does not decode): no httpx
        exception escapes.
        """
        try:
            request = self._client.build_request(
                method, url, headers=dict(headers), json=json_body, params=params, timeout=timeout
            )
        except httpx.InvalidURL as exc:
            unparsed = _shown_url(url, self._redactor)
            raise error_from_exception(method, unparsed, exc, redactor=self._redactor) from exc
        # Redacted only when a log line or an error shows it: parsing and redacting a
        # URL cost more CPU than the rest of a request (the listener's profile).
        shown = _LazyText(lambda: redact_url(request.url, self._redactor))

        def attempt() -> httpx.Response:
            response = self._client.send(request)
            response.read()
            log.debug("%s %s -> %s", method, shown, response.status_code)
            return response

        named = _LazyText(lambda: f"{method} {shown}")
        try:
            return self._retry.run(attempt, also_retry=also_retry, request=named)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # the one boundary: none escape
            raise error_from_exception(method, str(shown), exc, redactor=self._redactor) from exc

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()
