"""``python examples/simulate.py`` as users run it: a bad option value is one line and
exit code 2 before anything starts; Ctrl-C, during start-up or mid-run, once or again
and again, is one line and exit code 130, with every program it started stopped.

Each run gets its own session (``start_new_session``); every process it starts, however
deep, stays in it, so the programs under test are found through ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import pytest
from simulation.agent import REAL_EXIT_DELAY
from simulation.command import config_from
from simulation.options import parse_args

SIMULATE = Path(__file__).resolve().parents[2] / "examples" / "simulate.py"
PROGRESS = "jobs "  # "[  0.0s] jobs 0/27 done, ..." (simulation.live.format_progress)


def simulate(
    *args: str, prefix: tuple[str, ...] = (), script: Path = SIMULATE, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (simulate.py) in a session of its own; whatever it leaves is killed."""
    proc = subprocess.Popen(
        [*prefix, sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        kill_session(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def processes_in_session(sid: int) -> dict[int, str]:
    """The live (not zombie) processes of session ``sid``: pid -> command line."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        state, _ppid, _pgrp, session = stat[stat.rindex(")") + 2 :].split()[:4]
        if int(session) == sid and state != "Z":
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode()
    return found


def kill_session(proc: subprocess.Popen[str]) -> None:
    """SIGKILL whatever the run left in its session (so a failing test leaves nothing)."""
    for pid in processes_in_session(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait()


def assert_one_line(result: subprocess.CompletedProcess[str], code: int, *parts: str) -> None:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for part in parts:
        assert part in lines[0]


BAD_OPTIONS: list[tuple[list[str], list[str]]] = [
    (["--rate", "-1"], ["--rate", "'-1'"]),
    (["--rate", "inf"], ["--rate", "'inf'"]),
    (["--window", "-5"], ["--window", "'-5'"]),
    (["--window", "nan"], ["--window", "'nan'"]),
    (["--seed", "-1"], ["--seed", "'-1'"]),
    (["--seed", "1.5"], ["--seed", "'1.5'"]),
    (["--burst", "3:0"], ["--burst", "'3:0'"]),
    (["--burst", "inf:3"], ["--burst", "'inf:3'"]),
    (["--job-median", "0"], ["--job-median", "'0'"]),
    (["--job-max", "-2"], ["--job-max", "'-2'"]),
    (["--min-runners", "-1"], ["--min-runners", "'-1'"]),
    (["--max-runners", "0"], ["--max-runners", "'0'"]),
    (["--min-runners", "5", "--max-runners", "3"], ["--min-runners", "--max-runners", "5 > 3"]),
    (["--registration-delay", "-0.1"], ["--registration-delay", "'-0.1'"]),
    (["--startup-delay", "x"], ["--startup-delay", "'x'"]),
    (["--long-poll", "0"], ["--long-poll", "'0'"]),
    (["--runner-exit-delay", "2:1"], ["--runner-exit-delay", "'2:1'"]),
    (["--runner-exit-delay", "-1"], ["--runner-exit-delay", "'-1'"]),
    (["--drain-timeout", "-1"], ["--drain-timeout", "'-1'"]),
    (["--plot", "/nonexistent-dir/x.svg"], ["--plot", "'/nonexistent-dir/x.svg'"]),
    (["--json", "/nonexistent-dir/r.json"], ["--json", "'/nonexistent-dir/r.json'"]),
    (["--plot", "/"], ["--plot", "'/'", "directory"]),
    (["--unknown"], ["--unknown"]),
    (["--rate"], ["--rate"]),
]


@pytest.mark.parametrize(
    ("args", "parts"), [pytest.param(args, parts, id=" ".join(args)) for args, parts in BAD_OPTIONS]
)
def test_a_bad_option_is_one_line_naming_it_and_nothing_starts(
    tmp_path: Path, args: list[str], parts: list[str]
) -> None:
    workdir = tmp_path / "work"

    result = simulate(*args, "--workdir", str(workdir))

    assert_one_line(result, 2, "simulate.py: ", *parts)
    assert result.stdout == ""
    assert not workdir.exists()  # the run creates it first thing


def test_a_workdir_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")

    result = simulate("--workdir", str(blocker / "work"))

    assert_one_line(result, 2, "--workdir", repr(str(blocker / "work")), "not a directory")


def without_root_bypass() -> tuple[str, ...]:
    """A prefix that makes root obey file permissions (no CAP_DAC_OVERRIDE), as the
    users whom a read-only directory stops are not root; nothing for other users."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root, and setpriv (util-linux) is absent")
    caps = "-dac_override,-dac_read_search"
    return ("setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}")


def test_a_plot_in_a_directory_without_write_permission_is_one_line(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    target = locked / "timeline.svg"
    try:
        result = simulate(
            "--plot", str(target), "--workdir", str(tmp_path / "work"), prefix=without_root_bypass()
        )
    finally:
        locked.chmod(0o755)

    assert_one_line(result, 2, "--plot", repr(str(target)), "permission")
    assert list(locked.iterdir()) == []
    assert not (tmp_path / "work").exists()


# -- Ctrl-C -----------------------------------------------------------------------------


def programs_of(proc: subprocess.Popen[str]) -> dict[int, str]:
    return {pid: cmd for pid, cmd in processes_in_session(proc.pid).items() if pid != proc.pid}


# The listener is the one the simulation's kubelet runs for its Pod (from the config that
# LISTENER_CONFIG_PATH names, as ARC's Pod starts it: no command line of its own).
PROGRAMS: Final = ("ersctl reconcile", "-m ghalistener")


def wait_for_both_programs(proc: subprocess.Popen[str]) -> None:
    """Return once both ``PROGRAMS`` run in ``proc``'s session. Found by their command lines,
    not counted: between fork and exec a child still shows simulate.py's, and counting
    one sent the Ctrl-C before the listener had started."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        commands = programs_of(proc).values()
        if all(any(name in command for command in commands) for name in PROGRAMS):
            return
        time.sleep(0.02)
    raise AssertionError(f"the programs did not start (exit code {proc.returncode})")


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("moment", "again"),
    [
        pytest.param("start-up", False, id="during-start-up"),
        pytest.param("mid-run", False, id="mid-run"),
        # Again and again until the process exits, as a user does when stopping does not
        # look quick enough: no press may cut the stopping of the programs short.
        pytest.param("mid-run", True, id="mid-run-pressed-until-it-exits"),
    ],
)
def test_ctrl_c_is_one_line_exit_130_and_stops_the_programs(
    tmp_path: Path, moment: str, again: bool
) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(SIMULATE), "--workdir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        if moment == "mid-run":
            assert proc.stderr is not None
            first = proc.stderr.readline()  # progress starts when the run does
            assert PROGRESS in first, first
        wait_for_both_programs(proc)

        os.kill(proc.pid, signal.SIGINT)
        while again and proc.poll() is None:
            os.kill(proc.pid, signal.SIGINT)  # still ours: poll() has not reaped it
            time.sleep(0.05)
        _, err = proc.communicate(timeout=60)
        leftover = processes_in_session(proc.pid)
    finally:
        kill_session(proc)

    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if PROGRESS not in line] == [
        "simulate.py: interrupted"
    ]
    if moment == "start-up":
        assert err == "simulate.py: interrupted\n"  # no progress yet: the run had not begun
    assert leftover == {}


@pytest.mark.parametrize(
    ("args", "delay"),
    [
        pytest.param([], (0.0, 0.0), id="by default the Pod ends with its job"),
        pytest.param(["--runner-exit-delay"], REAL_EXIT_DELAY, id="alone: GitHub's order"),
        pytest.param(["--runner-exit-delay", "0.5:3"], (0.5, 3.0), id="a range"),
        pytest.param(["--runner-exit-delay", "2"], (2.0, 2.0), id="one value"),
    ],
)
def test_the_runner_exit_delay_reaches_the_agent(
    args: list[str], delay: tuple[float, float]
) -> None:
    assert config_from(parse_args(args)).timing.exit_delay == delay
