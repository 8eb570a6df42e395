"""Logging setup for ``ersctl``: text for people, JSON lines for log pipelines.

Nothing secret reaches a log record in the first place (the controller never logs
Secret data, tokens or JIT configs); this module only chooses the shape.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Final, TextIO

_TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg (and exc when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at emit time (click's test runner swaps it)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


class _ElectionFailures(logging.Filter):
    """Passes the leader election library's failures (a missing namespace, RBAC, an
    unreachable server would otherwise leave a follower waiting silently)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        message = record.getMessage()
        if message.startswith(("Failed", "Error")):
            # The library prints an ApiException whole (headers, body): keep the status
            # line and its reason.
            record.msg, record.args = " ".join(message.splitlines()[:2]), ()
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            return True
        return False


def configure_logging(*, log_format: str = "text", level: str = "info") -> None:
    """Send logs to stderr in ``log_format`` ("text" or "json") at ``level``.

    Replaces the handler a previous call installed; leaves other handlers alone.
    """
    handler = _StderrHandler()
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(_TEXT_FORMAT)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # kubernetes.leaderelection logs every retry at INFO ("yet to finish lease_duration"
    # every period on a follower); keep only its failures, which it also logs at INFO.
    election = logging.getLogger("leaderelection")
    for old_filter in [f for f in election.filters if isinstance(f, _ElectionFailures)]:
        election.removeFilter(old_filter)
    if root.level > logging.DEBUG:
        election.addFilter(_ElectionFailures())
    logging.getLogger("urllib3").setLevel(logging.WARNING)
