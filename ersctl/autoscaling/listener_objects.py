"""Pure builders of what the listener controller creates for an AutoscalingListener (AL),
named, labelled and shaped as ARC 0.14's resource builder makes them:

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
- the ServiceAccount ``<scale set>-<hash>-listener`` (AL namespace), and the Role and
  RoleBinding of that name in the scale set's namespace, granting exactly what the
  listener sends (:func:`listener_rules`);
- the proxy Secret ``<scale set>-<hash>-listener-proxy`` (AL namespace) when the AL has
  a ``proxy``, its values the listener's ``http_proxy``/``https_proxy``/``no_proxy``.

Everything in the AL's namespace carries a controller ownerReference to it; the Role and
RoleBinding live in another namespace, where an ownerReference cannot point, and carry
ARC's listener labels instead. Invalid input raises :class:`~ersctl.api.FieldError`
naming the AL's field. Nothing here does I/O.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ersctl.api import (
    AL_KIND,
    COMPONENT_LABEL,
    LISTENER_COMPONENT,
    RUNNER_SPEC_HASH_ANNOTATION,
    SCALE_SET_NAME_LABEL,
    SCALE_SET_NAMESPACE_LABEL,
    AutoscalingListener,
    FieldError,
    JsonObject,
    controller_reference,
)
from ersctl.naming import fnv_hash
from ersctl.runner.pods import b64, string_map, template_hash

CONTAINER: Final = "listener"
CONFIG_KEY: Final = "config.json"
CONFIG_DIR: Final = "/etc/gha-listener"
CONFIG_VOLUME: Final = "listener-config"
CONFIG_PATH_ENV: Final = "LISTENER_CONFIG_PATH"
ENTRYPOINT: Final = "/ghalistener"
TERMINATION_GRACE_SECONDS: Final = 60
LISTENER_HASH_ANNOTATION: Final = "actions.github.com/listener-hash"
"""Ours, on the Pod: a hash of what it started from: its config, the Pod itself (image,
template, labels) and the AL's :data:`RUNNER_SPEC_HASH_ANNOTATION`. A Pod whose hash
differs from the wanted one is rolled: the listener reads its config once, at start,
and a reconcile that rewrote the Secret may have died before deleting the Pod."""
RULES_HASH_LABEL: Final = "role-policy-rules-hash"
LISTENER_NAME_LABEL: Final = "auto-scaling-listener-name"
LISTENER_NAMESPACE_LABEL: Final = "auto-scaling-listener-namespace"
PROXY_VARIABLES: Final = ("http_proxy", "https_proxy", "no_proxy")

# ARC's mergeListenerPodWithTemplate: the pod-level fields a template replaces, present
# or not (an absent one clears ours, terminationGracePeriodSeconds included, as ARC).
_REPLACED_POD_FIELDS: Final = (
    "initContainers",
    "ephemeralContainers",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "nodeSelector",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "securityContext",
    "hostname",
    "subdomain",
    "affinity",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "priority",
    "dnsConfig",
    "readinessGates",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "overhead",
    "topologySpreadConstraints",
    "setHostnameAsFQDN",
    "os",
    "hostUsers",
    "schedulingGates",
    "resourceClaims",
)
# ARC's mergeListenerContainer: list fields appended, the rest replaced.
_APPENDED_CONTAINER_FIELDS: Final = (
    "env",
    "args",
    "ports",
    "envFrom",
    "volumeMounts",
    "volumeDevices",
)
_REPLACED_CONTAINER_FIELDS: Final = (
    "imagePullPolicy",
    "workingDir",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "securityContext",
    "resizePolicy",
    "restartPolicy",
    "stdin",
    "stdinOnce",
    "tty",
)


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


def scale_set_listener_name(al: AutoscalingListener) -> str:
    """``<scale set>-<first 8 of its namespace's hash>-listener``: the ServiceAccount,
    Role and RoleBinding (ARC names them so; its AL has the same name)."""
    return f"{al.scale_set_name}-{fnv_hash(al.scale_set_namespace.encode())[:8]}-listener"


def config_secret_name(al: AutoscalingListener) -> str:
    return f"{al.name}-config"


def proxy_secret_name(al: AutoscalingListener) -> str:
    return f"{scale_set_listener_name(al)}-proxy"


# -- the config Secret ---------------------------------------------------------------------


def listener_config_json(
    al: AutoscalingListener, access: GitHubAccess, settings: ListenerSettings
) -> str:
    """The config ARC's controller writes for ``al``: its keys in ARC's order, Go's
    encoding (no spaces, ``<``/``>``/``&`` escaped, a final newline)."""
    metrics_on = settings.metrics_addr not in ("", "0")
    config: JsonObject = {
        "configure_url": al.github_config_url,
        "vault_type": "",
        "vault_lookup_key": "",
        "github_app_id": access.app_id,
        "github_app_installation_id": access.installation_id,
        "github_app_private_key": access.private_key,
        "github_token": access.token,
        "ephemeral_runner_set_namespace": al.scale_set_namespace,
        "ephemeral_runner_set_name": al.runner_set_name,
        "max_runners": al.max_runners,
        "min_runners": al.min_runners,
        "runner_scale_set_id": al.runner_scale_set_id,
        "runner_scale_set_name": al.scale_set_name,
        "server_root_ca": access.root_ca,
        "log_level": settings.log_level,
        "log_format": settings.log_format,
        "metrics_addr": settings.metrics_addr if metrics_on else "",
        "metrics_endpoint": settings.metrics_endpoint if metrics_on else "",
        "metrics": _metrics_block(al),
    }
    return go_json(config) + "\n"


def _metrics_block(al: AutoscalingListener) -> JsonObject | None:
    """ARC's MetricsConfig as Go encodes it: kinds in struct order, names sorted, a
    histogram's ``buckets`` only when it has some."""
    block = al.section("metrics")
    if block is None:
        return None
    out: JsonObject = {}
    for kind in ("counters", "gauges", "histograms"):
        metrics = block.get(kind)
        if metrics is None:
            continue
        if not isinstance(metrics, dict):
            raise FieldError(f"spec.metrics.{kind}", "must map metric names to settings")
        out[kind] = {name: _metric(kind, name, metrics[name]) for name in sorted(metrics)}
    return out


def _metric(kind: str, name: str, value: object) -> JsonObject:
    path = f"spec.metrics.{kind}.{name}"
    if not isinstance(value, dict):
        raise FieldError(path, "must be an object with labels")
    labels = value.get("labels")
    if not isinstance(labels, list) or not all(isinstance(v, str) for v in labels):
        raise FieldError(f"{path}.labels", "must be a list of label names")
    metric: JsonObject = {"labels": labels}
    buckets = value.get("buckets")
    if kind == "histograms" and buckets:
        if not isinstance(buckets, list) or not all(
            isinstance(b, int | float) and not isinstance(b, bool) for b in buckets
        ):
            raise FieldError(f"{path}.buckets", "must be a list of numbers")
        metric["buckets"] = [float(b) for b in buckets]
    return metric


def go_json(value: object) -> str:
    """``value`` as Go's ``encoding/json`` writes it: compact, HTML characters escaped,
    integral floats without a fraction (``1``, not ``1.0``)."""
    text = json.dumps(_go_numbers(value), separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _go_numbers(value: object) -> object:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _go_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_numbers(v) for v in value]
    return value


def config_secret(al: AutoscalingListener, config_json: str) -> JsonObject:
    """The config Secret holding ``config_json``, controlled by ``al``, with the labels
    and annotations of ``spec.configSecretMetadata``."""
    labels, annotations = _resource_meta(al, "configSecretMetadata")
    metadata = _metadata(al, config_secret_name(al), labels={**al.labels, **labels})
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": metadata,
        "data": {CONFIG_KEY: b64(config_json)},
    }


# -- the Pod -----------------------------------------------------------------------------


def listener_pod(
    al: AutoscalingListener,
    *,
    config_json: str,
    settings: ListenerSettings,
    proxy: Mapping[str, str] | None = None,
) -> JsonObject:
    """The listener Pod of ``al`` (see the module docstring), started from
    ``config_json`` and the ``proxy`` variables its environment takes from the proxy
    Secret (both in its hash: the listener reads them once, at start). FieldError
    naming the field when the AL has no image to run or its template is malformed."""
    env: list[JsonObject] = [{"name": CONFIG_PATH_ENV, "value": f"{CONFIG_DIR}/{CONFIG_KEY}"}]
    env += proxy_env(al)
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
        "serviceAccountName": scale_set_listener_name(al),
        "containers": [container],
        "volumes": [{"name": CONFIG_VOLUME, "secret": {"secretName": config_secret_name(al)}}],
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
        "metadata": _metadata(al, al.name, labels=pod_labels(al)),
        "spec": spec,
    }
    template = al.section("template")
    if template is not None:
        merge_template(pod, template)
    wanted = template_hash(
        config_json, dict(proxy or {}), pod, al.annotations.get(RUNNER_SPEC_HASH_ANNOTATION, "")
    )
    pod["metadata"].setdefault("annotations", {})[LISTENER_HASH_ANNOTATION] = wanted
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
        **_scale_set_labels(al),
    }


def merge_template(pod: JsonObject, template: Mapping[str, Any]) -> None:
    """Merge an AL's ``spec.template`` into ``pod`` as ARC does: labels and annotations
    only where the Pod has none of that key; the container named ``listener`` merged
    into ours (image and command when set, lists appended, the rest replaced); other
    containers and volumes appended; ``restartPolicy`` and ``imagePullSecrets`` when
    set; the other pod fields ARC lists taken from the template, present or not.
    FieldError naming the field when the template is malformed."""
    meta = _object_at(template, "metadata", "spec.template")
    for key in ("labels", "annotations"):
        ours = pod["metadata"].setdefault(key, {})
        for name, value in string_map(meta, key, "spec.template.metadata").items():
            ours.setdefault(name, value)
    tmpl_spec = _object_at(template, "spec", "spec.template")
    containers = tmpl_spec.get("containers") or []
    if not isinstance(containers, list):
        raise FieldError("spec.template.spec.containers", "must be a list")
    for index, container in enumerate(containers):
        path = f"spec.template.spec.containers[{index}]"
        if not isinstance(container, dict) or not isinstance(container.get("name"), str):
            raise FieldError(path, "must be a container with a name")
        if container["name"] == CONTAINER:
            _merge_container(pod["spec"]["containers"][0], container, path)
        elif not container.get("image"):
            # The API server would refuse the Pod; say which field of the AL it is.
            raise FieldError(f"{path}.image", "is required for a container besides the listener")
        elif any(c["name"] == container["name"] for c in pod["spec"]["containers"]):
            raise FieldError(f"{path}.name", f"{container['name']!r} is taken by another container")
        else:
            pod["spec"]["containers"].append(copy.deepcopy(container))
    spec = pod["spec"]
    for key in ("restartPolicy", "imagePullSecrets"):
        if tmpl_spec.get(key):
            spec[key] = copy.deepcopy(tmpl_spec[key])
    volumes = tmpl_spec.get("volumes") or []
    if not isinstance(volumes, list):
        raise FieldError("spec.template.spec.volumes", "must be a list")
    taken = {CONFIG_VOLUME}
    for index, volume in enumerate(volumes):
        volume_name = str(volume.get("name")) if isinstance(volume, dict) else ""
        if volume_name in taken:
            # The API server would refuse the Pod (volume names are its list's keys).
            raise FieldError(
                f"spec.template.spec.volumes[{index}].name",
                f"{volume_name!r} is taken (by the listener's config volume or another volume)",
            )
        taken.add(volume_name)
    spec["volumes"] += copy.deepcopy(volumes)
    for key in _REPLACED_POD_FIELDS:
        if key in tmpl_spec and tmpl_spec[key] is not None:
            spec[key] = copy.deepcopy(tmpl_spec[key])
        else:
            spec.pop(key, None)


def _merge_container(base: JsonObject, tmpl: Mapping[str, Any], path: str) -> None:
    if tmpl.get("image"):
        base["image"] = tmpl["image"]
    if tmpl.get("command"):
        base["command"] = copy.deepcopy(tmpl["command"])
    for key in _APPENDED_CONTAINER_FIELDS:
        extra = tmpl.get(key) or []
        if not isinstance(extra, list):
            raise FieldError(f"{path}.{key}", "must be a list")
        if extra:
            base[key] = [*(base.get(key) or []), *copy.deepcopy(extra)]
    for key in _REPLACED_CONTAINER_FIELDS:
        if key in tmpl and tmpl[key] is not None:
            base[key] = copy.deepcopy(tmpl[key])
        else:
            base.pop(key, None)


def proxy_env(al: AutoscalingListener) -> list[JsonObject]:
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
    name = proxy_secret_name(al)
    return [
        {"name": var, "valueFrom": {"secretKeyRef": {"name": name, "key": var}}}
        for var, used in zip(PROXY_VARIABLES, present, strict=True)
        if used
    ]


def proxy_secret(al: AutoscalingListener, variables: Mapping[str, str]) -> JsonObject:
    """The listener's proxy Secret holding ``variables`` (``http_proxy``...)."""
    labels = {
        SCALE_SET_NAMESPACE_LABEL: al.scale_set_namespace,
        SCALE_SET_NAME_LABEL: al.scale_set_name,
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _metadata(al, proxy_secret_name(al), labels=labels),
        "data": {key: b64(value) for key, value in variables.items()},
    }


def _metrics_port(address: str) -> int | None:
    if address in ("", "0"):
        return None
    _, sep, port = address.rpartition(":")
    return int(port) if sep and port.isdigit() else None


# -- RBAC ----------------------------------------------------------------------------------


def listener_rules(al: AutoscalingListener) -> list[JsonObject]:
    """What the listener sends, and no more: a merge patch of ``spec.replicas`` and
    ``spec.patchID`` on its own EphemeralRunnerSet (by name), and a merge patch of the
    job fields on runners' ``/status`` (their names are generated, so the namespace
    narrows it). ARC also grants ``patch`` on the runners themselves, which neither
    listener sends (tests/autoscaling: the Role against the listener's requests)."""
    return [
        {
            "apiGroups": ["actions.github.com"],
            "resources": ["ephemeralrunnersets"],
            "resourceNames": [al.runner_set_name],
            "verbs": ["patch"],
        },
        {
            "apiGroups": ["actions.github.com"],
            "resources": ["ephemeralrunners/status"],
            "verbs": ["patch"],
        },
    ]


def service_account(al: AutoscalingListener) -> JsonObject:
    labels, annotations = _resource_meta(al, "serviceAccountMetadata")
    metadata = _metadata(
        al, scale_set_listener_name(al), labels={**al.labels, **_scale_set_labels(al), **labels}
    )
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}


def role(al: AutoscalingListener) -> JsonObject:
    rules = listener_rules(al)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _rbac_metadata(al, "roleMetadata", {RULES_HASH_LABEL: template_hash(rules)}),
        "rules": rules,
    }


def role_binding(al: AutoscalingListener) -> JsonObject:
    name = scale_set_listener_name(al)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _rbac_metadata(al, "roleBindingMetadata", {}),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": al.namespace}],
    }


def _rbac_metadata(al: AutoscalingListener, meta_field: str, extra: dict[str, str]) -> JsonObject:
    """In the scale set's namespace, where no ownerReference to the AL can point: ARC's
    labels name the listener instead (and the finalizer deletes them)."""
    labels, annotations = _resource_meta(al, meta_field)
    metadata: JsonObject = {
        "name": scale_set_listener_name(al),
        "namespace": al.scale_set_namespace,
        "labels": {
            **al.labels,
            **_scale_set_labels(al),
            LISTENER_NAMESPACE_LABEL: al.namespace,
            LISTENER_NAME_LABEL: al.name,
            **extra,
            **labels,
        },
    }
    if annotations:
        metadata["annotations"] = annotations
    return metadata


def _scale_set_labels(al: AutoscalingListener) -> dict[str, str]:
    return {
        SCALE_SET_NAMESPACE_LABEL: al.scale_set_namespace,
        SCALE_SET_NAME_LABEL: al.scale_set_name,
    }


# -- shared ---------------------------------------------------------------------------------


def owner_reference(al: AutoscalingListener) -> JsonObject:
    if not al.uid:
        raise FieldError("metadata.uid", "is empty: the listener was not read from the server")
    return controller_reference(al, AL_KIND)


def _metadata(al: AutoscalingListener, name: str, *, labels: dict[str, str]) -> JsonObject:
    metadata: JsonObject = {
        "name": name,
        "namespace": al.namespace,
        "ownerReferences": [owner_reference(al)],
    }
    if labels:
        metadata["labels"] = labels
    return metadata


def _resource_meta(al: AutoscalingListener, field: str) -> tuple[dict[str, str], dict[str, str]]:
    meta = al.section(field) or {}
    return (
        string_map(meta, "labels", f"spec.{field}"),
        string_map(meta, "annotations", f"spec.{field}"),
    )


def _object_at(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FieldError(f"{where}.{key}", "must be an object")
    return value
