"""How both command lines end: one line on stderr and the exit code of the convention.

:func:`run_command` wraps a command's body: a ``ConfigError`` prints
``<program>: invalid configuration: <field>: <problem>`` and exits 2, any other
``Failure`` (Kubernetes, GitHub, the programs' own) prints ``<program>: <message>`` and
exits 1. :func:`launch` is the console scripts' entry point: it imports the command
line inside a guard, so a Ctrl-C even during start-up's imports ends with one line
instead of a traceback, and it reports click's usage errors in one line too (click's
own report is a usage block). A command that returns ends the process at once, without
the interpreter's teardown (see :func:`exit_now`). Codes: ``ersctl.platform.errors``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn, TypeVar

import click

from ersctl.platform.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, ConfigError, Failure
from ersctl.platform.interrupt import end_interrupted, exit_now

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
    """Import the click command ``target`` (``module:attribute``) and run it, as a console
    script does, with every way it can end in one line: a Ctrl-C at any point (imports
    included) and click's own usage errors (a bad option value: exit 2)."""
    try:
        module_name, _, attribute = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        code = command.main(args=argv, prog_name=program, standalone_mode=False)
    except (KeyboardInterrupt, click.Abort):
        end_interrupted(program)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else program
        fail(program, f"{exc.format_message()} (see '{where} --help')", EXIT_USAGE)
    except click.ClickException as exc:
        fail(program, exc.format_message(), exc.exit_code)
    exit_now(code if isinstance(code, int) else EXIT_OK)
