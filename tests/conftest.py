"""Fixtures shared by every test directory: the Kubernetes API a test runs against
(``kube``: the embedded server, or the cluster ``GHA_SCALESET_TEST_KUBECONFIG`` names; see
tests/kubeapi.py), the embedded server itself for tests that need its hooks
(``apiserver``), a client, the GitHub simulator (``sim``), and the project's wheel as
the image's build stage builds it (``wheel``, ``unpacked``)."""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import zipfile
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from kubernetes import client

from ersctl.kube import connect
from ersctl.testing.apiserver import ApiServer
from ghalistener.testing.model import GitHubSimulator
from tests.deploy.image import copy_build_stage, dockerfile_stages, stage_named
from tests.kubeapi import (
    CONTROLLERS_ENV,
    ENV,
    KubeApi,
    NamespaceLedger,
    cluster_runs_controllers,
    existing_cluster,
    install_crds,
)

# The simulation package under examples/ is imported as `simulation`, as the examples'
# scripts import it (python examples/simulate.py): by the example tests and by the
# deploy tests that run its listener kubelet, each of which also runs on its own.
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

# Hypothesis fails an example that takes over 200 ms by default: a timed assertion,
# which several workers on two cores trip for no fault of the code under test.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_configure(config: pytest.Config) -> None:
    """The programs the tests start get SIGINT at its default, as a terminal starts them.
    A suite started in the background of a script inherits SIGINT ignored (POSIX), and
    so would they: a Ctrl-C a test sends while one still imports its modules, before it
    installs its own handler, would be lost instead of ending it (exit 130), and the
    test would fail for the way the suite was started. A Python handler becomes the
    default in a program it starts; an ignored signal stays ignored."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    # Collection imports every test module and what they use: some 100,000 objects that
    # live as long as the worker. Collecting garbage while they are made, and in every
    # full collection of the run after, only walks them again (a second or two of CPU a
    # worker, times every worker). The programs do the same at start (ersctl.platform.cli).
    # A wrapper, so the collector comes back on wherever collection is skipped (xdist's
    # controller process) or fails.
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Spread the tests marked ``slow`` evenly through the run (order stable otherwise).

    pytest-xdist's work stealing hands each worker a contiguous range and lets an idle
    one take the tail of another's: spread out, every range holds a few long end-to-end
    runs, which overlap the many short tests; bunched at the front, one worker ran them
    all in a row while the others ran out of work.

    Against an existing cluster, skip the tests marked ``embedded_only``, and those
    marked ``needs_gc`` unless the cluster runs kube-controller-manager, naming why."""
    items[:] = _spread(items, lambda item: item.get_closest_marker("slow") is not None)
    if existing_cluster() is None:
        return
    for item in items:
        marker = item.get_closest_marker("embedded_only")
        if marker is not None:
            why = marker.args[0] if marker.args else "its hooks"
            item.add_marker(pytest.mark.skip(reason=f"needs the embedded API server: {why}"))
        marker = item.get_closest_marker("needs_gc")
        if marker is not None and not cluster_runs_controllers():
            why = marker.args[0] if marker.args else "garbage collection"
            item.add_marker(
                pytest.mark.skip(
                    reason=f"needs kube-controller-manager ({CONTROLLERS_ENV}=1): {why}"
                )
            )


def _spread(items: list[pytest.Item], marked: Callable[[pytest.Item], bool]) -> list[pytest.Item]:
    """``items`` with the ``marked`` ones placed at even intervals, each kind in order."""
    chosen = [item for item in items if marked(item)]
    rest = deque(item for item in items if not marked(item))
    if not chosen:
        return list(rest)
    step = len(items) / len(chosen)
    spread: list[pytest.Item] = []
    for index, item in enumerate(chosen):
        # The rest up to this one's slot, then it: slot i sits at i * step.
        while len(spread) < round(index * step) and rest:
            spread.append(rest.popleft())
        spread.append(item)
    return spread + list(rest)


@pytest.fixture(scope="session")
def cluster_kubeconfig() -> Path | None:
    """The existing cluster's kubeconfig (its CRDs brought up to date once), or None."""
    path = existing_cluster()
    if path is not None:
        with connect.api_client(str(path)) as api_client:
            install_crds(api_client)
    return path


@pytest.fixture(scope="session")
def namespace_ledger() -> Iterator[NamespaceLedger]:
    """The namespaces this test process made on the existing cluster; when the run
    ends, every one must be gone: the suite fails (an error at the teardown of this
    worker's last test) naming each one left and what is left in it."""
    ledger = NamespaceLedger()
    yield ledger
    left = ledger.left_behind()
    if left:
        pytest.fail(
            f"the run left {len(left)} namespace(s) on the cluster: " + "; ".join(left),
            pytrace=False,
        )


@pytest.fixture
def apiserver(request: pytest.FixtureRequest) -> Iterator[ApiServer]:
    """A started embedded :class:`ApiServer` (project CRDs loaded, GC on), stopped
    afterwards. Only for tests marked ``embedded_only`` when a cluster is given."""
    if existing_cluster() is not None and request.node.get_closest_marker("embedded_only") is None:
        pytest.fail(
            f"{request.node.nodeid} takes the embedded server with {ENV} set: mark it embedded_only"
        )
    with ApiServer() as server:
        yield server


@pytest.fixture
def kube(request: pytest.FixtureRequest, cluster_kubeconfig: Path | None) -> Iterator[KubeApi]:
    """The Kubernetes API of this test, with a fresh namespace (``kube.namespace``)."""
    if cluster_kubeconfig is None:
        target = KubeApi.for_embedded(request.getfixturevalue("apiserver"))
    else:
        ledger = request.getfixturevalue("namespace_ledger")
        target = KubeApi.for_cluster(cluster_kubeconfig, ledger=ledger)
    try:
        yield target
    finally:
        target.close(clean_up=cluster_kubeconfig is not None)


@pytest.fixture
def kube_client(kube: KubeApi) -> Iterator[client.ApiClient]:
    """A ``kubernetes.client.ApiClient`` configured for ``kube``."""
    with kube.api_client() as api_client:
        yield api_client


@pytest.fixture
def sim() -> Iterator[GitHubSimulator]:
    simulator = GitHubSimulator()
    try:
        yield simulator
    finally:
        simulator.close()


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built by pip from what the image's build stage holds."""
    build = tmp_path_factory.mktemp("image")
    stage = stage_named(dockerfile_stages(ROOT / "Dockerfile"), "builder")
    project = copy_build_stage(stage, context=ROOT, root=build / "stage")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--wheel-dir", str(build / "dist"), str(project)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    (path,) = (build / "dist").glob("*.whl")
    return path


@pytest.fixture(scope="session")
def unpacked(wheel: Path) -> Path:
    site = wheel.parent.parent / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site
