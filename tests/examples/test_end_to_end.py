"""The whole system, end to end: the real ``ghalistener run`` and ``ersctl reconcile``
subprocesses against the embedded API server and the GitHub simulator's HTTP server,
with the runner agent playing the cluster. Short fixed-seed workloads.

What the reports say is computed from the simulator's event log (job start and
completion, on which runner) and the API server (runner creation and the first sight
of each deletion), so a controller that deleted a busy runner, lost a job, created a
runner nobody used, or did not scale back down fails here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import simulate
from simulation.agent import AgentTiming
from simulation.live import LiveLine
from simulation.orchestrate import SimulationConfig, run_simulation
from simulation.report import Report, build_report
from simulation.workload import Burst, Durations, WorkloadSpec

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def _config(*, faults: bool, window: float) -> SimulationConfig:
    workload = WorkloadSpec(
        seed=11,
        rate=1.0,
        window=window,
        bursts=(Burst(at=1.0, count=5),),
        durations=Durations(median=1.0, sigma=0.4, shortest=0.3, longest=2.0),
    )
    return SimulationConfig(
        workload=workload,
        timing=AgentTiming(registration_delay=0.2, startup_delay=0.2),
        label="test",
        min_runners=0,
        max_runners=20,
        faults=faults,
        long_poll=0.5,
        drain_timeout=25.0,
    )


def _run(config: SimulationConfig, workdir: Path) -> Report:
    return build_report(run_simulation(config, workdir=workdir, live=LiveLine(enabled=False)))


@pytest.mark.parametrize(
    ("autoscaling", "runner_controller"),
    [
        pytest.param(True, False, id="an-ars-and-the-agent-registers-runners"),
        # The ARS with the runner controller runs in the faults test below and in the
        # 100-job soak (tests/examples/test_soak.py: no runner wasted beyond 1%).
        pytest.param(False, False, id="a-set-and-a-listener-by-hand"),
    ],
)
def test_a_short_run_completes_every_job_wastes_no_runner_and_returns_to_min(
    tmp_path: Path, autoscaling: bool, runner_controller: bool
) -> None:
    config = replace(
        _config(faults=False, window=5.0),
        runner_controller=runner_controller,
        autoscaling=autoscaling,
    )

    report = _run(config, tmp_path)

    if autoscaling:  # the controller registered the scale set and made set and listener
        assert report.apply_to_first_job is not None and report.apply_to_first_job > 0
        assert len(list((tmp_path / "listener-pods").glob("*.log"))) == 1

    assert report.jobs_queued >= 8
    assert report.jobs_completed == report.jobs_queued, report
    assert report.busy_runner_deletions == 0, report.busy_runner_names
    assert report.unseen_deletions == 0, report
    assert report.wasted_runners == 0, report.wasted_runner_names
    assert report.runners_created >= report.jobs_completed  # one job per runner
    assert report.back_at_min, report
    assert report.api_writes > 0


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param([], id="an-ars-and-the-agent-registers-runners"),
        pytest.param(["--runner-controller"], id="an-ars-and-ersctl-runner-controller-runs-pods"),
        pytest.param(["--without-ars"], id="a-set-and-a-listener-by-hand"),
    ],
)
def test_simulate_faults_loses_no_job_and_deletes_no_busy_runner(
    tmp_path: Path, mode: list[str]
) -> None:
    report_path, plot_path = tmp_path / "report.json", tmp_path / "timeline.svg"
    args = [
        "--faults", "--seed", "11", "--rate", "1.0", "--window", "8", "--burst", "1:5",
        "--job-median", "1.0", "--job-max", "2.0", "--registration-delay", "0.2",
        "--startup-delay", "0.2", "--long-poll", "0.5", "--drain-timeout", "25",
        "--quiet", "--workdir", str(tmp_path), "--json", str(report_path),
        "--plot", str(plot_path), *mode,
    ]  # fmt: skip

    simulate.main(args)

    report = json.loads(report_path.read_text())
    assert report["jobs_queued"] >= 8
    assert report["jobs_lost"] == 0, report
    assert report["back_at_min"], report
    assert report["busy_runner_deletions"] == 0, report["busy_runner_names"]
    assert report["unseen_deletions"] == 0, report
    assert len(report["marks"]) >= 7  # every fault of the schedule fired
    # Both programs really restarted: the controller's log shows a second start, and so
    # does the listener's (the program's own, or its Pod's, made again by the listener
    # controller after the kill).
    assert "--- start 2:" in (tmp_path / "controller.log").read_text()
    if "--without-ars" in mode:
        assert "--- start 2:" in (tmp_path / "ghalistener.log").read_text()
        assert report["teardown_left"] is None
    else:
        (pod_log,) = (tmp_path / "listener-pods").glob("*.log")
        # Started, killed and made again by the listener controller; the template edit
        # did not restart it (the listener does not depend on the runner template).
        assert pod_log.read_text().count("--- start 1:") == 2
        # The template edited mid-run touched no busy runner (above), and deleting the
        # AutoscalingRunnerSet at the end left nothing in the cluster or at GitHub.
        assert any(mark.startswith("template-edit@") for mark in report["marks"])
        assert report["teardown_left"] == [], report["teardown_left"]
    assert plot_path.read_text().startswith("<svg")
