"""The address option of the metrics and probe server (``metrics_addr`` in the listener's
configuration, ``--metrics-addr`` and ``--health-probe-bind-address`` for ``ersctl
reconcile``): one set of rules for both programs.

``[host]:port`` (``:8080``, ``127.0.0.1:9090``; port 0 picks a free port); ``""`` or
``"0"`` disables the server. A value that is no address is a ``ConfigError`` naming the
option (exit 2). Pure, so a command line checks it before it loads the metrics library
(``ersctl.platform.serving`` serves on the address, and says when it cannot be bound).
"""

from __future__ import annotations

from typing import Final

from ersctl.platform.errors import ConfigError

DISABLED: Final = ("", "0")
"""Values of the address option that turn the server off."""


def parse_address(option: str, value: str) -> tuple[str, int] | None:
    """``[host]:port`` -> (host, port), the host ``0.0.0.0`` when omitted; ``""`` or
    ``"0"`` -> None (disabled). ConfigError naming ``option`` otherwise."""
    if value in DISABLED:
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise ConfigError(option, f"must be [host]:port, or '' or 0 to disable; got {value!r}")
    return (host.strip("[]") or "0.0.0.0", int(port))
