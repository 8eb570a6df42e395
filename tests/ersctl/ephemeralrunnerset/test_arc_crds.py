"""The controller under ARC's own CRDs, loaded into the embedded API server, against
the same scenarios under ours.

ARC 0.14.2's (no guard fields; ``status.currentReplicas`` required): the API server
prunes the marker, so the guard cannot work: ``ersctl reconcile`` refuses to start, and
a reconciler that runs anyway (the CRD replaced under a running controller) stops the
set rather than scale it up. ARC 0.15.1's, all four as ARC's chart installs them: they
carry the guard fields, so ``ersctl reconcile`` runs on them with the guard on, saying
in one WARNING each what their narrower schemas cost (the listener's restart backoff,
part of the ARS status).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ersctl import api
from ersctl.arcclient.errors import PrunedFieldsError
from ersctl.crds import load_crds
from ersctl.testing.apiserver import ApiServer
from tests.ersctl.crds.arc import arc_crds
from tests.ersctl.ephemeralrunnerset.github import FakeGitHub
from tests.ersctl.ephemeralrunnerset.harness import Cluster
from tests.kubeapi import KubeApi
from tests.polling import run_until

MISSING = (
    "ephemeralrunnersets.actions.github.com lacks spec.actionableRevision, "
    "status.appliedActionableRevision, status.finishedRunnerCleanupPatchID, status.phase"
)


ARCS_OWN_SERVER = pytest.mark.embedded_only("a server of its own serving ARC's CRDs")


def _serving(crds: list[dict[str, object]]) -> Iterator[ApiServer]:
    with ApiServer(crds=False) as server:
        for crd in crds:
            server.create_object("customresourcedefinitions", crd)
        yield server


@pytest.fixture
def arc_apiserver() -> Iterator[ApiServer]:
    """An embedded API server serving ARC 0.14's CRDs instead of ours."""
    yield from _serving(arc_crds())


@pytest.fixture
def arc_chart_apiserver(request: pytest.FixtureRequest) -> Iterator[ApiServer]:
    """An embedded API server serving ARC's four CRDs of the line ``request.param``,
    as ARC's Helm chart installs them."""
    yield from _serving(arc_crds(request.param, autoscaling=True))


def _harness(server: ApiServer, github: FakeGitHub) -> Iterator[Cluster]:
    kube = KubeApi.for_embedded(server)
    harness = Cluster(kube, github)
    try:
        yield harness
    finally:
        harness.close()
        kube.close(clean_up=False)


@pytest.fixture
def arc_cluster(arc_apiserver: ApiServer, github: FakeGitHub) -> Iterator[Cluster]:
    yield from _harness(arc_apiserver, github)


@pytest.fixture
def arc_chart_cluster(arc_chart_apiserver: ApiServer, github: FakeGitHub) -> Iterator[Cluster]:
    yield from _harness(arc_chart_apiserver, github)


def _reconcile_command(harness: Cluster, tmp_path: Path, *options: str) -> list[str]:
    """``ersctl reconcile`` with ``options``, ``{set}`` standing for the test's set."""
    kubeconfig = harness.kube.write_kubeconfig(tmp_path / "kubeconfig")
    options = tuple(o.replace("{set}", f"{harness.namespace}/runners") for o in options)
    return [
        sys.executable,
        "-m",
        "ersctl",
        "reconcile",
        "--kubeconfig",
        str(kubeconfig),
        "--no-leader-elect",
        "--metrics-addr",
        "0",
        *options,
    ]


def _the_one_line_of_exit_2(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


@ARCS_OWN_SERVER
@pytest.mark.parametrize("options", [(), ("--once", "{set}")], ids=["run", "once"])
def test_reconcile_refuses_to_start_under_arcs_crds_naming_the_fields_and_the_fix(
    arc_cluster: Cluster, tmp_path: Path, options: tuple[str, ...]
) -> None:
    arc_cluster.create_ers(replicas=1, patch_id=2)
    line = _the_one_line_of_exit_2(_reconcile_command(arc_cluster, tmp_path, *options))
    assert line.startswith("ersctl: the served CRDs drop what the guard writes")
    assert MISSING in line
    assert api.INSTALL_CRDS_COMMAND in line
    assert arc_cluster.runners() == [], "nothing was reconciled"


@ARCS_OWN_SERVER
@pytest.mark.parametrize("arc_chart_apiserver", ["0.14"], indirect=True)
def test_reconcile_refuses_arcs_0142_chart_crds_in_one_line(
    arc_chart_cluster: Cluster, tmp_path: Path
) -> None:
    command = _reconcile_command(arc_chart_cluster, tmp_path, "--listener-image", "img:1")
    assert MISSING in _the_one_line_of_exit_2(command)


@ARCS_OWN_SERVER
@pytest.mark.parametrize("arc_chart_apiserver", ["0.15"], indirect=True)
def test_reconcile_runs_on_arcs_0151_chart_crds_warning_once_per_narrower_schema(
    arc_chart_cluster: Cluster, tmp_path: Path
) -> None:
    arc_chart_cluster.create_ers(replicas=0, patch_id=0, finalizers=[])
    code, stderr = run_until(
        _reconcile_command(arc_chart_cluster, tmp_path, "--listener-image", "img:1"),
        lambda: api.ERS_FINALIZER in arc_chart_cluster.ers().finalizers,
        timeout=30,
        what="the set taken over",
    )
    assert code == 0, stderr
    warnings = [line for line in stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 2, warnings
    backoff, status = sorted(warnings, key=lambda w: api.ARS_CRD in w)
    assert f"{api.AL_CRD} drops status.listenerRestarts, status.lastListenerExitTime" in backoff
    assert f"{api.ARS_CRD} drops status.state, status.message" in status


@ARCS_OWN_SERVER
@pytest.mark.parametrize("arc_chart_apiserver", ["0.15"], indirect=True)
def test_under_arcs_0151_crds_the_cleanup_at_patch_2_suppresses_the_scale_up_at_patch_2(
    arc_chart_cluster: Cluster,
) -> None:
    _a_finished_runner_at_patch_2(arc_chart_cluster)

    assert arc_chart_cluster.reconcile().action == "cleanup-finished"
    assert arc_chart_cluster.ers().finished_runner_cleanup_patch_id == 2, "the marker is kept"
    (finished,) = arc_chart_cluster.runners()
    arc_chart_cluster.release_runner(finished.name)

    assert arc_chart_cluster.reconcile().action == "suppressed"
    assert arc_chart_cluster.runners() == []
    assert arc_chart_cluster.events("GuardFieldsPruned") == []


def test_reconcile_starts_under_our_crds(cluster: Cluster, tmp_path: Path) -> None:
    cluster.create_ers(replicas=0, patch_id=0)
    done = subprocess.run(
        _reconcile_command(cluster, tmp_path, "--once", "{set}"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _a_finished_runner_at_patch_2(cluster: Cluster) -> None:
    # Patch 2 counted a runner whose job has since finished: the gap its cleanup opens
    # is not new demand.
    cluster.create_ers(replicas=1, patch_id=2)
    cluster.add_runner(phase="Succeeded", patch_id=1, runner_id=1)


def test_under_our_crds_the_cleanup_at_patch_2_suppresses_the_scale_up_at_patch_2(
    cluster: Cluster,
) -> None:
    _a_finished_runner_at_patch_2(cluster)

    assert cluster.reconcile().action == "cleanup-finished"
    (finished,) = cluster.runners()
    cluster.release_runner(finished.name)

    assert cluster.reconcile().action == "suppressed"
    assert cluster.runners() == []


@ARCS_OWN_SERVER
def test_under_arcs_crds_a_pruned_marker_stops_the_set_with_a_warning_naming_the_crd(
    arc_cluster: Cluster,
) -> None:
    _a_finished_runner_at_patch_2(arc_cluster)

    for _ in range(2):
        with pytest.raises(PrunedFieldsError):
            arc_cluster.reconcile()

    (event, *_) = arc_cluster.events("GuardFieldsPruned")
    assert event["type"] == "Warning"
    assert (
        "ephemeralrunnersets.actions.github.com lacks status.finishedRunnerCleanupPatchID"
        in (event["message"])
    )
    assert [r.phase for r in arc_cluster.runners()] == ["Succeeded"], "no scale-up, no cleanup"


@pytest.mark.embedded_only("a server of its own serving a CRD without the applied mark")
def test_a_revision_write_the_crd_drops_stops_the_set(github: FakeGitHub) -> None:
    # Our CRD without status.appliedActionableRevision: the rollout's spec field is
    # kept, its applied mark is not, so the rebuild would repeat on every reconcile.
    ers_crd, er_crd, *_ = load_crds()
    status = ers_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    del status["properties"]["appliedActionableRevision"]
    with ApiServer(crds=False) as server:
        for crd in (ers_crd, er_crd):
            server.create_object("customresourcedefinitions", crd)
        kube = KubeApi.for_embedded(server)
        harness = Cluster(kube, github)
        try:
            harness.create_ers(replicas=1, patch_id=3, actionable_revision=1)
            with pytest.raises(
                PrunedFieldsError, match=r"lacks status\.appliedActionableRevision\)"
            ):
                harness.reconcile()
            assert harness.events("GuardFieldsPruned")
            assert harness.runners() == [], "no scale-up"
        finally:
            harness.close()
            kube.close(clean_up=False)


@ARCS_OWN_SERVER
def test_rollout_under_arcs_crds_is_exit_2_naming_the_dropped_field(
    arc_cluster: Cluster, tmp_path: Path
) -> None:
    arc_cluster.create_ers(replicas=0, patch_id=0)
    kubeconfig = arc_cluster.kube.write_kubeconfig(tmp_path / "kubeconfig")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ersctl",
            "rollout",
            f"{arc_cluster.namespace}/runners",
            "--kubeconfig",
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "ephemeralrunnersets.actions.github.com lacks spec.actionableRevision" in line
    assert done.stdout == "", "no 'actionableRevision 0 -> 1' for a write that did not take"


@pytest.mark.parametrize("crds", ["ours", pytest.param("arcs", marks=ARCS_OWN_SERVER)])
def test_a_status_write_on_a_set_without_status_carries_arcs_required_count(
    crds: str, request: pytest.FixtureRequest
) -> None:
    harness: Cluster = request.getfixturevalue("cluster" if crds == "ours" else "arc_cluster")
    harness.create_ers(replicas=0, patch_id=0)
    assert "status" not in (
        harness.kube.get_object(api.ERS_PLURAL, harness.namespace, "runners") or {}
    )

    harness.reconcile()  # the phase is set: the first status write on this set

    stored = harness.kube.get_object(api.ERS_PLURAL, harness.namespace, "runners") or {}
    assert stored["status"]["currentReplicas"] == 0
    assert harness.events("ReconcileFailed") == []


def test_finished_runners_of_a_set_without_status_are_cleaned_up(cluster: Cluster) -> None:
    # The marker is the first status write here; a 422 for the required count would
    # leave the finished runner forever.
    _a_finished_runner_at_patch_2(cluster)

    assert cluster.reconcile().action == "cleanup-finished"
    assert cluster.ers().finished_runner_cleanup_patch_id == 2
    assert [r.is_deleting for r in cluster.runners()] == [True]
