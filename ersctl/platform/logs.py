"""Logging for both programs: one text format, one JSON schema, secrets redacted.

Lines go to stderr (whatever ``sys.stderr`` is when they are written, so click's and
pytest's captures see them). Structured fields travel in ``extra={"fields": {...}}``;
fields that hold for many lines are bound once instead: for the process
(``configure_logging(fields=...)``, the listener's EphemeralRunnerSet) or for a block of
one thread (:func:`log_fields`, the controller's object and reconcile ID while it
reconciles). A line's own fields win over bound ones of the same name. The object a line
is about travels as ``kind``, ``namespace`` and ``name``, never only in the message, so a
log pipeline can select one object's lines across both programs.

- text: ``<time> <LEVEL> <logger> <message> key=value ...`` (an exception's traceback
  follows on the next lines);
- JSON, one object a line: ``time``, ``level``, ``logger``, ``msg``, then the fields,
  and ``error`` (the exception's traceback) when there is one.

``time`` is UTC ISO 8601 with milliseconds. Levels: ``debug``, ``info``, ``warn`` (or
``warning``), ``error``, in both programs. Every line, third-party loggers' included,
passes through the process's redactor (``ersctl.platform.redaction.REDACTOR``) before
it is written: :func:`redact` registers credentials, and the GitHub client registers
what it learns at run time.

Library chatter is kept below INFO: httpx's request lines, urllib3's "Retrying" notes
(our own line per failed attempt names the server), and the Kubernetes leader election
library's narration (``ersctl.kube.leader`` logs the failures itself, once). The HTTP
libraries' wire traces (httpcore, httpx, urllib3, hpack: some fourteen lines a request)
stay off even at ``debug``, which would otherwise be unreadable, unless asked for with
``http=True`` (both programs' ``--log-http``, or env :data:`LOG_HTTP_ENV` set to 1).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import IO, Any, Final

from ersctl.platform.errors import ConfigError
from ersctl.platform.redaction import REDACTOR, Redactor

LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
FORMATS: Final = ("text", "json")

LOG_HTTP_ENV: Final = "LOG_HTTP"
"""Set to ``1`` (or ``true``), the same as ``--log-http``: for a listener whose command
line the controller writes."""
HTTP_LOGGERS: Final = ("httpcore", "httpx", "urllib3", "hpack")
"""The HTTP libraries whose records are wire traces unless ``http`` logging is on."""

# Loggers whose records at these levels are demoted to DEBUG: (logger, level) -> why.
_CHATTER: Final = {
    "httpx": logging.INFO,  # one line per request, with its full URL
    "urllib3.connectionpool": logging.WARNING,  # "Retrying (Retry(total=2, ...))"
    "leaderelection": logging.CRITICAL,  # every renew and wait; failures are ours to log
}


def parse_level(option: str, value: str) -> int:
    """The numeric level for ``value``; ConfigError naming ``option`` when unknown."""
    level = LEVELS.get(value.lower())
    if level is None:
        raise ConfigError(option, f"must be one of debug, info, warn, error; got {value!r}")
    return level


def parse_format(option: str, value: str) -> str:
    """``text`` or ``json``; ConfigError naming ``option`` otherwise."""
    if value.lower() not in FORMATS:
        raise ConfigError(option, f"must be text or json; got {value!r}")
    return value.lower()


def redact(secrets: Iterable[str]) -> None:
    """Hide these values in every log line from now on (for the life of the process)."""
    REDACTOR.add(secrets, pin=True)


def http_logging_requested(env: Mapping[str, str]) -> bool:
    """Does ``env`` ask for the HTTP libraries' debug lines (:data:`LOG_HTTP_ENV`)?"""
    return env.get(LOG_HTTP_ENV, "").lower() in ("1", "true", "yes")


def configure_logging(
    *,
    level: str = "info",
    fmt: str = "text",
    secrets: Iterable[str] = (),
    stream: IO[str] | None = None,
    fields: Mapping[str, object] | None = None,
    http: bool = False,
) -> None:
    """Route every logger to ``stream`` (default: stderr at write time) in ``fmt`` at
    ``level``, with ``secrets`` redacted and ``fields`` on every line. ``http`` lets the
    HTTP libraries' debug lines through. Replaces the handler an earlier call installed
    and leaves other handlers alone. ConfigError for an unknown level or format."""
    numeric = parse_level("log_level", level)
    formatter = JsonFormatter(REDACTOR) if parse_format("log_format", fmt) == "json" else None
    redact(secrets)
    handler = _Handler(stream, dict(fields or {}))
    handler.setFormatter(formatter or TextFormatter(REDACTOR))
    if not http:
        handler.addFilter(_no_wire_traces)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    for name, up_to in _CHATTER.items():
        chatty = logging.getLogger(name)
        for old_filter in [f for f in chatty.filters if isinstance(f, _Demote)]:
            chatty.removeFilter(old_filter)
        chatty.addFilter(_Demote(up_to))


_BOUND: ContextVar[Mapping[str, object]] = ContextVar("log_fields", default=MappingProxyType({}))


@contextmanager
def log_fields(**fields: object) -> Iterator[None]:
    """Add ``fields`` to every line this thread logs inside the block (nested blocks add
    to, and may override, the outer one's)."""
    token = _BOUND.set({**_BOUND.get(), **fields})
    try:
        yield
    finally:
        _BOUND.reset(token)


def _no_wire_traces(record: logging.LogRecord) -> bool:
    """Drops the HTTP libraries' DEBUG records (a request's connect, send, headers,
    body... each a line: at ``debug`` they drowned the program's own lines)."""
    if record.levelno > logging.DEBUG:
        return True
    return not any(record.name == n or record.name.startswith(f"{n}.") for n in HTTP_LOGGERS)


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``stream``, or to whatever ``sys.stderr`` is at emit time; stamps each
    record with the process's and the thread's bound fields."""

    def __init__(self, stream: IO[str] | None, fields: Mapping[str, object]) -> None:
        super().__init__(stream)
        self._fixed = stream
        self._fields = fields

    def handle(self, record: logging.LogRecord) -> bool:
        # Beside the line's own fields, not into them: the record is every handler's
        # (pytest's capture compares a line's fields).
        record.bound_fields = {**self._fields, **_BOUND.get()}
        return super().handle(record)

    @property
    def stream(self) -> IO[str]:
        return self._fixed if self._fixed is not None else sys.stderr

    @stream.setter
    def stream(self, value: IO[str]) -> None:
        pass


class _Demote(logging.Filter):
    """Turns records up to ``up_to`` into DEBUG records (dropped unless at debug)."""

    def __init__(self, up_to: int) -> None:
        super().__init__()
        self._up_to = up_to

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= self._up_to:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


def _fields(record: logging.LogRecord) -> Mapping[str, Any]:
    """The bound fields, then the line's own (which win)."""
    bound, own = getattr(record, "bound_fields", None), getattr(record, "fields", None)
    return {
        **(bound if isinstance(bound, Mapping) else {}),
        **(own if isinstance(own, Mapping) else {}),
    }


def _timestamp(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def _text_value(value: object) -> str:
    text = str(value)
    return json.dumps(text) if (not text or " " in text or '"' in text) else text


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


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, msg, the fields, error; redacted.

    Each value is redacted before it is encoded, so JSON escapes (``\\n`` in a PEM key)
    cannot hide a secret from the whole-value match.
    """

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": self._redact(record.getMessage()),
        }
        for key, value in _fields(record).items():
            if isinstance(value, int | float | bool):
                doc.setdefault(key, value)
            else:
                doc.setdefault(key, self._redact(str(value)))
        if record.exc_info:
            doc["error"] = self._redact(self.formatException(record.exc_info))
        return json.dumps(doc, separators=(",", ":"))
