"""How both command lines end: one line on stderr and the exit code of the convention.

:func:`run_command` wraps a command's body: a ``ConfigError`` prints
``<program>: invalid configuration: <field>: <problem>`` and exits 2, any other
``Failure`` (Kubernetes, GitHub, the programs' own) prints ``<program>: <message>`` and
exits 1. :func:`launch` is the console scripts' entry point: it imports the command
line inside a guard, so a Ctrl-C even during start-up's imports ends with one line
instead of a traceback. Codes: ``ersctl.platform.errors``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, NoReturn, TypeVar

import click

from ersctl.platform.errors import EXIT_FAILURE, EXIT_USAGE, ConfigError, Failure

EXIT_INTERRUPTED: Final = 130
"""Ctrl-C before a command could finish (128 + SIGINT, as shells report it)."""


F = TypeVar("F", bound=Callable[..., object])


def kubeconfig_options(command: F) -> F:
    """``--kubeconfig PATH`` and ``--context NAME``, the same in every command that talks
    to Kubernetes (they arrive as ``kubeconfig`` and ``kube_context``;
    ``ersctl.kube.connect.api_client`` takes both)."""
    command = click.option(
        "--context",
        "kube_context",
        metavar="NAME",
        default=None,
        help="Context of the kubeconfig (default: its current context).",
    )(command)
    return click.option(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="Kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config).",
    )(command)


def fail(program: str, message: str, code: int = EXIT_FAILURE) -> NoReturn:
    """Print ``<program>: <message>`` on stderr and exit with ``code``."""
    print(f"{program}: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


@contextmanager
def run_command(program: str) -> Iterator[None]:
    """Run a command's body; end a ``Failure`` with one line and its exit code."""
    try:
        yield
    except ConfigError as exc:
        fail(program, f"invalid configuration: {exc}", EXIT_USAGE)
    except Failure as exc:
        fail(program, str(exc), exc.exit_code)


def launch(program: str, target: str, argv: list[str] | None = None) -> None:
    """Import ``target`` (``module:function``) and call it, as a console script does,
    ending a Ctrl-C at any point (imports included) with one line."""
    try:
        module_name, _, function = target.partition(":")
        command: Callable[..., object] = getattr(importlib.import_module(module_name), function)
        command(args=argv, prog_name=program)
    except KeyboardInterrupt:
        fail(program, "interrupted", EXIT_INTERRUPTED)
