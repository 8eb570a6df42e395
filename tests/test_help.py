"""Every option a user can pass says what it does: both programs' click commands, ARC's
``/manager`` flags (its ``-h``), and the example scripts' argparse options. An option
without help is invisible in ``--help`` but for its name (six of ``ersctl reconcile``'s
were, ``--lease-duration`` among them)."""

from __future__ import annotations

import argparse
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ersctl.arc.flags import FLAGS
from ersctl.cli import main as ersctl_main
from ghalistener.cli import main as ghalistener_main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


def commands(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from commands(sub, f"{path} {name}")


@pytest.mark.parametrize(
    ("program", "name"), [(ersctl_main, "ersctl"), (ghalistener_main, "ghalistener")]
)
def test_every_command_and_option_of_both_programs_has_help(
    program: click.Group, name: str
) -> None:
    missing = [
        f"{path} {'/'.join(param.opts)}"
        for path, command in commands(program, name)
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not (param.help or "").strip()
    ]
    missing += [
        path for path, command in commands(program, name) if not (command.help or "").strip()
    ]
    assert missing == []


def test_every_arc_manager_flag_says_what_ersctl_makes_of_it() -> None:
    assert [flag.name for flag in FLAGS if not flag.meaning.strip()] == []


def test_ersctl_help_names_the_four_controllers_it_runs() -> None:
    out = CliRunner().invoke(ersctl_main, ["--help"]).output
    for kind in (
        "AutoscalingRunnerSet",
        "AutoscalingListener",
        "EphemeralRunnerSet",
        "EphemeralRunner ",
    ):
        assert kind in out.replace("\n", " ")


class _Parsed(Exception):
    """Raised instead of parsing: the parser is all the test needs."""


def parsers_of(script: Path, monkeypatch: pytest.MonkeyPatch) -> list[argparse.ArgumentParser]:
    """The argparse parsers ``script`` builds before it parses its arguments."""
    built: list[argparse.ArgumentParser] = []

    def capture(parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        built.append(parser)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
    monkeypatch.setattr(sys, "argv", [str(script)])
    monkeypatch.syspath_prepend(str(EXAMPLES))
    with pytest.raises(_Parsed):
        runpy.run_path(str(script), run_name="__main__")
    return built


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_example_script_option_has_help(
    script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (parser,) = parsers_of(script, monkeypatch)
    missing = [
        "/".join(action.option_strings)
        for action in parser._actions
        if action.option_strings and not (action.help or "").strip()
    ]
    assert missing == []
