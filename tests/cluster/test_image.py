"""The image ships both programs and none of the test support under ``*/testing/``.

There is no Docker engine on the build machines, so this does what the Dockerfile's build
stage does with the same inputs: the build context as .dockerignore leaves it, the build
stage's ``WORKDIR`` and ``COPY`` instructions, then pip building the project with its
build backend (hatchling) — a wheel here, where the image runs ``pip install .``. The
programs then run from that wheel alone: the repository is not on ``sys.path``, only the
unpacked wheel and the third-party packages of this virtual environment.
"""

from __future__ import annotations

import json
import signal
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve
from tests.cluster.image import (
    DockerIgnore,
    console_scripts,
    image_root,
    run_isolated,
    write_console_scripts,
)
from tests.kubeapi import KubeApi
from tests.listener.arc_configs import pat_config_metrics_off
from tests.listener.test_arc_config import ers_spec
from tests.listener.test_cli_subprocess import create_ers
from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ("ghalistener", "ersctl")

pytestmark = pytest.mark.timeout(60)


def test_the_wheel_holds_both_programs_and_no_test_support(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()

    assert [n for n in names if "testing" in PurePosixPath(n).parts] == []
    for program in PROGRAMS:
        assert f"{program}/__main__.py" in names
        assert f"{program}/cli.py" in names
    assert any(n.startswith("ersctl/crds/") and n.endswith(".yaml") for n in names)


def test_both_programs_run_from_the_wheel_alone(unpacked: Path, tmp_path: Path) -> None:
    # ersctl-manager: ARC's controller command line (the image's /manager).
    assert sorted(console_scripts(unpacked)) == sorted([*PROGRAMS, "ersctl-manager"])
    write_console_scripts(unpacked, tmp_path)
    running = {
        program: run_isolated(unpacked, tmp_path, str(tmp_path / program), "--help")
        for program in PROGRAMS
    }
    # Every module of both packages, imported from the wheel, pulls in no test support.
    probe = run_isolated(unpacked, tmp_path, "-c", IMPORT_EVERY_MODULE)

    for program, proc in running.items():
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, (program, err)
        assert err == ""
        assert out.startswith(f"Usage: {program} [OPTIONS] COMMAND"), out
    out, err = probe.communicate(timeout=60)
    assert probe.returncode == 0, err
    assert err == ""
    seen = json.loads(out)
    assert str(ROOT) not in seen["path"]
    for program in PROGRAMS:
        assert seen["files"][program] == str(unpacked / program / "__init__.py")
    assert len(seen["imported"]) > 50
    assert [m for m in seen["modules"] if "testing" in m.split(".")] == []


ARC_LISTENER_COMMAND = "/ghalistener"
"""The command of the listener container in ARC's AutoscalingListener Pod (resource
builder: ``scaleSetListenerEntrypoint``); no args, env ``LISTENER_CONFIG_PATH``."""
ARC_CONFIG_PATH = "/etc/gha-listener/config.json"


def test_arcs_listener_pod_command_runs_the_listener_from_its_config_path(
    unpacked: Path, kube: KubeApi, tmp_path: Path
) -> None:
    # The final stage's filesystem, as far as the listener is concerned: the virtual
    # environment's bin/ as pip fills it, then the stage's links.
    root = tmp_path / "root"
    links = image_root(unpacked, root, ROOT / "Dockerfile")
    entrypoint = links[ARC_LISTENER_COMMAND]
    assert entrypoint.resolve() == root / "opt" / "venv" / "bin" / "ghalistener"

    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    config = root / ARC_CONFIG_PATH.lstrip("/")
    simulator = GitHubSimulator(hold_seconds=30)
    simulator.create_scale_set(name="arc-runners")
    with (
        serve(simulator, port=0) as github,
        (tmp_path / "stderr").open("w+") as stderr,
    ):
        create_ers(kube)
        config.parent.mkdir(parents=True)
        config.write_text(pat_config_metrics_off(f"{github.url}/octo", kube.namespace))
        # As the Pod runs it: the command alone, the config path in the environment (and
        # here a kubeconfig where the Pod has its service account).
        env = {"LISTENER_CONFIG_PATH": str(config), "KUBECONFIG": str(kubeconfig)}
        listener = run_isolated(unpacked, tmp_path, str(entrypoint), env=env, stderr=stderr)

        def session() -> object:
            assert listener.poll() is None, "the listener exited"
            return simulator.state()["sessions"]

        try:
            eventually(session, what="a session", timeout=20)
            simulator.enqueue_job(1)
            eventually(lambda: ers_spec(kube)["replicas"] == 1, what="scaled", timeout=20)
            listener.send_signal(signal.SIGTERM)
            code = listener.wait(timeout=10)
        finally:
            if listener.poll() is None:
                listener.kill()
        stderr.seek(0)
        assert code == 0, stderr.read()


IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, sys
imported = []
for name in ("ghalistener", "ersctl"):
    package = importlib.import_module(name)
    for info in pkgutil.walk_packages(package.__path__, name + "."):
        importlib.import_module(info.name)
        imported.append(info.name)
print(json.dumps({
    "path": sys.path,
    "files": {name: sys.modules[name].__file__ for name in ("ghalistener", "ersctl")},
    "imported": imported,
    "modules": sorted(sys.modules),
}))
"""


@pytest.mark.parametrize(
    ("path", "excluded"),
    [
        ("README.md", False),
        ("ersctl/cli.py", False),
        ("ersctl/crds/Kustomization", False),
        ("tests/conftest.py", True),
        (".venv/bin/python", True),
        ("ghalistener/__pycache__/cli.cpython-311.pyc", True),
        ("ersctl/kube/__pycache__/queue.cpython-311.pyc", True),
        ("ghalistener/testing/server.py", True),
        ("ersctl/testing/apiserver/server.py", True),
        ("ersctl/testing/podsim.py", True),
    ],
)
def test_the_build_context_is_the_two_packages_and_their_metadata(
    path: str, excluded: bool
) -> None:
    assert DockerIgnore.of(ROOT).excludes(path) is excluded


@pytest.mark.parametrize(
    ("rules", "path", "excluded"),
    [
        # The examples of Docker's .dockerignore documentation.
        ("*/temp*", "somedir/temporary.txt", True),
        ("*/temp*", "somedir/sub/temporary.txt", False),
        ("*/*/temp*", "somedir/subdir/temporary.txt", True),
        ("temp?", "tempa", True),
        ("temp?", "dir/tempa", False),
        ("**/*.go", "a/b/c.go", True),
        ("**/*.go", "c.go", True),
        ("*.md\n!README*.md\nREADME-secret.md", "README-secret.md", True),
        ("*.md\n!README*.md\nREADME-secret.md", "README.md", False),
        ("*.md\nREADME-secret.md\n!README*.md", "README-secret.md", False),
        # Cleaning, comments and parents.
        ("/foo/bar/", "foo/bar/baz", True),
        ("# foo", "# foo", False),
        ("foo", "foo/bar/baz", True),
        ("*\n!foo/\nfoo/bar", "foo/bar/baz", True),
        ("*\n!foo/\nfoo/bar", "foo/baz", False),
    ],
)
def test_the_dockerignore_reading_follows_docker(rules: str, path: str, excluded: bool) -> None:
    assert DockerIgnore(rules).excludes(path) is excluded
