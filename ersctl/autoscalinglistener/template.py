"""ARC's merge of an AutoscalingListener's ``spec.template`` into the listener Pod
(``mergeListenerPodWithTemplate`` and ``mergeListenerContainer`` of its resource
builder). Pure; a malformed template raises :class:`~ersctl.api.FieldError` naming the
AL's field."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from ersctl.api import FieldError, JsonObject
from ersctl.ephemeralrunner.pods import string_map

CONTAINER: Final = "listener"
CONFIG_VOLUME: Final = "listener-config"

# ARC's mergeListenerPodWithTemplate: the pod-level fields a template replaces, present
# or not (an absent one clears ours, terminationGracePeriodSeconds included, as ARC);
# restartPolicy, imagePullSecrets and nodeSelector only when the template sets them.
_REPLACED_POD_FIELDS: Final = (
    "initContainers",
    "ephemeralContainers",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
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
    for key in ("restartPolicy", "imagePullSecrets", "nodeSelector"):
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


def _object_at(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FieldError(f"{where}.{key}", "must be an object")
    return value
