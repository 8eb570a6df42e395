"""How both command lines end: one line on stderr and the exit code of the convention.

:func:`run_command` wraps a command's body: a ``ConfigError`` prints
``<program>: invalid configuration: <field>: <problem>`` and exits 2, any other
``Failure`` (Kubernetes, GitHub, the programs' own) prints ``<program>: <message>`` and
exits 1. :func:`launch` is the console scripts' entry point: it runs the command line
(a Ctrl-C during start-up ends with one line, by the entry points' handler,
``ersctl.platform.interrupt.interrupt_ends_start_up``, or for an in-process caller by
its own guard), and it reports click's usage errors in one line too (click's own report
is a usage block). A command that returns ends the process at once, without
the interpreter's teardown (see :func:`exit_now`). Codes: ``ersctl.platform.errors``.

A command imports its work (the client libraries, the controllers) inside
:func:`loading`, once its input is checked: in a program :func:`launch` started, the
cyclic garbage collector waits until then, and what those imports made is frozen.
Optional parts of the client libraries that the programs never call are not imported at
all (:data:`UNUSED_OPTIONAL_MODULES`).
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, NoReturn, TypeVar

import click

from ersctl.platform.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, ConfigError, Failure
from ersctl.platform.interrupt import end_interrupted, exit_now

F = TypeVar("F", bound=Callable[..., object])

UNUSED_OPTIONAL_MODULES: Final = ("httpx._main", "kubernetes_validate")
"""Optional parts of the client libraries that each library imports with itself when
they are installed, and that neither program ever calls: httpx's own command line
(``httpx._main``: rich and pygments, ~40 ms of CPU) and the Kubernetes dynamic client's
manifest validator (``kubernetes_validate``: jsonschema, ~50 ms). Any environment with
this project's test tools has both; the image has neither. :func:`launch` marks them
absent, and both libraries take that as not installed (an ``ImportError``)."""


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


@contextmanager
def loading() -> Iterator[None]:
    """Import a command's work inside this. In a program :func:`launch` started, the
    collector was paused until now; what the imports made is frozen (``gc.freeze``) and
    the collector resumes: the some 60,000 objects the client libraries and the
    controllers leave live as long as the process, and every full collection of a
    running program would walk them again. A command invoked in another program's
    process (a test's) changes nothing there: nothing was paused."""
    try:
        yield
    finally:
        if not gc.isenabled():  # paused by launch: this process is the program
            gc.freeze()
            gc.enable()


def launch(program: str, target: str | click.Command, argv: list[str] | None = None) -> None:
    """Run the click command ``target`` (imported first when named ``module:attribute``),
    as a console script does, with every way it can end in one line: a Ctrl-C at any
    point (imports included) and click's own usage errors (a bad option value: exit 2)."""
    for name in UNUSED_OPTIONAL_MODULES:  # ~85 ms of a start's ~550 where installed
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]
    # Paused until the command's work is imported (loading): those imports make tens of
    # thousands of objects that live as long as the process, and collecting while they
    # are made only walks them again and again (a tenth of a start's CPU or more).
    gc.disable()
    try:
        command = target if isinstance(target, click.Command) else _command_at(target)
        code = command.main(args=argv, prog_name=program, standalone_mode=False)
    except (KeyboardInterrupt, click.Abort):
        end_interrupted(program)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else program
        fail(program, f"{exc.format_message()} (see '{where} --help')", EXIT_USAGE)
    except click.ClickException as exc:
        fail(program, exc.format_message(), exc.exit_code)
    exit_now(code if isinstance(code, int) else EXIT_OK)


def _command_at(target: str) -> click.Command:
    module_name, _, attribute = target.partition(":")
    command: click.Command = getattr(importlib.import_module(module_name), attribute)
    return command
