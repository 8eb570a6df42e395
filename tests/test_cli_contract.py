"""Both command lines meet bad input alike: the same exit code, one line naming the
input, no traceback (the platform's one exit-code convention and error reporting).

Each case runs ``ghalistener run`` and ``ersctl reconcile`` as users do, as
subprocesses, with the same input: a malformed or missing kubeconfig (exit 2), a metrics
address already in use (exit 1), an API server that does not answer (exit 1).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from ersctl.testing.ports import unused_port

TIMEOUT = 60
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 [A-Z]+ ")


@dataclass(frozen=True)
class Outcome:
    code: int
    stderr: str

    @property
    def reports(self) -> list[str]:
        """The stderr lines that are not log lines: what the program says on its way out."""
        return [line for line in self.stderr.splitlines() if not LOG_LINE.match(line)]


def listener(tmp_path: Path, *options: str, metrics_addr: str = "") -> subprocess.Popen[str]:
    config = tmp_path / "listener.json"
    config.write_text(
        json.dumps(
            {
                "configure_url": "https://github.com/octo-org",
                "github_token": "ghp_contract_test_token",
                "ephemeral_runner_set_namespace": "arc",
                "ephemeral_runner_set_name": "runners",
                "runner_scale_set_id": 1,
                "metrics_addr": metrics_addr,
            }
        )
    )
    return start([sys.executable, "-m", "ghalistener", "run", "--config", str(config), *options])


def controller(*options: str, metrics_addr: str = "0") -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "ersctl", "reconcile", "--no-leader-elect"]
    return start([*command, "--metrics-addr", metrics_addr, *options])


def environment() -> dict[str, str]:
    """This environment without a kubeconfig or a cluster of its own."""
    return {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }


def start(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment()
    )


def finish(process: subprocess.Popen[str]) -> Outcome:
    _, stderr = process.communicate(timeout=TIMEOUT)
    return Outcome(process.returncode, stderr)


def kubeconfig_for(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "kube-token-not-shown"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


@pytest.fixture
def silent_server() -> str:
    """An API server address where nothing listens."""
    return f"http://127.0.0.1:{unused_port()}"


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def both(tmp_path: Path, *options: str, metrics_addr: str | None = None) -> dict[str, Outcome]:
    extra = {} if metrics_addr is None else {"metrics_addr": metrics_addr}
    # Side by side: the same input to both at once.
    running = {
        "ghalistener": listener(tmp_path, *options, **extra),
        "ersctl": controller(*options, **extra),
    }
    return {program: finish(process) for program, process in running.items()}


def assert_one_line_each(outcomes: dict[str, Outcome], code: int, *names: str) -> None:
    for program, outcome in outcomes.items():
        assert "Traceback" not in outcome.stderr, outcome.stderr
        assert outcome.code == code, (program, outcome.stderr)
        assert len(outcome.reports) == 1, (program, outcome.stderr)
        (line,) = outcome.reports
        assert line.startswith(f"{program}: "), line
        for name in names:
            assert name in line, (program, line)


def test_a_malformed_kubeconfig_is_exit_2_and_one_line_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("garbage: [\n")
    outcomes = both(tmp_path, "--kubeconfig", str(bad))
    assert_one_line_each(outcomes, 2, "kubeconfig", str(bad), "not valid YAML")


def test_a_missing_kubeconfig_is_exit_2_and_one_line_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "kubeconfig"
    outcomes = both(tmp_path, "--kubeconfig", str(missing))
    assert_one_line_each(outcomes, 2, "kubeconfig", str(missing), "no such file")


def test_a_metrics_address_in_use_is_exit_1_and_one_line_naming_option_and_address(
    tmp_path: Path, silent_server: str, taken_port: int
) -> None:
    kubeconfig = kubeconfig_for(tmp_path, silent_server)
    address = f"127.0.0.1:{taken_port}"
    outcomes = both(tmp_path, "--kubeconfig", str(kubeconfig), metrics_addr=address)
    assert_one_line_each(outcomes, 1, repr(address), "Address already in use")
    assert "metrics_addr" in outcomes["ghalistener"].reports[0]
    assert "--metrics-addr" in outcomes["ersctl"].reports[0]


def test_an_unreachable_api_server_is_exit_1_and_one_line_naming_it(
    tmp_path: Path, silent_server: str
) -> None:
    kubeconfig = kubeconfig_for(tmp_path, silent_server)
    outcomes = both(tmp_path, "--kubeconfig", str(kubeconfig), metrics_addr="0")
    assert_one_line_each(outcomes, 1, f"no response from {silent_server}", "Connection refused")
    for outcome in outcomes.values():
        assert "kube-token-not-shown" not in outcome.stderr


GUARDED: Final = "click"
"""A module the entry points import inside their Ctrl-C guard (ersctl/__main__.py): once
it is in, the command line's own imports are under way. Before the guard the interpreter
and runpy are still starting, as for any Python program."""


def signal_once_imported(process: subprocess.Popen[str], module: str) -> None:
    """SIGINT ``process`` (started with ``-X importtime``) as soon as ``module`` is imported:
    the signal lands during the imports that follow, whatever the machine's load."""
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == module:
            process.send_signal(signal.SIGINT)
            return
    raise AssertionError(f"{module} was never imported")


@pytest.mark.parametrize(
    "delay",
    [
        pytest.param(None, id="while importing"),
        pytest.param(1.5, id="while connecting"),
    ],
)
@pytest.mark.parametrize("program", ["ghalistener", "ersctl"])
def test_ctrl_c_during_start_up_ends_without_a_traceback(
    tmp_path: Path, silent_server: str, program: str, delay: float | None
) -> None:
    # A server that never answers keeps the start-up busy (connect timeouts) until the
    # signal comes: before its handler is installed it is a one-line interruption
    # (130), after it a clean stop (0).
    with socket.socket() as black_hole:
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen(0)  # accepts nothing: connections hang in the backlog
        kubeconfig = kubeconfig_for(tmp_path, f"http://127.0.0.1:{black_hole.getsockname()[1]}")
        config = tmp_path / "listener.json"
        config.write_text(json.dumps({
            "configure_url": "https://github.com/octo-org", "github_token": "ghp_ctrl_c_token",
            "ephemeral_runner_set_namespace": "arc", "ephemeral_runner_set_name": "runners",
            "runner_scale_set_id": 1,
        }))  # fmt: skip
        command = {
            "ghalistener": ["ghalistener", "run", "--config", str(config)],
            "ersctl": ["ersctl", "reconcile", "--no-leader-elect", "--metrics-addr", "0"],
        }[program]
        importtime = ["-X", "importtime"] if delay is None else []
        process = start(
            [sys.executable, *importtime, "-m", *command, "--kubeconfig", str(kubeconfig)]
        )
        if delay is None:
            signal_once_imported(process, GUARDED)
        else:
            try:
                process.wait(timeout=delay)
                raise AssertionError(f"{program} ended before the signal: {process.stderr!r}")
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGINT)
        finished = finish(process)
    said = [line for line in finished.stderr.splitlines() if not line.startswith("import time:")]
    outcome = Outcome(finished.code, "".join(f"{line}\n" for line in said))
    stderr = outcome.stderr
    assert "Traceback" not in stderr, stderr
    assert outcome.code in (0, 130), stderr
    assert len(outcome.reports) <= 1, stderr
    if outcome.code == 130:
        assert outcome.reports == [f"{program}: interrupted"]


@pytest.mark.parametrize(
    ("command", "option"),
    [
        pytest.param(
            ["ghalistener", "run", "--min-runners", "x"], "'--min-runners'", id="listener"
        ),
        pytest.param(["ersctl", "reconcile", "--workers", "0"], "'--workers'", id="controller"),
        pytest.param(["ersctl", "status", "a/b/c"], "NAMESPACE/NAME", id="a malformed key"),
    ],
)
def test_a_bad_option_value_is_one_line_and_exit_2(command: list[str], option: str) -> None:
    outcome = finish(start([sys.executable, "-m", *command]))
    assert outcome.code == 2, outcome.stderr
    (line,) = outcome.stderr.splitlines()
    assert line.startswith(f"{command[0]}: ") and option in line
    assert line.endswith(f"(see '{command[0]} {command[1]} --help')")
