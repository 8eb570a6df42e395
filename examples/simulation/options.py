"""The command line of ``examples/simulate.py``, checked before anything starts.

Every value is checked as it is parsed, so a bad one ends the run before the servers and
the programs start (this module imports neither): one line on stderr naming the option
and the value, exit code 2 (``ersctl.platform.cli.fail``, the programs' convention)::

    simulate.py: argument --rate: expected a finite number >= 0, got '-1'
    simulate.py: argument --plot: cannot write '/missing/x.svg': no directory '/missing'

Output paths (``--json``, ``--plot``) must name a file in an existing directory that can
be written; ``--workdir`` an existing writable directory or one that can be created.
Nothing is created here.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from ersctl.platform.cli import fail
from ersctl.platform.errors import EXIT_USAGE
from ersctl.platform.interrupt import EXIT_INTERRUPTED
from simulation.agent import REAL_EXIT_DELAY
from simulation.workload import Burst

PROG = "simulate.py"
DESCRIPTION = (
    "The whole system end to end, with no GitHub account and no cluster (or on an "
    "existing one: --kubeconfig)."
)


def run_checked(
    prog: str,
    argv: list[str] | None,
    parse: Callable[[list[str] | None], argparse.Namespace],
    start: Callable[[argparse.Namespace], int],
    *,
    as_script: bool,
) -> int:
    """Parse (a bad option: one line, exit 2), then ``start`` (which imports the servers
    and the programs only now: a typo should not wait a second for them); a Ctrl-C at
    any point is one line and exit 130. ``as_script``: this process ends with that line,
    so further Ctrl-Cs are ignored rather than cut it short with a traceback (never in a
    test that calls ``main`` in its own process)."""
    try:
        return start(parse(argv))
    except KeyboardInterrupt:
        if as_script:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        fail(prog, "interrupted", EXIT_INTERRUPTED)


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (no usage block) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog, message, EXIT_USAGE)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The checked options; a bad one exits 2 with one line on stderr."""
    parser = Parser(
        prog=PROG,
        description=DESCRIPTION,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    workload = parser.add_argument_group("workload")
    workload.add_argument("--seed", type=whole(minimum=0), default=7, help="workload random seed")
    workload.add_argument(
        "--rate",
        type=number(minimum=0),
        default=0.6,
        help="job arrivals per second (0: bursts only)",
    )
    workload.add_argument(
        "--window", type=number(minimum=0), default=20.0, help="seconds of arrivals"
    )
    workload.add_argument(
        "--burst",
        action="append",
        type=_burst,
        default=argparse.SUPPRESS,
        metavar="AT:COUNT",
        help="COUNT jobs at once at AT s (repeatable; 6:8 when none is given)",
    )
    workload.add_argument(
        "--job-median", type=number(above=0), default=3.0, help="median job seconds"
    )
    workload.add_argument(
        "--job-max", type=number(above=0), default=10.0, help="longest job seconds"
    )
    system = parser.add_argument_group("system")
    system.add_argument(
        "--min-runners", type=whole(minimum=0), default=0, help="listener min_runners"
    )
    system.add_argument(
        "--max-runners", type=whole(minimum=1), default=30, help="listener max_runners"
    )
    system.add_argument(
        "--registration-delay",
        type=number(minimum=0),
        default=0.3,
        help="ER seen -> runner registered (s)",
    )
    system.add_argument(
        "--startup-delay",
        type=number(minimum=0),
        default=0.3,
        help="registered -> online and asking for a job (s)",
    )
    system.add_argument(
        "--runner-exit-delay",
        type=_seconds_range,
        nargs="?",
        const=REAL_EXIT_DELAY,
        default=(0.0, 0.0),
        metavar="LOW[:HIGH]",
        help="seconds from a job completing at the service to its runner's Pod ending, drawn "
        "from LOW..HIGH; without a value GitHub's order, "
        f"{REAL_EXIT_DELAY[0]:g}:{REAL_EXIT_DELAY[1]:g} (the listener hears of a "
        "completion before the controller sees the runner finish)",
    )
    system.add_argument(
        "--long-poll",
        type=number(above=0),
        default=1.0,
        help="seconds the service holds a long poll before 202",
    )
    system.add_argument(
        "--drain-timeout",
        type=number(minimum=0),
        default=30.0,
        help="seconds after the last job could finish before giving up",
    )
    system.add_argument("--faults", action="store_true", help="inject the fault schedule")
    system.add_argument(
        "--kubeconfig",
        metavar="PATH",
        type=kubeconfig_file,
        help="run on the existing cluster this kubeconfig names (its CRDs installed), in a "
        "namespace of its own removed at the end, instead of the embedded API server",
    )
    system.add_argument(
        "--runner-controller",
        action="store_true",
        help="let ersctl's EphemeralRunner controller register runners and run their Pods; "
        "the agent then only plays the kubelet and the runner binary",
    )
    system.add_argument(
        "--without-ars",
        action="store_true",
        help="apply an EphemeralRunnerSet and start the listener by hand, as before the "
        "AutoscalingRunnerSet controller, instead of applying an AutoscalingRunnerSet",
    )
    output = parser.add_argument_group("output")
    output.add_argument("--json", metavar="PATH", type=output_file, help="write the report as JSON")
    output.add_argument("--plot", metavar="PATH", type=output_file, help="write an SVG timeline")
    output.add_argument(
        "--workdir",
        metavar="DIR",
        type=workdir_path,
        help="logs and configs (default: a temp dir)",
    )
    output.add_argument("--quiet", action="store_true", help="no live progress")
    args = parser.parse_args(argv)
    if args.min_runners > args.max_runners:
        parser.error(
            f"argument --min-runners: must not be greater than --max-runners "
            f"({args.min_runners} > {args.max_runners})"
        )
    return args


# -- one value each ---------------------------------------------------------------------


def number(*, minimum: float | None = None, above: float | None = None) -> Callable[[str], float]:
    """A finite float ``>= minimum`` (or ``> above``)."""
    bound = f">= {minimum:g}" if minimum is not None else f"> {above:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        low = (minimum is not None and value < minimum) or (above is not None and value <= above)
        if not math.isfinite(value) or low:
            raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text!r}")
        return value

    return parse


def whole(*, minimum: int) -> Callable[[str], int]:
    """An integer ``>= minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}")
        return value

    return parse


def _seconds_range(text: str) -> tuple[float, float]:
    """``LOW[:HIGH]`` seconds, finite, 0 <= LOW <= HIGH (HIGH defaults to LOW)."""
    low_text, _, high_text = text.partition(":")
    parse = number(minimum=0)
    try:
        low = parse(low_text)
        high = parse(high_text) if high_text else low
    except argparse.ArgumentTypeError:
        low = high = math.nan
    if not low <= high:
        raise argparse.ArgumentTypeError(
            f"expected LOW[:HIGH] seconds, 0 <= LOW <= HIGH, got {text!r}"
        )
    return low, high


def _burst(text: str) -> Burst:
    try:
        return Burst.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def kubeconfig_file(text: str) -> str:
    """A file that exists and can be read (what is in it is checked when the run starts)."""
    path = Path(text)
    if not text or not path.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read {text!r}: permission denied")
    return text


def output_file(text: str) -> str:
    """A file that can be written: its directory exists and is writable, and it is not a
    directory (or a read-only file) itself."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file path, got ''")
    path = Path(text)
    try:
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"cannot write {text!r}: it is a directory")
        _check_writable_dir(path.parent, what=f"cannot write {text!r}")
        if path.exists() and not os.access(path, os.W_OK):
            raise argparse.ArgumentTypeError(f"cannot write {text!r}: permission denied")
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: {exc.strerror}") from None
    return text


def workdir_path(text: str) -> str:
    """A writable directory, or one that can be created (its nearest existing ancestor is a
    writable directory)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a directory path, got ''")
    path = Path(text)
    try:
        if path.exists():
            if not path.is_dir():
                raise argparse.ArgumentTypeError(f"cannot use {text!r}: not a directory")
            _check_writable_dir(path, what=f"cannot write in {text!r}")
            return text
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        _check_writable_dir(ancestor, what=f"cannot create {text!r}")
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot use {text!r}: {exc.strerror}") from None
    return text


def _check_writable_dir(directory: Path, *, what: str) -> None:
    if not directory.exists():
        raise argparse.ArgumentTypeError(f"{what}: no directory {str(directory)!r}")
    if not directory.is_dir():
        raise argparse.ArgumentTypeError(f"{what}: {str(directory)!r} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{what}: no permission to write in {str(directory)!r}")
