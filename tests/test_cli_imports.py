"""A command line loads what its command needs, when it runs.

``--help``, ``--version``, a typo, a bad option value and a bad configuration are
answered by the declarations alone (``ersctl/cli.py``, ``ghalistener/cli.py``): no
Kubernetes, HTTP, JWT or metrics library, no controller, no command's work module. A
command that runs imports its own work and not another command's. Each case runs the
real program as a subprocess under ``-X importtime``, which lists every module the
process imported, and checks its answer too, so a case cannot pass by answering
something else; the running controller's case lists ``sys.modules`` as it exits
instead (modules loaded by ``importlib.import_module`` are not in that log).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from tests import local_http
from tests.kubeapi import KubeApi
from tests.polling import eventually
from tests.standalone import Standalone

CLIENT_LIBRARIES: Final = ("kubernetes", "urllib3", "httpx", "jwt", "prometheus_client")
"""The libraries behind the programs' start-up time (half a second of CPU together)."""

WORK_MODULES: Final = (
    "ersctl.commands.",
    "ersctl.wiring",
    "ersctl.startup",
    "ersctl.kube.manager",
    "ghalistener.wiring",
    "ghalistener.listener",
    "ghalistener.actions.client",
)
"""Module name prefixes of what a command does once it runs: the command modules,
the wiring, the runtime and the scale-set client."""


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    said: list[str]
    """stderr without the import lines: what the program told its user."""
    imported: frozenset[str]


def environment() -> dict[str, str]:
    """Neither a kubeconfig nor a GitHub credential of the caller's: each case's input
    is all the program sees."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "LISTENER_CONFIG_PATH")
        and not k.startswith("GITHUB_")
    }


def command(module: str, *args: str) -> list[str]:
    return [sys.executable, "-X", "importtime", "-m", module, *args]


def outcome(code: int, stdout: str, stderr: str) -> Run:
    lines = stderr.splitlines()
    imported = frozenset(
        line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")
    )
    said = [line for line in lines if not line.startswith("import time:")]
    return Run(code, stdout, said, imported)


def run(module: str, *args: str, cwd: Path) -> Run:
    done = subprocess.run(
        command(module, *args),
        capture_output=True,
        text=True,
        env=environment(),
        cwd=cwd,
        timeout=60,
    )
    return outcome(done.returncode, done.stdout, done.stderr)


def loaded(process: Run, prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in process.imported if m.startswith(prefixes))


def libraries(process: Run) -> list[str]:
    return sorted({m.split(".")[0] for m in process.imported} & set(CLIENT_LIBRARIES))


def nothing_loaded(process: Run) -> bool:
    """No client library and no command's work: seen in an import log that does show
    the command line's library being loaded (an empty log would show nothing)."""
    assert "click" in process.imported, "the import log does not show click"
    return libraries(process) == [] and loaded(process, WORK_MODULES) == []


UNUSED_EXTRAS: Final = ("rich", "pygments", "jsonschema")
"""Packages the test tools install that httpx (its command line) and the Kubernetes
client (its dynamic client's validator, kubernetes-validate) would import with
themselves. (The log shows kubernetes_validate itself as a few microseconds' refused
attempt, not as loaded.)"""


def unused_extras(process: Run) -> list[str]:
    """The ``UNUSED_EXTRAS`` ``process`` loaded; each one is installed here, so none
    loaded is the programs' doing."""
    for package in (*UNUSED_EXTRAS, "kubernetes_validate"):
        assert importlib.util.find_spec(package) is not None, f"{package} is not installed"
    return sorted({m.split(".")[0] for m in process.imported} & set(UNUSED_EXTRAS))


def listener_json(directory: Path, **settings: object) -> Path:
    """A listener configuration in ``directory``: the keys every one needs, plus
    ``settings``."""
    path = directory / "listener.json"
    path.write_text(
        json.dumps(
            {
                "configure_url": "https://github.com/octo-org",
                "github_token": "ghp_import_test_token",
                "ephemeral_runner_set_namespace": "arc",
                "ephemeral_runner_set_name": "runners",
                "runner_scale_set_id": 1,
                **settings,
            }
        )
    )
    return path


@pytest.fixture
def listener_config(tmp_path: Path) -> Path:
    """A listener configuration with one key misspelt (``max_runner``)."""
    return listener_json(tmp_path, max_runner=3)


HELP: Final = [
    pytest.param(("ersctl", "--help"), "Usage: ersctl ", id="ersctl --help"),
    pytest.param(("ersctl", "--version"), "ersctl, version ", id="ersctl --version"),
    pytest.param(("ersctl", "reconcile", "--help"), "Usage: ersctl reconcile ", id="reconcile"),
    pytest.param(("ersctl", "status", "-h"), "Usage: ersctl status ", id="status"),
    pytest.param(("ersctl", "scaleset", "--help"), "Usage: ersctl scaleset ", id="scaleset"),
    pytest.param(("ghalistener", "--help"), "Usage: ghalistener ", id="ghalistener --help"),
    pytest.param(("ghalistener", "run", "--help"), "Usage: ghalistener run ", id="run"),
]


@pytest.mark.parametrize(("command", "first"), HELP)
def test_help_and_version_load_no_client_library_and_no_command(
    tmp_path: Path, command: tuple[str, ...], first: str
) -> None:
    process = run(*command, cwd=tmp_path)
    assert process.code == 0, process.said
    assert process.stdout.startswith(first), process.stdout
    assert nothing_loaded(process)


BAD_INPUT: Final = [
    pytest.param(("ersctl", "reconcile", "--no-such-flag"), "No such option", id="a typo"),
    pytest.param(("ersctl", "reconcil"), "No such command", id="a command typo"),
    pytest.param(("ersctl", "reconcile", "--workers", "0"), "'--workers'", id="a bad value"),
    pytest.param(
        ("ersctl", "reconcile", "--metrics-addr", "nowhere"), "--metrics-addr", id="an address"
    ),
    pytest.param(("ersctl", "status", "a/b/c"), "NAMESPACE/NAME", id="a bad key"),
    pytest.param(
        ("ersctl", "scaleset", "--config-url", "https://github.com/o", "--name", "s"),
        "GITHUB_TOKEN",
        id="no GitHub credential",
    ),
    pytest.param(("ersctl.arc.manager", "--no-such-flag"), "no-such-flag", id="ARC's flags"),
    pytest.param(("ghalistener", "run", "--min-runners", "x"), "'--min-runners'", id="a value"),
    pytest.param(
        ("ghalistener", "run", "--config", "missing.json"), "missing.json", id="no config file"
    ),
]


@pytest.mark.parametrize(("command", "named"), BAD_INPUT)
def test_bad_input_is_answered_without_a_client_library_or_a_command(
    tmp_path: Path, command: tuple[str, ...], named: str
) -> None:
    process = run(*command, cwd=tmp_path)
    assert process.code == 2, process.said
    (line,) = process.said
    assert named in line
    assert nothing_loaded(process)


def test_a_bad_listener_configuration_is_answered_without_a_client_library(
    tmp_path: Path, listener_config: Path
) -> None:
    process = run("ghalistener", "run", "--config", str(listener_config), cwd=tmp_path)
    assert process.code == 2, process.said
    (line,) = process.said
    assert line.startswith("ghalistener: invalid configuration: max_runner: ")
    assert nothing_loaded(process)


def test_the_controller_loads_its_own_work_and_not_other_commands(tmp_path: Path) -> None:
    # A kubeconfig that cannot be read: the command gets as far as loading the
    # Kubernetes client (which reads kubeconfigs), so its imports are all there.
    missing = tmp_path / "kubeconfig"
    process = run("ersctl", "reconcile", "--kubeconfig", str(missing), cwd=tmp_path)
    assert process.code == 2, process.said
    assert {"kubernetes", "httpx"} <= set(libraries(process))  # the probe sees what is loaded
    assert "ersctl.commands.reconcile" in process.imported
    assert unused_extras(process) == []
    others = (
        "ersctl.commands.status",
        "ersctl.commands.rollout",
        "ersctl.ephemeralrunnerset.table",
    )
    assert loaded(process, (*others, "ghalistener.wiring", "ghalistener.listener")) == []


def test_the_listener_loads_its_own_work_and_no_controller(tmp_path: Path) -> None:
    config = listener_json(tmp_path, metrics_addr="")
    missing = tmp_path / "kubeconfig"
    process = run(
        "ghalistener", "run", "--config", str(config), "--kubeconfig", str(missing), cwd=tmp_path
    )
    assert process.code == 2, process.said
    assert {"kubernetes", "httpx"} <= set(libraries(process))
    assert "ghalistener.wiring" in process.imported
    assert unused_extras(process) == []
    assert loaded(process, ("ersctl.commands.", "ersctl.wiring", "ersctl.kube.manager")) == []


OPTIONAL_CONTROLLERS: Final = (
    "ersctl.ephemeralrunner.controller",
    "ersctl.autoscalingrunnerset.controller",
    "ersctl.autoscalinglistener.controller",
)


def run_controller(
    argv: list[str], *, cwd: Path, env: dict[str, str], running: Callable[[str], bool]
) -> tuple[int, str]:
    """Start ``argv`` (a controller), SIGTERM it once ``running(its stderr)``; its exit
    code and stderr."""
    stderr = cwd / "stderr"
    with stderr.open("w") as err:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
    try:
        eventually(lambda: running(stderr.read_text()), timeout=30, what="the controller running")
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    return code, stderr.read_text()


def test_a_controller_switched_off_is_never_loaded(kube: KubeApi, tmp_path: Path) -> None:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    options = ["--no-runner-controller", "--no-autoscaling-runner-set-controller"]
    options += ["--no-listener-controller", "--no-leader-elect", "--metrics-addr", "0"]
    options += ["--namespace", kube.namespace, "--kubeconfig", str(kubeconfig)]
    # Running: every controller it was asked for is registered and its caches synced.
    code, stderr = run_controller(
        command("ersctl", "reconcile", *options),
        cwd=tmp_path,
        env=environment(),
        running=lambda said: "caches synced" in said,
    )
    ran = outcome(code, "", stderr)
    assert ran.code == 0, ran.said
    assert "ersctl.ephemeralrunnerset.controller" in ran.imported  # the one it runs
    assert loaded(ran, OPTIONAL_CONTROLLERS) == []


MODULES_AT_EXIT: Final = """\
import os, sys
_exit = os._exit
def _write_modules_then_exit(code):
    with open(os.environ["MODULES_AT_EXIT"], "w") as out:
        out.write("\\n".join(sys.modules))
    _exit(code)
os._exit = _write_modules_then_exit
"""
"""A ``sitecustomize`` that writes the names of the modules loaded when the program
ends (it ends with ``os._exit``): the client loads its API classes with
``importlib.import_module``, which ``-X importtime`` does not log."""


def test_a_running_controller_loads_no_generated_api_but_the_lease_library_s(
    kube: KubeApi, tmp_path: Path
) -> None:
    # Every controller on, leading, caches synced, the CRDs checked: its lists,
    # watches and reads go through ersctl.kube.client. The client's generated API
    # classes build pydantic models for every kind they name on import (CoreV1Api
    # alone: about 0.45 s of CPU per start, twice what the rest of a start costs).
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(MODULES_AT_EXIT)
    modules = tmp_path / "modules"
    paths = [str(probe), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = environment() | {"PYTHONPATH": os.pathsep.join(paths), "MODULES_AT_EXIT": str(modules)}
    options = ["--leader-elect", "--metrics-addr", "0", "--namespace", kube.namespace]
    options += ["--kubeconfig", str(kubeconfig)]
    code, stderr = run_controller(
        [sys.executable, "-m", "ersctl", "reconcile", *options],
        cwd=tmp_path,
        env=env,
        running=lambda said: "caches synced" in said and "acquired lease" in said,
    )
    assert code == 0, stderr
    imported = set(modules.read_text().split())
    assert set(OPTIONAL_CONTROLLERS) <= imported  # every controller ran
    # kubernetes.leaderelection reads and writes the Lease with its own API class.
    generated = sorted(m for m in imported if m.startswith("kubernetes.client.api."))
    assert generated == ["kubernetes.client.api.coordination_v1_api"], generated


def test_the_embedded_servers_command_line_serves_without_the_kubernetes_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A test tool started beside the programs (and in every existing-cluster run): the
    # client library was half its start, for a convenience its serving never calls.
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    server = Standalone(tmp_path)
    try:
        assert server.ready_line.startswith("ready http"), server.ready_line
        url = server.ready_line.removeprefix("ready ") + "/api/v1/namespaces/default"
        assert local_http.get(url, timeout=10).json()["metadata"]["name"] == "default"
        server.process.send_signal(signal.SIGTERM)
        _, stderr = server.process.communicate(timeout=10)
    finally:
        server.stop()
    process = outcome(server.process.returncode, "", stderr)
    assert process.code == 0, process.said
    assert "ersctl.testing.apiserver.server" in process.imported  # the log is complete
    assert loaded(process, ("kubernetes",)) == []


def test_a_simulation_on_the_embedded_server_loads_no_kubernetes_client(tmp_path: Path) -> None:
    # What simulate.py and soak.py import to run; only a run on a cluster (--kubeconfig,
    # simulation.remote) needs the client, and loads it then.
    examples = Path(__file__).resolve().parents[1] / "examples"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import simulation.command, simulation.soak"],
        capture_output=True,
        text=True,
        env=environment() | {"PYTHONPATH": str(examples)},
        cwd=tmp_path,
        timeout=60,
    )
    process = outcome(done.returncode, done.stdout, done.stderr)
    assert process.code == 0, process.said
    assert {"simulation.orchestrate", "ersctl.testing.apiserver.server"} <= process.imported
    assert loaded(process, ("kubernetes",)) == []
