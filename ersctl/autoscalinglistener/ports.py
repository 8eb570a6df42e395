"""What the AutoscalingListener reconciler needs from the world (consumer-defined ports).

``ersctl.autoscalinglistener.stores`` implements them on Kubernetes. Errors arrive as
``ersctl.kube.errors.KubeError`` (``NotFoundError``, ``ConflictError``).
"""

from __future__ import annotations

from typing import Any, Protocol

from ersctl.api import AutoscalingListener
from ersctl.autoscalinglistener.objects import GitHubAccess

Json = dict[str, Any]


class ListenerStore(Protocol):
    """AutoscalingListener reads (uncached: a decision must see the last exit it
    recorded) and writes."""

    def get_listener(self, namespace: str, name: str) -> AutoscalingListener | None: ...

    def patch_listener(self, listener: AutoscalingListener, patch: Json) -> AutoscalingListener:
        """Merge patch; a ``metadata.resourceVersion`` in it is a lock."""
        ...

    def patch_listener_status(
        self, listener: AutoscalingListener, patch: Json
    ) -> AutoscalingListener:
        """Merge patch on ``/status``."""
        ...


class ObjectStore(Protocol):
    """The core and RBAC objects a listener is made of, by resource plural
    (``secrets``, ``configmaps``, ``serviceaccounts``, ``roles``, ``rolebindings``,
    ``pods``). Uncached, except :meth:`get_pod`."""

    def get(self, plural: str, namespace: str, name: str) -> Json | None: ...

    def create(self, plural: str, body: Json) -> Json:
        """Create; ``ConflictError`` when the name is taken."""
        ...

    def patch(self, plural: str, namespace: str, name: str, patch: Json) -> Json:
        """JSON merge patch."""
        ...

    def delete(self, plural: str, namespace: str, name: str, *, uid: str = "") -> None:
        """Delete (only the object with ``uid`` when given). NotFound is success."""
        ...

    def get_pod(self, namespace: str, name: str) -> Json | None:
        """The listener Pod, from the watch cache (it may lag)."""
        ...


class ListenerInputs(Protocol):
    """What the listener config takes from the scale set's namespace."""

    def github_access(self, listener: AutoscalingListener) -> GitHubAccess:
        """The credentials of ``spec.githubConfigSecret`` and the CA of
        ``spec.githubServerTLS``; ``FieldError`` naming the field when unusable."""
        ...

    def proxy_variables(self, listener: AutoscalingListener) -> dict[str, str] | None:
        """``http_proxy``/``https_proxy``/``no_proxy`` of ``spec.proxy`` (credentials
        included), None without one; ``FieldError`` naming the field when unusable."""
        ...
