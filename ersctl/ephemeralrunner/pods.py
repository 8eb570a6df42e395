"""Pure builders of the documents the runner controller creates for an EphemeralRunner.

- The JIT Secret: named like the runner, holding the encoded JIT config (key
  ``jitToken``) and the registration's id, name and scale set id, so a reconcile that
  crashed after creating it can still recover the runner id.
- The runner Pod: named like the runner, built as ARC builds it: the runner's labels and
  annotations, overridden by its pod template's (``spec.metadata``), plus
  ``actions-ephemeral-runner: "True"`` and ``pod-template-hash`` (a hash of those labels
  and annotations, the runner's spec and the JIT Secret's data); the spec is the
  template's (``spec.spec``); the container named ``runner`` gets the JIT config from the Secret
  through a ``secretKeyRef`` (never a literal value, so the config is not visible in
  the Pod object) and ``ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1``, which
  makes a too-old runner exit with :data:`DEPRECATED_VERSION_EXIT_CODE`; with a
  ``spec.proxySecretRef``, ARC's ``http_proxy``/``https_proxy``/``no_proxy`` from that
  Secret, one for each part ``spec.proxy`` sets (:func:`proxy_env`).

Both carry a controller ownerReference to the runner, so the cluster's garbage
collector removes them with it. Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from typing import Any, Final

from ersctl import __version__
from ersctl.api import ER_KIND, EphemeralRunner, FieldError, JsonObject
from ersctl.api import controller_reference as api_controller_reference
from ersctl.naming import fnv_hash
from ersctl.scaleset.network import proxy_spec

RUNNER_CONTAINER: Final = "runner"
JIT_CONFIG_KEY: Final = "jitToken"
ENV_JIT_CONFIG: Final = "ACTIONS_RUNNER_INPUT_JITCONFIG"
ENV_DEPRECATED_EXIT_CODE: Final = "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"
ENV_EXTRA_USER_AGENT: Final = "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT"
PROXY_VARIABLES: Final = ("http_proxy", "https_proxy", "no_proxy")
"""ARC's proxy variables of a runner container: each is also its key in the proxy Secret."""
DEPRECATED_VERSION_EXIT_CODE: Final = 7
"""The runner's exit code for "this version is deprecated" (with the env var above = 1)."""
ENV_CONTAINER_HOOKS: Final = "ACTIONS_RUNNER_CONTAINER_HOOKS"
"""Set on the runner container in Kubernetes container mode (the hooks create job Pods)."""
HOOK_LINK_LABEL: Final = "runner-pod"
"""Label the container hooks put on the Pods and Secrets they create for a runner."""
RUNNER_POD_LABEL: Final = "actions-ephemeral-runner"
"""Label on every runner Pod (value "True"), as ARC sets it: selects them cheaply."""
POD_TEMPLATE_HASH_LABEL: Final = "pod-template-hash"
RUNNER_TEMPLATE_HASH_LABEL: Final = "runner-template-hash"
"""ARC's label of a runner template's hash: left out of the pod's own hash, as ARC does."""
DISRUPTION_ANNOTATIONS: Final[Mapping[str, str]] = {
    "karpenter.sh/do-not-disrupt": "true",
    "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
}
"""What a busy runner's Pod carries, so neither Karpenter nor the cluster autoscaler
consolidates its node away mid-job (ARC #2562); idle runners' Pods carry neither."""


def controller_reference(runner: EphemeralRunner) -> JsonObject:
    """The ownerReference that makes ``runner`` the controller of a dependent."""
    if not runner.uid:
        raise FieldError("metadata.uid", "is empty: the runner was not read from the server")
    return api_controller_reference(runner, ER_KIND)


def build_jit_secret(
    runner: EphemeralRunner,
    *,
    runner_id: int,
    runner_name: str,
    scale_set_id: int,
    encoded_jit_config: str,
) -> JsonObject:
    """The Secret holding ``runner``'s JIT config, owned by ``runner``."""
    template = mapping_at(runner.spec, "ephemeralRunnerConfigSecretMetadata")
    metadata: JsonObject = {
        "name": runner.name,
        "namespace": runner.namespace,
        "ownerReferences": [controller_reference(runner)],
    }
    labels = string_map(template, "labels", "spec.ephemeralRunnerConfigSecretMetadata")
    annotations = string_map(template, "annotations", "spec.ephemeralRunnerConfigSecretMetadata")
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    data = {
        JIT_CONFIG_KEY: encoded_jit_config,
        "runnerId": str(runner_id),
        "runnerName": runner_name,
        "scaleSetId": str(scale_set_id),
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": metadata,
        "data": {key: b64(value) for key, value in data.items()},
    }


def registration_from_secret(secret: Mapping[str, Any]) -> tuple[int, str] | None:
    """``(runner_id, runner_name)`` recorded in a JIT Secret; None when unreadable.

    An unreadable Secret (no positive id, no JIT config) cannot start a runner: the
    caller deletes it and registers again.
    """
    data = secret.get("data")
    if not isinstance(data, Mapping) or not data.get(JIT_CONFIG_KEY):
        return None
    try:
        runner_id = int(_unb64(data.get("runnerId", "")))
        runner_name = _unb64(data.get("runnerName", ""))
    except ValueError:
        return None
    return (runner_id, runner_name) if runner_id > 0 else None


def build_runner_pod(runner: EphemeralRunner, *, secret: Mapping[str, Any]) -> JsonObject:
    """The runner Pod for ``runner``, taking its JIT config from its JIT ``secret``.

    Raises :class:`~ersctl.api.FieldError` when the pod template is missing or has no
    container named ``runner`` (such a Pod could never register).
    """
    template_spec = runner.spec.get("spec")
    if not isinstance(template_spec, dict) or not template_spec:
        raise FieldError("spec.spec", "is missing: the runner has no pod template")
    pod_spec = copy.deepcopy(template_spec)
    containers = pod_spec.get("containers")
    if not isinstance(containers, list):
        raise FieldError("spec.spec.containers", "must be a list")
    main = [c for c in containers if isinstance(c, dict) and c.get("name") == RUNNER_CONTAINER]
    if not main:
        raise FieldError("spec.spec.containers", f"has no container named {RUNNER_CONTAINER!r}")
    secret_name = str((secret.get("metadata") or {}).get("name") or "")
    ours = [*_runner_env(secret_name), *proxy_env(runner)]
    main[0]["env"] = [*_env_list(main[0], {e["name"] for e in ours}), *ours]
    template_meta = mapping_at(runner.spec, "metadata")
    labels = {
        **string_map(runner.metadata, "labels", "metadata"),
        **string_map(template_meta, "labels", "spec.metadata"),
        RUNNER_POD_LABEL: "True",
    }
    annotations = {
        **string_map(runner.metadata, "annotations", "metadata"),
        **string_map(template_meta, "annotations", "spec.metadata"),
    }
    hashed_labels = {k: v for k, v in labels.items() if k != RUNNER_TEMPLATE_HASH_LABEL}
    labels[POD_TEMPLATE_HASH_LABEL] = template_hash(
        hashed_labels, annotations, runner.spec, secret.get("data") or {}
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": runner.name,
            "namespace": runner.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [controller_reference(runner)],
        },
        "spec": pod_spec,
    }


def uses_container_hooks(runner: EphemeralRunner) -> bool:
    """True when the runner container sets ``ACTIONS_RUNNER_CONTAINER_HOOKS``, as ARC
    decides it: Kubernetes container mode, whose hooks create Pods of their own."""
    template = mapping_at(runner.spec, "spec")
    for container in template.get("containers") or ():
        if isinstance(container, Mapping) and container.get("name") == RUNNER_CONTAINER:
            env = container.get("env") or ()
            return any(isinstance(e, Mapping) and e.get("name") == ENV_CONTAINER_HOOKS for e in env)
    return False


def template_hash(*parts: object) -> str:
    """A short, stable hash of ``parts`` (JSON values) for a label value: FNV-1a (32
    bit) of their canonical JSON, spelled in Kubernetes' safe alphabet as
    ``pod-template-hash`` values are. Equal inputs give equal hashes in every process."""
    return fnv_hash(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode())


def _runner_env(secret_name: str) -> list[JsonObject]:
    return [
        {
            "name": ENV_JIT_CONFIG,
            "valueFrom": {"secretKeyRef": {"name": secret_name, "key": JIT_CONFIG_KEY}},
        },
        {"name": ENV_EXTRA_USER_AGENT, "value": f"gha-scaleset/{__version__}"},
        {"name": ENV_DEPRECATED_EXIT_CODE, "value": "1"},
    ]


def proxy_env(runner: EphemeralRunner) -> list[JsonObject]:
    """ARC's proxy variables for ``runner``'s container: none without a
    ``spec.proxySecretRef`` (or a ``spec.proxy``); else, from that Secret by
    ``secretKeyRef`` (the values embed the proxy password), ``http_proxy`` when
    ``proxy.http`` is set, ``https_proxy`` when ``proxy.https`` is, ``no_proxy`` when
    ``proxy.noProxy`` lists anything. FieldError for a malformed field."""
    ref = runner.spec.get("proxySecretRef")
    if ref is None or ref == "":
        return []
    if not isinstance(ref, str):
        raise FieldError("spec.proxySecretRef", "must name a Secret")
    proxy = proxy_spec(runner.spec, prefix="spec")
    if proxy is None:
        return []
    present = (proxy.http is not None, proxy.https is not None, bool(proxy.no_proxy))
    return [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": ref, "key": name}}}
        for name, used in zip(PROXY_VARIABLES, present, strict=True)
        if used
    ]


def _env_list(container: JsonObject, ours: set[str]) -> list[Any]:
    env = container.get("env")
    if env is None:
        return []
    if not isinstance(env, list):
        raise FieldError("spec.spec.containers[runner].env", "must be a list")
    # Ours win: a template value for the JIT config would start an unregistered runner,
    # and two values of one variable leave which applies to the kubelet (ARC appends).
    return [e for e in env if not (isinstance(e, dict) and e.get("name") in ours)]


def mapping_at(doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``doc[key]`` when it is an object, else an empty mapping."""
    value = doc.get(key)
    return value if isinstance(value, Mapping) else {}


def string_map(doc: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    """``doc[key]`` as labels or annotations ({} when absent); FieldError naming
    ``where.key`` when it does not map strings to strings."""
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise FieldError(f"{where}.{key}", "must map strings to strings")
    return dict(value)


def b64(text: str) -> str:
    """``text`` as a Secret's ``data`` holds it."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _unb64(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("not a base64 string")
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("not base64 UTF-8") from exc
