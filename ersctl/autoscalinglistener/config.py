"""The listener's configuration, as ARC's controller writes it into the config Secret:
Go's JSON encoder on ARC's ``cmd/ghalistener/config.Config``, keys in ARC's order, so
ARC's listener image runs from it and ours (``ghalistener.config``) reads it. Pure."""

from __future__ import annotations

import json

from ersctl.api import AutoscalingListener, FieldError, JsonObject
from ersctl.autoscalinglistener.objects import GitHubAccess, ListenerSettings


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
