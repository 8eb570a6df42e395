"""A set's proxy Secret: the proxy variables of its runners' Pods, as ARC keeps them.

ARC's EphemeralRunnerSet controller gives every set with a
``spec.ephemeralRunnerSpec.proxy`` one Secret, ``<set>-<hash of the namespace>-runner-proxy``
(``ersctl.naming.proxy_secret_name``), holding ``http_proxy``, ``https_proxy`` and ``no_proxy``
(empty when unset; the proxy URLs with their ``credentialSecretRef`` credentials as
userinfo; the ``noProxy`` entries joined by commas), labelled with the set's scale-set
name and namespace and controlled by the set, so it goes with it. Each runner it
creates names it in ``spec.proxySecretRef``, and the runner controller gives the Pod
those variables by ``secretKeyRef`` (``ersctl.ephemeralrunner.pods.proxy_env``).

:class:`ProxySecrets` keeps it in step: created when missing, patched when the proxy
settings or a credential Secret changed (the next reconcile of the set after a rotated
password), deleted when the set no longer has a proxy. Neither Secret is watched, so a
set with a proxy reads them on each sync; a set without one costs one GET per process
and set, after which this controller knows it deleted (or never made) it.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Mapping
from typing import Any, Final

from ersctl import api
from ersctl.api import SCALE_SET_NAME_LABEL, SCALE_SET_NAMESPACE_LABEL
from ersctl.ephemeralrunnerset.creation import owner_reference
from ersctl.ephemeralrunnerset.ports import ApiReader, Writer
from ersctl.naming import proxy_secret_name
from ersctl.platform import logs
from ersctl.scaleset.documents import secret_data
from ersctl.scaleset.network import proxy_spec as read_proxy_spec
from ersctl.scaleset.network import resolve_proxy
from ersctl.scaleset.ports import CredentialsFieldError
from ghalistener.actions.proxy import ProxyServer, ProxySettings

RUNNER_SPEC_PATH: Final = "spec.ephemeralRunnerSpec"


def proxy_variables(settings: ProxySettings) -> dict[str, str]:
    """The Secret's values: ``http_proxy``, ``https_proxy``, ``no_proxy``."""

    def url(server: ProxyServer | None) -> str:
        return server.url_with_credentials() if server is not None else ""

    return {
        "http_proxy": url(settings.http),
        "https_proxy": url(settings.https),
        "no_proxy": ",".join(settings.no_proxy),
    }


def proxy_secret(ers: api.EphemeralRunnerSet, settings: ProxySettings) -> dict[str, Any]:
    """The proxy Secret of ``ers`` for ``settings``, controlled by the set."""
    labels = {
        key: ers.labels.get(key, "") for key in (SCALE_SET_NAME_LABEL, SCALE_SET_NAMESPACE_LABEL)
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": proxy_secret_name(ers.namespace, ers.name),
            "namespace": ers.namespace,
            "labels": labels,
            "ownerReferences": [owner_reference(ers)],
        },
        "data": {key: _b64(value) for key, value in proxy_variables(settings).items()},
    }


class ProxySecrets:
    """Keeps each set's proxy Secret in step with its proxy settings. Thread-safe; the
    runtime never syncs one set from two threads at once.

    Reads go through ``api`` (``get_secret``: uncached), writes through ``writer``.
    """

    def __init__(self, *, api: ApiReader, writer: Writer) -> None:
        self._api = api
        self._writer = writer
        self._lock = threading.Lock()
        # Sets this process knows to have no proxy Secret: a set without a proxy then
        # costs no request per reconcile (a steady-state reconcile sends none).
        self._absent: set[str] = set()

    def sync(self, ers: api.EphemeralRunnerSet) -> None:
        """Create, update or delete ``ers``'s proxy Secret to match its proxy settings.

        ``CredentialsFieldError`` naming the field when a setting is unusable (a missing
        credential Secret, a bad URL): nothing is written then. KubeError from the API.
        """
        spec = read_proxy_spec(ers.ephemeral_runner_spec, prefix=RUNNER_SPEC_PATH)
        name = proxy_secret_name(ers.namespace, ers.name)
        if spec is None:
            self._delete(ers, name)
            return
        settings, _ = resolve_proxy(spec, namespace=ers.namespace, get_secret=self._api.get_secret)
        logs.redact(settings.secret_values())
        with self._lock:
            self._absent.discard(_key(ers.namespace, name))
        desired = proxy_secret(ers, settings)
        live = self._api.get_secret(ers.namespace, name)
        if live is None:
            self._writer.create_secret(desired)
            return
        patch = _difference(live, desired)
        if patch:
            self._writer.patch_secret(ers.namespace, name, patch)

    def forget(self, namespace: str, name: str) -> None:
        """Drop what is remembered of the set ``namespace/name`` (it is gone)."""
        with self._lock:
            self._absent.discard(_key(namespace, proxy_secret_name(namespace, name)))

    def _delete(self, ers: api.EphemeralRunnerSet, name: str) -> None:
        key = _key(ers.namespace, name)
        with self._lock:
            if key in self._absent:
                return
        live = self._api.get_secret(ers.namespace, name)
        # Only a Secret this set controls: one of that name made by anybody else stays.
        if live is not None and _controller_uid(live) == ers.uid:
            self._writer.delete_secret(ers.namespace, name)
        with self._lock:
            self._absent.add(key)


def _difference(live: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch (locked to ``live``'s resourceVersion) that makes ``live``'s
    values and labels ``desired``'s; {} when they already are."""
    metadata = live.get("metadata") or {}
    where = f"{metadata.get('namespace')}/{metadata.get('name')}"
    try:
        values = secret_data(live, where=where, field=f"{RUNNER_SPEC_PATH}.proxy")
    except CredentialsFieldError:
        values = {}  # undecodable: ours to overwrite, not the set's fault
    wanted = {k: base64.b64decode(v).decode() for k, v in desired["data"].items()}
    labels = desired["metadata"]["labels"]
    stale_labels = {k: v for k, v in labels.items() if (metadata.get("labels") or {}).get(k) != v}
    if all(values.get(k) == v for k, v in wanted.items()) and not stale_labels:
        return {}
    return {
        "metadata": {"resourceVersion": metadata.get("resourceVersion"), "labels": labels},
        "data": desired["data"],
    }


def _controller_uid(document: Mapping[str, Any]) -> str | None:
    for ref in (document.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("uid") or "")
    return None


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")
