"""How both command lines start: a program that ``launch`` started imports its command's
work with the garbage collector paused, then freezes what it imported and resumes it;
a command run inside another program's process leaves that process's collector alone.

Each case runs in a fresh interpreter: freezing the test process's own objects would
keep them for the rest of the run.
"""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc
import sys

import click

from ersctl.platform.cli import launch, loading


@click.command()
def probe() -> None:
    paused = not gc.isenabled()
    with loading():
        import decimal  # noqa: F401  (a command's work, imported when it runs)
    print(paused, gc.isenabled(), gc.get_freeze_count() > 0, flush=True)


if sys.argv[1] == "launched":
    launch("probe", probe, [])
else:
    probe.main([], standalone_mode=False)
"""


def probe(how: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, how], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.split()


def test_a_launched_program_imports_its_work_with_the_collector_paused_then_frozen() -> None:
    paused, enabled_after, frozen = probe("launched")
    assert (paused, enabled_after, frozen) == ("True", "True", "True")


def test_a_command_run_in_another_programs_process_leaves_its_collector_alone() -> None:
    paused, enabled_after, frozen = probe("in-process")
    assert (paused, enabled_after, frozen) == ("False", "True", "False")
