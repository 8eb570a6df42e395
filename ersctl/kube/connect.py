"""The Kubernetes connection both programs build: an explicit kubeconfig, else
in-cluster, else the default kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``), like
kubectl and controller-runtime; optionally a context of the kubeconfig.

Every way this can fail (a missing or unreadable file, bad YAML, no such context, no
server in it) is one ``ConfigError`` naming ``kubeconfig``, the file and the problem:
exit 2 at either command line. :func:`check_server` asks the server one question at
start, so an unreachable one ends a start with one line naming it.

A kubeconfig's embedded credentials (``certificate-authority-data``,
``client-certificate-data``, ``client-key-data``: every real cluster's kubeconfig has the
first) are handed to the client as anonymous in-memory files (``memfd``), where the
kubernetes client would write each to a temporary file: the image's root filesystem is
read-only (no temporary directory: "No usable temporary directory"), and a client key
never touches a disk.
"""

from __future__ import annotations

import base64
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, TypeVar, cast

import tenacity
import yaml
from kubernetes import client, config
from kubernetes.client import rest
from kubernetes.config import kube_config

from ersctl.kube.client import Reader, Requests
from ersctl.kube.errors import KubeError
from ersctl.kube.resources import BUILTIN
from ersctl.platform.errors import ConfigError
from ersctl.platform.ratelimit import TokenBucket

T = TypeVar("T")

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
OPTION: Final = "kubeconfig"
CHECK_TIMEOUT: Final = (5.0, 10.0)
"""(connect, read) seconds of the start-up check."""


def api_client(kubeconfig: str | None = None, *, context: str | None = None) -> client.ApiClient:
    """An ``ApiClient`` from ``kubeconfig``, the in-cluster service account, or the
    default kubeconfig, in that order. ConfigError naming the file and the problem."""
    if not kubeconfig and in_cluster():
        try:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError) as exc:
            raise ConfigError(OPTION, f"cannot use the in-cluster configuration: {exc}") from None
        return client.ApiClient(configuration)
    path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    return _from_kubeconfig(path, context)


def _from_kubeconfig(path: str, context: str | None) -> client.ApiClient:
    # $KUBECONFIG may list several files; the client merges them. A single missing file
    # is named as such rather than by the library's "Invalid kube-config file".
    if os.pathsep not in path and not Path(path).is_file():
        raise ConfigError(OPTION, f"{path}: no such file")
    try:
        merged = kube_config.KubeConfigMerger(path)  # type: ignore[no-untyped-call]
        if merged.config is None:
            raise ConfigError(OPTION, f"{path}: holds no configuration")
        for entry, key in _embedded_credentials(merged.config.value):
            _move_into_memory(entry, key)
        configuration = client.Configuration()
        loader = kube_config.KubeConfigLoader(  # type: ignore[no-untyped-call]
            config_dict=merged.config, active_context=context, config_base_path=None
        )
        loader.load_and_set(configuration)  # type: ignore[no-untyped-call]
        api = client.ApiClient(configuration)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(OPTION, f"{path}: not valid YAML{where}") from None
    except (config.ConfigException, OSError, ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(OPTION, f"{path}: {_one_line(exc)}") from None
    if not api.configuration.host:
        raise ConfigError(OPTION, f"{path}: names no API server")
    return api


def limit_requests(api: client.ApiClient, *, qps: float, burst: int) -> None:
    """Hold every request of ``api`` to ``qps`` a second with ``burst`` at once, as
    client-go's ``rest.Config`` QPS and Burst do (ARC's ``--k8s-client-rate-limiter-*``);
    a request over the limit waits its turn. ``qps`` 0 leaves ``api`` unlimited."""
    if qps > 0:
        limited = _Limited(api.rest_client, TokenBucket(rate=qps, burst=max(1, burst)))
        # Duck-typed: the client calls only these two methods of its REST layer.
        api.rest_client = cast(rest.RESTClientObject, limited)


class _Limited:
    """The client's REST layer (``request`` and ``close`` are all ``ApiClient`` uses),
    each request taking a token first."""

    def __init__(self, rest: Any, bucket: TokenBucket) -> None:
        self._rest = rest
        self._bucket = bucket

    def request(self, *args: Any, **kwargs: Any) -> Any:
        wait = self._bucket.reserve()
        if wait > 0:
            time.sleep(wait)
        return self._rest.request(*args, **kwargs)

    def close(self) -> None:
        self._rest.close()


_EMBEDDED: Final = (
    ("clusters", "cluster", ("certificate-authority",)),
    ("users", "user", ("client-certificate", "client-key")),
)
"""(section, entry key, file keys): the kubeconfig fields whose ``<key>-data`` variant
the client would write to a temporary file."""


def _embedded_credentials(document: object) -> Iterator[tuple[dict[str, object], str]]:
    """(the cluster or user mapping, the file key) of every ``<key>-data`` field in a
    merged kubeconfig document (its merged entries are ``ConfigNode``s, the first file's
    plain mappings)."""
    if not isinstance(document, dict):
        return
    for section, inner, keys in _EMBEDDED:
        for item in document.get(section) or ():
            body = getattr(item, "value", item)
            entry = body.get(inner) if isinstance(body, dict) else None
            for key in keys if isinstance(entry, dict) else ():
                if entry.get(f"{key}-data"):  # type: ignore[union-attr]
                    yield entry, key  # type: ignore[misc]


def _move_into_memory(entry: dict[str, object], key: str) -> None:
    """Replace ``entry``'s base64 ``<key>-data`` by ``<key>``, the path of an anonymous
    in-memory file holding it (open for the process's life). Where the system has no
    ``memfd_create`` (not Linux) the field stays, and the client writes its temporary
    file as before."""
    if not hasattr(os, "memfd_create"):
        return
    try:
        content = base64.standard_b64decode(str(entry[f"{key}-data"]))
    except ValueError:  # binascii.Error
        raise ValueError(f"{key}-data is not base64") from None
    descriptor = os.memfd_create(key)
    with os.fdopen(os.dup(descriptor), "wb") as file:
        file.write(content)
    entry[key] = f"/proc/self/fd/{descriptor}"
    del entry[f"{key}-data"]


def check_api_group(api: client.ApiClient, *, group: str, version: str) -> None:
    """Ask for the resources of ``group/version`` once (no retries): ``KubeError`` naming
    the server when it cannot be reached or refuses, ``NotFoundError`` when it does not
    serve that API (its CRDs are not installed)."""
    path = f"/apis/{group}/{version}"
    Requests(api).send("GET", path, action=f"get {path}", timeout=CHECK_TIMEOUT)


START_UP_CHECK_ATTEMPTS: Final = 4
"""Tries of a program's start-up request when the server answers with a 5xx or 429
(waits of 1, 2 and 4 s between them): one error from an API server that is restarting
or overloaded must not end the process (a controller replica exited 1 on one 500 in
the soak; a listener Pod would wait out its restart backoff). No answer at all is not
tried again: that already waited for its timeout, and says the server is unreachable."""


def check_at_start_up(check: Callable[[], T], *, logger: logging.Logger) -> T:
    """Run ``check``, again after an answered transient error (a WARNING each, naming
    the request and the wait); its answer is returned, its last error raised."""

    def log_retry(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        logger.warning("start-up check: %s; trying again in %.0f s", error, wait)

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(_answered_transiently),
        stop=tenacity.stop_after_attempt(START_UP_CHECK_ATTEMPTS),
        wait=tenacity.wait_exponential(multiplier=1, max=4),
        before_sleep=log_retry,
        reraise=True,
    )(check)


def _answered_transiently(error: BaseException) -> bool:
    return isinstance(error, KubeError) and error.status is not None and error.transient


def in_cluster() -> bool:
    """True inside a pod with a mounted service account token."""
    return (
        bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
        and (SERVICE_ACCOUNT_DIR / "token").is_file()
    )


def pod_namespace(default: str = "default") -> str:
    """The namespace this pod runs in (``$POD_NAMESPACE``, else the service account's),
    or ``default`` outside a cluster."""
    env = os.environ.get("POD_NAMESPACE")
    if env:
        return env
    try:
        return (SERVICE_ACCOUNT_DIR / "namespace").read_text(encoding="utf-8").strip() or default
    except OSError:
        return default


def own_image(api: client.ApiClient) -> str:
    """The image this process runs from: its own Pod's (``$POD_NAME`` in
    :func:`pod_namespace`) container named ``$CONTAINER_NAME``, else its first one; ""
    outside a Pod or when the Pod cannot be read (the caller says what that means)."""
    name = os.environ.get("POD_NAME", "")
    if not name:
        return ""
    namespace = pod_namespace()
    try:
        pod = Reader(api).get(BUILTIN["pods"], namespace, name, timeout=CHECK_TIMEOUT) or {}
    except KubeError:
        return ""
    containers = [c for c in (pod.get("spec") or {}).get("containers") or () if isinstance(c, dict)]
    wanted = os.environ.get("CONTAINER_NAME", "")
    chosen = [c for c in containers if c.get("name") == wanted] or containers[:1]
    return str(chosen[0].get("image") or "") if chosen else ""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
