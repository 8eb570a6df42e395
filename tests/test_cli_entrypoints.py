"""Both programs install as console scripts and as ``python -m`` modules."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(("program", "command"), [("ghalistener", "run"), ("ersctl", "reconcile")])
def test_python_m_help_lists_the_main_command(program: str, command: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", program, "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert command in result.stdout
