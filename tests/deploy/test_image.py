"""The image ships both programs and none of the test support under ``*/testing/``.

There is no Docker engine on the build machines, so this does what the Dockerfile's build
stage does with the same inputs: the build context as .dockerignore leaves it, the build
stage's ``WORKDIR`` and ``COPY`` instructions, then pip building the project with its
build backend (hatchling) — a wheel here, where the image runs ``pip install .``. The
programs then run from that wheel alone: the repository is not on ``sys.path``, only the
unpacked wheel and the third-party packages of this virtual environment.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import signal
import zipfile
from pathlib import Path, PurePosixPath

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve
from tests.deploy.image import (
    DockerIgnore,
    console_scripts,
    copy_build_stage,
    dockerfile_stages,
    image_root,
    pruned_from_venv,
    run_isolated,
    stage_env,
    stage_named,
    write_console_scripts,
)
from tests.ghalistener.arc_configs import pat_config_metrics_off
from tests.ghalistener.test_arc_config import ers_spec
from tests.ghalistener.test_cli_subprocess import create_ers
from tests.kubeapi import KubeApi
from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ("ghalistener", "ersctl")
LOCK = ROOT / ".ci" / "constraints.txt"

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
    # Every module of both packages, imported from the wheel, pulls in no test support,
    # and imports with what the image prunes from its environment made unimportable.
    blocked = json.dumps(sorted(pruned_modules()))
    probe = run_isolated(unpacked, tmp_path, "-c", IMPORT_EVERY_MODULE, env={"BLOCKED": blocked})

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
import importlib, importlib.abc, json, os, pkgutil, sys

class Pruned(importlib.abc.MetaPathFinder):
    blocked = json.loads(os.environ.get("BLOCKED", "[]"))
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in self.blocked):
            raise ImportError(f"{name} is not in the image")
        return None

sys.meta_path.insert(0, Pruned())
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


def pruned_modules() -> set[str]:
    """The import names of what the image's build stage removes from its environment:
    the top-level modules of each uninstalled distribution, and each removed package."""
    distributions, modules = pruned_from_venv(
        stage_named(dockerfile_stages(ROOT / "Dockerfile"), "builder")
    )
    wanted = {canonicalize_name(d) for d in distributions}
    for module, owners in importlib.metadata.packages_distributions().items():
        if wanted & {canonicalize_name(o) for o in owners}:
            modules.add(module)
    return modules


def test_the_image_prunes_the_asyncio_client_and_its_aiohttp_stack() -> None:
    # The pruning is worth its lines (half of kubernetes' size) and must not grow into
    # what the programs import: the import probe above blocks exactly this set.
    assert {"kubernetes.aio", "aiohttp", "yarl", "multidict"} <= pruned_modules()
    assert not {"kubernetes", "httpx", "pydantic", "urllib3"} & pruned_modules()


def locked_versions() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, equals, version = line.partition("==")
            assert equals, f"{LOCK.name}: {line!r} pins no exact version"
            pins[canonicalize_name(name)] = version
    return pins


def runtime_closure(name: str = "gha-scaleset") -> dict[str, str]:
    """Every distribution the package needs at run time (its dependencies, their extras,
    theirs, ...), with the version installed here."""
    seen: dict[str, str] = {}
    pending = [Requirement(name)]
    while pending:
        requirement = pending.pop()
        key = canonicalize_name(requirement.name)
        if key in seen:
            continue
        dist = importlib.metadata.distribution(requirement.name)
        seen[key] = dist.version
        for text in dist.requires or ():
            needed = Requirement(text)
            extras = requirement.extras or {""}
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                pending.append(needed)
    del seen[canonicalize_name(name)]
    return seen


def test_the_lock_pins_every_runtime_dependency_at_the_version_installed() -> None:
    # CI installs under the lock (README's install command): a dependency added without
    # `.ci/lock`, or an environment resolved without it, fails here.
    locked = locked_versions()
    assert {name: locked.get(name) for name in runtime_closure()} == runtime_closure()


def test_the_build_stage_installs_under_the_lock(tmp_path: Path) -> None:
    stage = stage_named(dockerfile_stages(ROOT / "Dockerfile"), "builder")
    copy_build_stage(stage, context=ROOT, root=tmp_path)
    # PIP_CONSTRAINT for the install; for the build backend's isolated environment,
    # PIP_CONSTRAINT up to pip 26.1 and PIP_BUILD_CONSTRAINT from 26.2 on.
    for variable in ("PIP_CONSTRAINT", "PIP_BUILD_CONSTRAINT"):
        constraint = stage_env(stage)[variable]
        assert (tmp_path / constraint.lstrip("/")).read_bytes() == LOCK.read_bytes(), variable
    assert "hatchling" in locked_versions()


def test_the_final_stage_removes_the_bases_packaging_tools_and_fails_if_any_remain() -> None:
    final = dockerfile_stages(ROOT / "Dockerfile")[-1]
    runs = [i for i, line in enumerate(final) if line.upper().startswith("RUN ")]
    copied = max(i for i, line in enumerate(final) if line.startswith("COPY --from=builder"))
    cleanup = [i for i in runs if "pip uninstall" in final[i]]
    assert cleanup and cleanup[0] > copied, "the check must see the copied environment too"
    text = final[cleanup[0]]
    for tool in ("pip", "setuptools", "ensurepip"):
        assert re.search(rf"-name '?{tool}\b", text), tool
    assert "exit 1" in text
