"""Command-line parsing as Go's ``flag`` package does it, for a program that must take
a Go program's arguments unchanged (``/manager``, ARC's controller command line).

What Go's ``flag.Parse`` accepts, and so what :func:`parse` accepts:

- ``-name`` or ``--name`` (one dash or two, the same), ``-name=value``, and for every
  flag but a boolean ``-name value`` (the next argument is the value, whatever it is);
- a boolean is ``-name`` (true) or ``-name=value`` with ``strconv.ParseBool``'s values
  (``1 t T TRUE true True``, ``0 f F FALSE false False``); ``-name false`` is *not*
  a false flag: ``false`` is the first positional argument;
- an integer is ``strconv.ParseInt(value, 0, 64)``: a sign, ``0x``/``0o``/``0b`` or a
  leading ``0`` (octal), ``_`` between digits after a prefix;
- a duration is ``time.ParseDuration``: ``300ms``, ``1.5h``, ``2h45m``, ``0``;
- parsing stops at ``--`` or at the first argument that is not a flag (``-`` alone
  included); what follows is positional.

Errors say what Go's say (``flag provided but not defined: -name``, ``flag needs an
argument: -name``, ``invalid value "x" for flag -name: parse error``, ``bad flag
syntax: ---name``), as one :class:`GoFlagError`. ``-h`` and ``-help``, unless defined,
raise :class:`HelpRequested`. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

from ersctl.platform.errors import EXIT_USAGE, Failure


class Kind(Enum):
    """A flag's Go type, which decides how its value is read."""

    BOOL = "bool"
    STRING = "string"
    INT = "int"
    DURATION = "duration"
    LIST = "list"
    """A ``flag.Var`` that appends each occurrence (ARC's ``stringSlice``)."""


class GoFlagError(Failure):
    """The arguments are not what the flag set accepts (exit 2, as Go's ``flag``)."""

    exit_code = EXIT_USAGE


class HelpRequested(Exception):
    """``-h`` or ``-help`` was given and no flag of that name is defined."""


@dataclass(frozen=True)
class Parsed:
    """Each flag as given, in order (``(name, value)``; a list flag once per
    occurrence), and the positional arguments after the flags."""

    flags: tuple[tuple[str, object], ...]
    positional: tuple[str, ...]


_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_INT64: Final = 2**63


def parse(args: Sequence[str], flags: Mapping[str, Kind]) -> Parsed:
    """Parse ``args`` against ``flags`` (name -> kind) as Go's ``flag.Parse`` does."""
    given: list[tuple[str, object]] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            index += 1
            break
        if len(arg) < 2 or not arg.startswith("-"):
            break
        name, has_value, value = arg.lstrip("-")[:].partition("=")
        dashes = len(arg) - len(arg.lstrip("-"))
        if dashes > 2 or not name or name.startswith("="):
            raise GoFlagError(f"bad flag syntax: {arg}")
        index += 1
        kind = flags.get(name)
        if kind is None:
            if name in ("h", "help"):
                raise HelpRequested
            raise GoFlagError(f"flag provided but not defined: -{name}")
        if kind is Kind.BOOL:
            given.append((name, _bool(name, value) if has_value else True))
            continue
        if not has_value:
            if index >= len(args):
                raise GoFlagError(f"flag needs an argument: -{name}")
            value, index = args[index], index + 1
        given.append((name, _value(name, kind, value)))
    return Parsed(flags=tuple(given), positional=tuple(args[index:]))


def _bool(name: str, value: str) -> bool:
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise GoFlagError(f'invalid boolean value "{value}" for -{name}: parse error')


def _value(name: str, kind: Kind, value: str) -> object:
    try:
        if kind is Kind.INT:
            return parse_int(value)
        if kind is Kind.DURATION:
            return parse_duration(value)
    except ValueError as exc:
        raise GoFlagError(f'invalid value "{value}" for flag -{name}: {exc}') from None
    return value


_OCTAL: Final = re.compile(r"[+-]?0[0-7]+")


def parse_int(text: str) -> int:
    """``strconv.ParseInt(text, 0, 64)``; ValueError ``parse error`` or ``value out of
    range``."""
    if _OCTAL.fullmatch(text):
        number = int(text, 8)
    else:
        try:
            number = int(text, 0)
        except ValueError:
            raise ValueError("parse error") from None
        if "_" in text and not re.match(r"[+-]?0[xXoObB]", text):
            raise ValueError("parse error")  # Go allows _ only after a base prefix
    if not -_INT64 <= number < _INT64:
        raise ValueError("value out of range")
    return number


_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART: Final = re.compile(r"(\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """``time.ParseDuration(text)``, in seconds; ValueError ``parse error``."""
    sign, body = (-1.0, text[1:]) if text.startswith("-") else (1.0, text.lstrip("+"))
    if body == "0":
        return 0.0
    total, position = 0.0, 0
    while position < len(body):
        part = _PART.match(body, position)
        if part is None or part.group(1) in ("", "."):
            raise ValueError("parse error")
        total += float(part.group(1)) * _UNITS[part.group(2)]
        position = part.end()
    if not body:
        raise ValueError("parse error")
    return sign * total
