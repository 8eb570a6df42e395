"""The listener's configuration: a JSON file with ARC's keys, overridden by options.

The file is named by ``--config PATH`` or, as ARC's listener does, env
``LISTENER_CONFIG_PATH``. Every invalid input raises :class:`ConfigError` naming the
field, and nothing here ever puts a credential into a message or a ``repr``.

The file ARC's controller generates runs unchanged. Its keys are read as ARC's listener
reads them, with these differences, each one line at start:

- a key neither program defines is an error naming it and the closest known key
  (``max_runner`` -> "did you mean max_runners?"): a typo must not leave a bound unset;
- a key ARC's controller writes that this listener needs nothing from
  (:data:`ARC_INFORMATIONAL_KEYS`) is accepted without a word: ours and ARC's controller
  write it into every config, so a warning about it would be on every start and mean
  nothing to the user;
- ARC's vault keys (:data:`VAULT_KEYS`) with a value are an error: credentials come
  from the file only. Empty, as ARC writes them without a vault, they mean nothing.

``null`` is "not given" for every key; ``""`` is for ``metrics_endpoint`` (the default,
``/metrics``) and, as ``metrics_addr``, turns the metrics server off.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ersctl.platform.addresses import parse_address
from ersctl.platform.errors import ConfigError, did_you_mean
from ghalistener.actions.auth import Credentials, PatCredentials
from ghalistener.actions.configurl import GitHubConfig, parse_config_url
from ghalistener.actions.credentials import (
    CREDENTIAL_KEYS,
    CredentialsKeyError,
    parse_credentials,
    secret_values,
)
from ghalistener.actions.errors import ActionsError
from ghalistener.metric_selection import MetricsSelection, parse_metrics
from ghalistener.ports import SessionRetry

CONFIG_PATH_ENV: Final = "LISTENER_CONFIG_PATH"
MAX_RUNNERS_UNBOUNDED: Final = 2**31 - 1
"""ARC's resource builder uses MaxInt32 when a scale set has no maximum; it is also the
largest count actions/scaleset's listener accepts (it sends it as X-ScaleSetMaxCapacity)."""
DEFAULT_METRICS_ENDPOINT: Final = "/metrics"
ARC_INFORMATIONAL_KEYS: Final = ("runner_scale_set_name",)
"""Keys ARC's controller writes that this listener reads nothing from (it works by the
scale set's id, not its name)."""
VAULT_KEYS: Final = ("vault_type", "vault_lookup_key", "azure_key_vault")
"""ARC's keys for credentials kept in a vault (Azure Key Vault), which this listener lacks."""

LOG_LEVELS: Final = ("debug", "info", "warn", "error")
LOG_FORMATS: Final = ("text", "json")


@dataclass(frozen=True, kw_only=True)
class ListenerConfig:
    """A validated configuration. Secrets are excluded from ``repr``.

    ``metrics_addr`` empty (or ``0``) means no metrics server; ``metrics`` selects the
    series it exports. ``session_retry_interval`` and ``session_retry_attempts`` bound how
    long a 409 (another listener holds the session) is waited out at start: ARC's 30 s
    and 10 tries by default.
    """

    configure_url: str
    github_token: str = field(default="", repr=False)
    github_app_id: str = ""
    github_app_installation_id: int = 0
    github_app_private_key: str = field(default="", repr=False)
    ephemeral_runner_set_namespace: str
    ephemeral_runner_set_name: str
    runner_scale_set_id: int
    min_runners: int = 0
    max_runners: int = MAX_RUNNERS_UNBOUNDED
    server_root_ca: str = ""
    log_level: str = "info"
    log_format: str = "text"
    metrics_addr: str = ""
    metrics_endpoint: str = DEFAULT_METRICS_ENDPOINT
    metrics: MetricsSelection = field(default_factory=MetricsSelection.defaults)
    session_retry_interval: float = SessionRetry.interval
    session_retry_attempts: int = SessionRetry.attempts

    @property
    def github(self) -> GitHubConfig:
        """The parsed configuration URL (validated at load time)."""
        return parse_config_url(self.configure_url)

    def credentials(self) -> Credentials:
        """The one credential the file holds (validated at load time, by the parser the
        controller reads credentials Secrets with)."""
        return parse_credentials(
            {
                "github_token": self.github_token,
                "github_app_id": self.github_app_id,
                "github_app_installation_id": self.github_app_installation_id or None,
                "github_app_private_key": self.github_app_private_key,
            }
        )

    def secrets(self) -> tuple[str, ...]:
        """Values that must never reach a log line."""
        return secret_values(self.credentials())


_STRING_KEYS: Final = (
    "configure_url",
    "ephemeral_runner_set_namespace",
    "ephemeral_runner_set_name",
    "server_root_ca",
    "log_level",
    "log_format",
    "metrics_addr",
    "metrics_endpoint",
)
_INT_KEYS: Final = (
    "runner_scale_set_id",
    "min_runners",
    "max_runners",
    "session_retry_attempts",
)
_FILE_KEYS: Final = frozenset(
    (*_STRING_KEYS, *_INT_KEYS, *CREDENTIAL_KEYS, "metrics", "session_retry_interval")
)
"""The keys this listener acts on."""


def load_config(
    *,
    path: str | None,
    env: Mapping[str, str],
    overrides: Mapping[str, object] | None = None,
) -> ListenerConfig:
    """Read the file (``path``, else env ``LISTENER_CONFIG_PATH``), apply ``overrides``.

    ``overrides`` maps config keys to values from the command line; None values are
    ignored. Without any file, the overrides alone must form a valid configuration.
    Raises ConfigError naming the first field that is wrong.
    """
    source = path or env.get(CONFIG_PATH_ENV) or None
    raw: dict[str, Any] = _read_file(source) if source else {}
    for key, value in (overrides or {}).items():
        if value is not None:
            raw[key] = value
    return parse_config(raw)


def _read_file(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("config", f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # The decoder's message quotes no content, only the position.
        raise ConfigError(
            "config", f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError("config", f"{path} must hold a JSON object")
    return data


def parse_config(raw: Mapping[str, Any]) -> ListenerConfig:
    """Validate a decoded configuration object; raise ConfigError naming the field."""
    _check_keys(raw)
    values = {key: raw[key] for key in raw if key in _FILE_KEYS and raw[key] is not None}
    values["metrics"] = parse_metrics(values.get("metrics"))
    for key in _STRING_KEYS:
        if key in values and not isinstance(values[key], str):
            raise ConfigError(key, "must be a string")
    for key in _INT_KEYS:
        if key in values:
            values[key] = _as_int(key, values[key])
    if "session_retry_interval" in values:
        values["session_retry_interval"] = _as_seconds(values["session_retry_interval"])
    _require_present(values)
    _check_url(values["configure_url"])
    values.update(_credential_values(values))
    _check_counts(values)
    _check_choice(values, "log_level", LOG_LEVELS)
    _check_choice(values, "log_format", LOG_FORMATS)
    _check_metrics(values)
    _check_root_ca(values.get("server_root_ca", ""))
    return ListenerConfig(**values)


def _check_keys(raw: Mapping[str, Any]) -> None:
    known = (*_FILE_KEYS, *ARC_INFORMATIONAL_KEYS, *VAULT_KEYS)
    for key in raw:
        if key not in known:
            raise ConfigError(key, f"unknown key{did_you_mean(key, known)}")
    for key in VAULT_KEYS:
        if _given(raw.get(key)):
            raise ConfigError(
                key, "not supported (this listener reads GitHub credentials from its github_* keys)"
            )


def _given(value: object) -> bool:
    """False for the values that mean "not set": null, "" and an empty object."""
    return value not in (None, "", {})


def _as_int(key: str, value: object) -> int:
    if isinstance(value, bool):
        raise ConfigError(key, "must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        # int() itself is the judge: str.isdigit() admits "²" and a stripped "--5",
        # which int() then refused with a traceback instead of this one line.
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ConfigError(key, "must be an integer")


def _as_seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError("session_retry_interval", "must be a number of seconds >= 0")
    return float(value)


def _require_present(values: Mapping[str, Any]) -> None:
    for key in (
        "configure_url",
        "ephemeral_runner_set_namespace",
        "ephemeral_runner_set_name",
    ):
        if not values.get(key):
            raise ConfigError(key, "is missing")
    if not values.get("runner_scale_set_id"):
        raise ConfigError("runner_scale_set_id", "is missing")
    if values["runner_scale_set_id"] < 0:
        raise ConfigError("runner_scale_set_id", "must be a positive integer")


def _check_url(url: str) -> None:
    try:
        parse_config_url(url)
    except ActionsError as exc:
        raise ConfigError("configure_url", str(exc)) from exc


def _credential_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The credential keys as the shared parser reads them (ConfigError naming the key)."""
    try:
        credentials = parse_credentials(values)
    except CredentialsKeyError as exc:
        raise ConfigError(exc.key, exc.problem) from None
    if isinstance(credentials, PatCredentials):
        return {
            "github_token": credentials.token,
            "github_app_id": "",
            "github_app_installation_id": 0,
            "github_app_private_key": "",
        }
    return {
        "github_token": "",
        "github_app_id": credentials.app_id,
        "github_app_installation_id": credentials.installation_id,
        "github_app_private_key": credentials.private_key,
    }


def _check_counts(values: dict[str, Any]) -> None:
    for key in ("min_runners", "max_runners"):
        if not 0 <= values.get(key, 0) <= MAX_RUNNERS_UNBOUNDED:
            raise ConfigError(
                key, f"must be between 0 and {MAX_RUNNERS_UNBOUNDED}, got {values[key]}"
            )
    min_runners = values.get("min_runners", 0)
    max_runners = values.get("max_runners", MAX_RUNNERS_UNBOUNDED)
    if min_runners > max_runners:
        raise ConfigError(
            "min_runners", f"must not be greater than max_runners ({min_runners} > {max_runners})"
        )
    if values.get("session_retry_attempts", 1) < 1:
        raise ConfigError("session_retry_attempts", "must be at least 1")


def _check_choice(values: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> None:
    if key in values and values[key].lower() not in choices:
        raise ConfigError(key, f"must be one of {', '.join(choices)}, got {values[key]!r}")


def _check_metrics(values: dict[str, Any]) -> None:
    parse_address("metrics_addr", values.get("metrics_addr", ""))
    # ARC writes "" when it leaves the path to the listener: the default, as in ARC.
    endpoint = values.get("metrics_endpoint") or DEFAULT_METRICS_ENDPOINT
    values["metrics_endpoint"] = endpoint
    if not endpoint.startswith("/"):
        raise ConfigError("metrics_endpoint", f"must start with '/', got {endpoint!r}")


def _check_root_ca(pem: str) -> None:
    # Checked here so a bad bundle is a config error (exit 2) naming the field, not a
    # failure when the HTTP client is built.
    if not pem:
        return
    try:
        ssl.create_default_context().load_verify_locations(cadata=pem)
    except (ssl.SSLError, TypeError, ValueError):
        raise ConfigError(
            "server_root_ca", "must hold PEM certificates (none could be loaded)"
        ) from None
