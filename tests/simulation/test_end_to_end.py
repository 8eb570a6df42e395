"""The whole system, end to end: the real ``ghalistener run`` and ``ersctl reconcile``
subprocesses against the embedded API server and the GitHub simulator's HTTP server,
with the runner agent playing the cluster. Short fixed-seed workloads.

What the reports say is computed from the simulator's event log (job start and
completion, on which runner) and the API server (runner creation and the first sight
of each deletion), so a controller that deleted a busy runner, lost a job, created a
runner nobody used, or did not scale back down fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
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


def test_a_short_run_completes_every_job_wastes_no_runner_and_returns_to_min(
    tmp_path: Path,
) -> None:
    report = _run(_config(faults=False, window=5.0), tmp_path)

    assert report.jobs_queued >= 8
    assert report.jobs_completed == report.jobs_queued, report
    assert report.busy_runner_deletions == 0, report.busy_runner_names
    assert report.wasted_runners == 0, report.wasted_runner_names
    assert report.runners_created >= report.jobs_completed  # one job per runner
    assert report.back_at_min, report
    assert report.api_writes > 0


def test_with_faults_no_job_is_lost_and_no_busy_runner_is_deleted(tmp_path: Path) -> None:
    report = _run(_config(faults=True, window=8.0), tmp_path)

    assert report.jobs_queued >= 8
    assert report.jobs_lost == 0, report
    assert report.busy_runner_deletions == 0, report.busy_runner_names
    # Both restarts happened: each program's log shows a second start.
    for log in ("ghalistener.log", "controller.log"):
        assert "--- start 2:" in (tmp_path / log).read_text()
