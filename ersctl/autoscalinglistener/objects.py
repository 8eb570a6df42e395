"""Pure builders of what the listener controller creates for an AutoscalingListener (AL),
named, labelled and shaped as ARC's resource builder makes them:

- the config Secret ``<al>-config`` (AL namespace), key ``config.json``: the listener
  configuration ARC's controller writes, byte for byte (:func:`listener_config_json`):
  Go's JSON encoder on ``cmd/ghalistener/config.Config``, so ARC's listener image runs
  from it and ours (``ghalistener.config``) reads it;
- the listener Pod ``<al>`` (AL namespace): container ``listener`` running
  ``/ghalistener`` with ``LISTENER_CONFIG_PATH=/etc/gha-listener/config.json`` (the
  Secret mounted there), the AL's labels (ARC's ``app.kubernetes.io/component:
  runner-scale-set-listener`` and the scale set's, which the controller's
  ``gha_controller_running_listeners`` gauge reads), the metrics port, restartPolicy
  Never, and the AL's ``spec.template`` merged in as ARC merges it
  (:func:`merge_template`);
- the proxy Secret (AL namespace) when the AL has a ``proxy``, its values the
  listener's ``http_proxy``/``https_proxy``/``no_proxy``;
- the ServiceAccount, Role and RoleBinding: ``ersctl.autoscalinglistener.rbac``.

Their names (:class:`ListenerNames`) are ARC 0.15's, each after the AL itself, or, for
a listener ARC 0.14 made, 0.14's (``<scale set>-<hash of its namespace>-listener``), so
a listener taken over keeps its ServiceAccount, Role, RoleBinding and proxy Secret
rather than gaining a second set. Everything in the AL's namespace carries a controller
ownerReference to it and ARC's ``integrity-hash`` annotation (our hash of what ARC
hashes; ARC's own value cannot be reproduced). Invalid input raises
:class:`~ersctl.api.FieldError` naming the AL's field. Nothing here does I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ersctl.api import (
    AL_KIND,
    COMPONENT_LABEL,
    INTEGRITY_HASH_ANNOTATION,
    LISTENER_COMPONENT,
    SCALE_SET_NAME_LABEL,
    SCALE_SET_NAMESPACE_LABEL,
    AutoscalingListener,
    FieldError,
    JsonObject,
    controller_reference,
)
from ersctl.autoscalinglistener.template import CONFIG_VOLUME, CONTAINER, merge_template
from ersctl.ephemeralrunner.pods import b64, string_map, template_hash
from ersctl.naming import legacy_listener_name

CONFIG_KEY: Final = "config.json"
CONFIG_DIR: Final = "/etc/gha-listener"
CONFIG_PATH_ENV: Final = "LISTENER_CONFIG_PATH"
ENTRYPOINT: Final = "/ghalistener"
OS_LABEL: Final = "kubernetes.io/os"
TERMINATION_GRACE_SECONDS: Final = 60
LISTENER_HASH_ANNOTATION: Final = "actions.github.com/listener-hash"
"""Ours, on the Pod: a hash of what it started from: its config, its proxy variables,
its spec (image, template) and its ServiceAccount's annotations (a workload identity
bound there reaches a Pod only when it starts). A Pod whose hash differs from the
wanted one is rolled: the listener reads all of it once, at start, and a reconcile
that rewrote the Secret may have died before deleting the Pod. The Pod's labels and
annotations are not in it: they are patched in place, as ARC does. Neither is the
runner template: a template change leaves the listener running (see
``ersctl.autoscalinglistener.reconciler`` on why the set's cleanup marker stays
sound). ARC's ``integrity-hash`` annotation carries the same value; only ours is
read, since a Pod ARC made carries ARC's value under ARC's key."""
PROXY_VARIABLES: Final = ("http_proxy", "https_proxy", "no_proxy")


@dataclass(frozen=True, kw_only=True)
class ListenerSettings:
    """What the controller's flags decide for every listener (ARC's controller flags)."""

    image: str = ""
    """Used when the AL names no ``spec.image`` (ours: the controller's own image)."""
    metrics_addr: str = ":8080"
    """The listener's metrics address; "" (or "0") turns its metrics server off."""
    metrics_endpoint: str = "/metrics"
    log_level: str = "debug"
    log_format: str = "text"
    image_pull_secrets: tuple[str, ...] = ()
    """The listener Pod's imagePullSecrets where the AL names none (ARC's
    ``--auto-scaler-image-pull-secrets``)."""


@dataclass(frozen=True, kw_only=True)
class GitHubAccess:
    """What the listener config holds from the scale set's credentials Secret and CA."""

    token: str = ""
    app_id: str = ""
    installation_id: int = 0
    private_key: str = ""
    root_ca: str = ""


# -- names ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ListenerNames:
    """The names of what a listener is made of (:func:`listener_names`)."""

    service_account: str
    role: str
    role_binding: str
    proxy_secret: str
    config_secret: str


def listener_names(al: AutoscalingListener, *, legacy: bool = False) -> ListenerNames:
    """ARC 0.15's names: the ServiceAccount, Role and RoleBinding named after the AL,
    the proxy Secret ``<al>-proxy``, the config Secret ``<al>-config``. ``legacy``:
    ARC 0.14's, ``<scale set>-<hash of its namespace>-listener`` (and ``...-proxy``)."""
    base = legacy_listener_name(al.scale_set_namespace, al.scale_set_name) if legacy else al.name
    return ListenerNames(
        service_account=base,
        role=base,
        role_binding=base,
        proxy_secret=f"{base}-proxy",
        config_secret=f"{al.name}-config",
    )


def made_for(obj: Mapping[str, Any], al: AutoscalingListener) -> bool:
    """Was ``obj`` (a ServiceAccount, Role, RoleBinding or Secret) made for ``al``'s
    scale set? By ARC's scale-set labels, or a controller ownerReference to ``al``."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    if (labels.get(SCALE_SET_NAMESPACE_LABEL), labels.get(SCALE_SET_NAME_LABEL)) == (
        al.scale_set_namespace,
        al.scale_set_name,
    ):
        return True
    refs = meta.get("ownerReferences") or []
    return any(ref.get("controller") and ref.get("uid") == al.uid for ref in refs)


# -- the config Secret ---------------------------------------------------------------------


def config_secret(al: AutoscalingListener, config_json: str) -> JsonObject:
    """The config Secret holding ``config_json``, controlled by ``al``, with the AL's
    labels and those and the annotations of ``spec.configSecretMetadata``."""
    labels, annotations = resource_meta(al, "configSecretMetadata")
    data = {CONFIG_KEY: b64(config_json)}
    metadata = metadata_of(al, listener_names(al).config_secret, labels={**al.labels, **labels})
    metadata["annotations"] = {**annotations, INTEGRITY_HASH_ANNOTATION: template_hash(data)}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": metadata,
        "data": data,
    }


# -- the Pod -----------------------------------------------------------------------------


def listener_pod(
    al: AutoscalingListener,
    *,
    names: ListenerNames,
    config_json: str,
    settings: ListenerSettings,
    proxy: Mapping[str, str] | None = None,
    service_account_annotations: Mapping[str, str] | None = None,
) -> JsonObject:
    """The listener Pod of ``al`` (see the module docstring), started from
    ``config_json``, the ``proxy`` variables its environment takes from the proxy
    Secret and the identity its ServiceAccount's annotations bind (all in its hash:
    the listener gets them once, at start). FieldError naming the field when the AL
    has no image to run or its template is malformed."""
    env: list[JsonObject] = [{"name": CONFIG_PATH_ENV, "value": f"{CONFIG_DIR}/{CONFIG_KEY}"}]
    env += proxy_env(al, names)
    container: JsonObject = {
        "name": CONTAINER,
        "image": al.image or settings.image,
        "command": [ENTRYPOINT],
        "env": env,
        "volumeMounts": [{"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True}],
    }
    port = _metrics_port(settings.metrics_addr)
    if port is not None:
        container["ports"] = [{"containerPort": port, "protocol": "TCP", "name": "metrics"}]
    spec: JsonObject = {
        "serviceAccountName": names.service_account,
        "nodeSelector": {OS_LABEL: "linux"},
        "containers": [container],
        "volumes": [{"name": CONFIG_VOLUME, "secret": {"secretName": names.config_secret}}],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
    }
    pull_secrets = al.raw.get("spec", {}).get("imagePullSecrets") or [
        {"name": name} for name in settings.image_pull_secrets
    ]
    if pull_secrets:
        spec["imagePullSecrets"] = copy.deepcopy(pull_secrets)
    pod: JsonObject = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata_of(al, al.name, labels=pod_labels(al)),
        "spec": spec,
    }
    template = al.section("template")
    if template is not None:
        merge_template(pod, template)
    wanted = template_hash(
        config_json, dict(proxy or {}), pod["spec"], dict(service_account_annotations or {})
    )
    pod["metadata"].setdefault("annotations", {}).update(
        {LISTENER_HASH_ANNOTATION: wanted, INTEGRITY_HASH_ANNOTATION: wanted}
    )
    if not container.get("image"):
        raise FieldError("spec.image", "is empty, and so is the controller's --listener-image")
    return pod


def pod_labels(al: AutoscalingListener) -> dict[str, str]:
    """The AL's labels (ARC's ARS controller gives it the scale set's) and, whatever it
    has, ARC's listener component label and the scale set's name and namespace: the
    listener Pod informer selects on the first (a Pod without it would be invisible
    to this controller, which would then create it again and again), ARC's
    running-listeners gauge reads the others."""
    return {
        **al.labels,
        COMPONENT_LABEL: LISTENER_COMPONENT,
        **scale_set_labels(al),
    }


def proxy_env(al: AutoscalingListener, names: ListenerNames) -> list[JsonObject]:
    """ARC's proxy variables of the listener container, from the proxy Secret by
    ``secretKeyRef``, each only when its part of ``spec.proxy`` is set."""
    proxy = al.section("proxy")
    if proxy is None:
        return []
    present = (
        proxy.get("http") is not None,
        proxy.get("https") is not None,
        bool(proxy.get("noProxy")),
    )
    return [
        {"name": var, "valueFrom": {"secretKeyRef": {"name": names.proxy_secret, "key": var}}}
        for var, used in zip(PROXY_VARIABLES, present, strict=True)
        if used
    ]


def proxy_secret(
    al: AutoscalingListener, names: ListenerNames, variables: Mapping[str, str]
) -> JsonObject:
    """The listener's proxy Secret holding ``variables`` (``http_proxy``...)."""
    data = {key: b64(value) for key, value in variables.items()}
    metadata = metadata_of(al, names.proxy_secret, labels=scale_set_labels(al))
    metadata["annotations"] = {INTEGRITY_HASH_ANNOTATION: template_hash(data)}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": metadata,
        "data": data,
    }


def _metrics_port(address: str) -> int | None:
    if address in ("", "0"):
        return None
    _, sep, port = address.rpartition(":")
    return int(port) if sep and port.isdigit() else None


def scale_set_labels(al: AutoscalingListener) -> dict[str, str]:
    """ARC's labels naming the scale set a listener object was made for."""
    return {
        SCALE_SET_NAMESPACE_LABEL: al.scale_set_namespace,
        SCALE_SET_NAME_LABEL: al.scale_set_name,
    }


# -- shared ---------------------------------------------------------------------------------


def owner_reference(al: AutoscalingListener) -> JsonObject:
    if not al.uid:
        raise FieldError("metadata.uid", "is empty: the listener was not read from the server")
    return controller_reference(al, AL_KIND)


def metadata_of(al: AutoscalingListener, name: str, *, labels: dict[str, str]) -> JsonObject:
    metadata: JsonObject = {
        "name": name,
        "namespace": al.namespace,
        "ownerReferences": [owner_reference(al)],
    }
    if labels:
        metadata["labels"] = labels
    return metadata


def resource_meta(al: AutoscalingListener, field: str) -> tuple[dict[str, str], dict[str, str]]:
    meta = al.section(field) or {}
    return (
        string_map(meta, "labels", f"spec.{field}"),
        string_map(meta, "annotations", f"spec.{field}"),
    )
