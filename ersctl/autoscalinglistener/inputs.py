"""What a listener's config takes from its scale set's namespace: the credentials
Secret (``spec.githubConfigSecret``), the CA of ``spec.githubServerTLS`` and the
credentials of ``spec.proxy``, read uncached (none is watched) and parsed by the one
credentials parser both programs use. Implements ``ListenerInputs``.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from ersctl.api import AutoscalingListener, FieldError
from ersctl.autoscalinglistener.objects import GitHubAccess
from ersctl.ephemeralrunnerset.proxysecret import proxy_variables
from ersctl.scaleset.clients import credentials_from_secret
from ersctl.scaleset.documents import DocumentGetter
from ersctl.scaleset.network import network_spec, resolve
from ghalistener.actions.auth import AppCredentials, PatCredentials

SECRET_FIELD: Final = "spec.githubConfigSecret"  # noqa: S105 (a field path)


class ScaleSetInputs:
    """Reads through ``get_secret`` and ``get_configmap`` (uncached GETs)."""

    def __init__(self, *, get_secret: DocumentGetter, get_configmap: DocumentGetter) -> None:
        self._get_secret = get_secret
        self._get_configmap = get_configmap

    def github_access(self, listener: AutoscalingListener) -> GitHubAccess:
        namespace = _scale_set_namespace(listener)
        name = listener.github_config_secret
        if not name:
            raise FieldError(SECRET_FIELD, "must name a Secret")
        secret = self._get_secret(namespace, name)
        if secret is None:
            raise FieldError(SECRET_FIELD, f"Secret {namespace}/{name} not found")
        credentials = credentials_from_secret(
            secret, where=f"{namespace}/{name}", field=SECRET_FIELD
        )
        network = network_spec(listener.spec, prefix="spec")
        root_ca = ""
        if network.ca is not None:
            resolved = resolve(
                dataclasses.replace(network, proxy=None),
                namespace=namespace,
                get_secret=self._get_secret,
                get_configmap=self._get_configmap,
            )
            root_ca = resolved.settings.root_ca or ""
        if isinstance(credentials, PatCredentials):
            return GitHubAccess(token=credentials.token, root_ca=root_ca)
        assert isinstance(credentials, AppCredentials)
        return GitHubAccess(
            app_id=credentials.app_id,
            installation_id=credentials.installation_id,
            private_key=credentials.private_key,
            root_ca=root_ca,
        )

    def proxy_variables(self, listener: AutoscalingListener) -> dict[str, str] | None:
        network = network_spec(listener.spec, prefix="spec")
        if network.proxy is None:
            return None
        resolved = resolve(
            dataclasses.replace(network, ca=None),
            namespace=_scale_set_namespace(listener),
            get_secret=self._get_secret,
            get_configmap=self._get_configmap,
        )
        assert resolved.settings.proxy is not None
        return proxy_variables(resolved.settings.proxy)


def _scale_set_namespace(listener: AutoscalingListener) -> str:
    namespace = listener.scale_set_namespace
    if not namespace:
        raise FieldError(
            "spec.autoscalingRunnerSetNamespace", "must name the scale set's namespace"
        )
    return namespace
