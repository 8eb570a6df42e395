"""README, "Run on Kubernetes", followed as written against the local cluster it offers
for trying it (``python examples/local_cluster.py``): its kubectl commands, in order,
from the README's own text (steps 2 to 4, then the deletion), the REPLACE_ME places
filled in as step 3 says, in the copy step 2 makes, jobs queued with the command the
local cluster prints. The steps run in a copy of the checkout's manifests, so the
checkout stays as it is; the README's own copy step is what keeps a user's checkout so
(the suite checks the shipped manifests)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import local_http
from tests.kubectl import KUBECTL, needs_kubectl
from tests.polling import eventually

pytestmark = [needs_kubectl, pytest.mark.slow, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Run on Kubernetes\n")
    # Up to its first subsection (or the next section): the steps and the paragraphs
    # after them, not the reference tables below.
    end = re.search(r"\n##+ ", text[start + 1 :])
    return text[start : start + 1 + end.start()] if end else text[start:]


def _blocks(section: str) -> list[list[str]]:
    """The lines of each ``sh`` block, comments and blank lines left out."""
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    return [
        [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()
         and not line.lstrip().startswith("#")]
        for block in blocks
    ]  # fmt: skip


def _deletions(section: str) -> list[str]:
    """The kubectl delete commands of the paragraph after the steps, as written there."""
    found = re.findall(r"`(kubectl[^`]*delete[^`]*)`", section)
    return [" ".join(command.split()) for command in found]


@dataclass
class LocalCluster:
    process: subprocess.Popen[str]
    kubeconfig: str
    github_url: str
    queue: str


@pytest.fixture
def local_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    (command,) = [line for line in _blocks(_section())[1] if line.startswith("python examples/")]
    process = subprocess.Popen(
        [sys.executable, *shlex.split(command)[1:]],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    printed = []
    for line in process.stdout:
        printed.append(line)
        if line.startswith("Ctrl-C stops it"):
            break
    fields = {
        line.split()[0]: line.split(None, 1)[1].strip() for line in printed[1:] if line[:2] == "  "
    }
    try:
        yield LocalCluster(
            process=process,
            kubeconfig=fields["kubeconfig"].removeprefix("export KUBECONFIG="),
            github_url=fields["GitHub"],
            queue=next(
                line.split("queue jobs", 1)[1].strip() for line in printed if "queue jobs" in line
            ),
        )
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 0, out
        assert out.strip().endswith("stopped"), out


def _copy_of_the_manifests(directory: Path) -> Path:
    shutil.copytree(ROOT / "examples" / "deploy", directory / "examples" / "deploy")
    shutil.copytree(ROOT / "ersctl" / "crds", directory / "ersctl" / "crds")
    return directory


def _fill_in(scale_set: Path, github_url: str) -> None:
    """Step 3's edit: the REPLACE_ME places of the scale set's files."""
    ars = scale_set / "autoscalingrunnerset.yaml"
    ars.write_text(
        ars.read_text().replace("githubConfigUrl: REPLACE_ME", f"githubConfigUrl: {github_url}")
    )
    secret = scale_set / "github-credentials-secret.yaml"
    secret.write_text(secret.read_text().replace('github_token: ""', 'github_token: "any-token"'))


def test_the_readme_steps_run_the_deployment_on_the_local_cluster(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    section = _section()
    steps = [line for line in _blocks(section)[0] if line.startswith(("kubectl ", "cp "))]
    (copy,) = [shlex.split(line) for line in steps if line.startswith("cp ")]
    assert copy[:3] == ["cp", "-r", "examples/deploy"], copy
    # Nothing is applied from the shipped manifests: only from the copy, edited.
    for path in (line.split(" -k ")[1].split()[0] for line in steps if " -k " in line):
        assert Path(path).parts[:2] == Path(copy[3]).parts[:2], path
    workdir = _copy_of_the_manifests(tmp_path / "clone")
    env = {**os.environ, "KUBECONFIG": local_cluster.kubeconfig}

    def kubectl(command: str) -> subprocess.CompletedProcess[str]:
        args = [str(KUBECTL), *shlex.split(command)[1:]]
        return subprocess.run(
            args, cwd=workdir, env=env, capture_output=True, text=True, timeout=90, check=False
        )

    *applied, watch = steps
    assert watch.endswith(" -w")
    for command in applied:
        if command.startswith("cp "):
            subprocess.run(shlex.split(command), cwd=workdir, check=True)
            _fill_in(workdir / copy[3] / "scale-set", local_cluster.github_url)
            continue
        done = kubectl(command)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
    watching = subprocess.Popen(
        [str(KUBECTL), *shlex.split(watch)[1:]],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        queued = subprocess.run(
            shlex.split(local_cluster.queue),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert queued.returncode == 0, queued.stderr
        assert watching.stdout is not None
        seen = []
        for line in watching.stdout:  # until a runner's Pod runs
            seen.append(line)
            if "-runner-" in line and "Running" in line:
                break
    finally:
        watching.terminate()
        watching.wait(timeout=10)
    assert any("-runner-" in line for line in seen), seen

    simulator = local_cluster.github_url.rsplit("/", 1)[0]

    def jobs_done() -> bool:
        jobs = local_http.get(f"{simulator}/_sim/state", timeout=5).json()["jobs"]
        return len(jobs) == 3 and all(job["state"] == "completed" for job in jobs)

    eventually(jobs_done, timeout=90, what="the three queued jobs completed")

    for command in _deletions(section):
        done = kubectl(command)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
    eventually(
        lambda: kubectl("kubectl get namespace arc-runners").returncode != 0,
        timeout=60,
        what="namespace arc-runners gone",
    )
