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
    # kubernetes.leaderelection logs every retry at INFO; keep its warnings only.
    if root.level > logging.DEBUG:
        logging.getLogger("leaderelection").setLevel(logging.WARNING)
    logging.getLogger("urllib3").setLevel(logging.WARNING)
