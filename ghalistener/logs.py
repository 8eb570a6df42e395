"""Logging for the listener: text or JSON lines on stderr, with secrets redacted.

Structured fields travel in ``extra={"fields": {...}}`` and are rendered as
``key=value`` pairs (text) or as top-level keys (JSON). Redaction happens in the
formatter, on the final line, so no code path (an exception traceback, a field, a
message from a library) can print a secret: every configured secret value is
replaced, and so is anything shaped like a bearer token, a GitHub token, a JWT or a
PEM private key.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import IO, Any, Final

ROOT_LOGGER: Final = "ghalistener"
REDACTED: Final = "[REDACTED]"

_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

# Shapes of secrets worth catching even when nobody registered the value.
_SECRET_PATTERNS: Final = (
    (
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S
        ),
        REDACTED,
    ),
    (re.compile(r"\b(Bearer|RemoteAuth)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {REDACTED}"),
    (re.compile(r"\b(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{8,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"), REDACTED),
)


class Redactor:
    """Replaces secret values and secret-shaped substrings with ``[REDACTED]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: list[str] = []
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """Register more secret values (e.g. a token minted at run time)."""
        for secret in secrets:
            if secret and secret not in self._secrets:
                self._secrets.append(secret)
                # A PEM key may be logged line by line; each long line is secret too.
                self._secrets.extend(
                    line for line in secret.splitlines() if len(line) >= 16 and "-----" not in line
                )
        self._secrets.sort(key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        for pattern, replacement in _SECRET_PATTERNS:
            text = pattern.sub(replacement, text)
        return text


def _fields(record: logging.LogRecord) -> Mapping[str, Any]:
    value = getattr(record, "fields", None)
    return value if isinstance(value, Mapping) else {}


def _timestamp(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class TextFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger> <message> key=value ...``, redacted."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), record.levelname, record.name, record.getMessage()]
        parts += [f"{key}={_text_value(value)}" for key, value in _fields(record).items()]
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return self._redact(line)


def _text_value(value: object) -> str:
    text = str(value)
    return json.dumps(text) if (not text or " " in text or '"' in text) else text


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, msg, then the fields; redacted."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in _fields(record).items():
            doc.setdefault(key, value if isinstance(value, int | float | bool) else str(value))
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        return self._redact(json.dumps(doc, separators=(",", ":")))


def configure_logging(
    *,
    level: str = "info",
    fmt: str = "text",
    secrets: Iterable[str] = (),
    stream: IO[str] | None = None,
) -> Redactor:
    """Route the ``ghalistener`` loggers (and httpx's / kubernetes') to ``stream``.

    Returns the Redactor so secrets learned later can be registered. Idempotent: a
    second call replaces the handler.
    """
    redactor = Redactor(secrets)
    handler = logging.StreamHandler(stream or sys.stderr)
    formatter = JsonFormatter(redactor) if fmt == "json" else TextFormatter(redactor)
    handler.setFormatter(formatter)
    numeric = _LEVELS.get(level.lower(), logging.INFO)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    # Third-party loggers stay at WARNING: httpx logs full URLs at INFO.
    root.setLevel(logging.WARNING)
    logging.getLogger(ROOT_LOGGER).setLevel(numeric)
    return redactor
