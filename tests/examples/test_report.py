"""The report computed from trace records: each figure by its stated definition."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from simulation.report import (
    Report,
    build_report,
    format_comparison,
    format_report,
    percentile,
    write_json,
)
from simulation.trace import (
    WRITE_KINDS,
    ApiTraffic,
    JobTrace,
    RunnerTrace,
    Sample,
    Trace,
    count_traffic,
    write_kind,
)


def _trace(
    *,
    jobs: tuple[JobTrace, ...] = (),
    runners: tuple[RunnerTrace, ...] = (),
    samples: tuple[Sample, ...] = (),
    api: ApiTraffic | None = None,
    final_replicas: int = 0,
    final_runners: int = 0,
    min_runners: int = 0,
) -> Trace:
    return Trace(
        label="test",
        seed=1,
        min_runners=min_runners,
        max_runners=10,
        elapsed=10.0,
        jobs=jobs,
        runners=runners,
        samples=samples,
        api=api or ApiTraffic(),
        final_replicas=final_replicas,
        final_runners=final_runners,
    )


def _job(name: str, runner: str | None, start: float | None, end: float | None) -> JobTrace:
    return JobTrace(name=name, queued_at=0.0, started_at=start, completed_at=end, runner=runner)


def test_a_registered_runner_deleted_without_a_job_is_wasted_and_others_are_not() -> None:
    trace = _trace(
        jobs=(_job("j1", "busy", 1.0, 2.0),),
        runners=(
            RunnerTrace(name="busy", created_at=0.0, registered_at=0.5, deleted_at=3.0),
            RunnerTrace(name="idle-deleted", created_at=0.0, registered_at=0.5, deleted_at=3.0),
            RunnerTrace(name="never-registered", created_at=0.0, deleted_at=0.2),
            RunnerTrace(name="idle-alive", created_at=0.0, registered_at=0.5),
        ),
    )

    report = build_report(trace)

    assert report.wasted_runners == 1
    assert report.runners_created == 4
    assert report.runners_registered == 3


@pytest.mark.parametrize(
    ("deleted_at", "completed_at", "busy"),
    [
        pytest.param(1.5, 2.0, True, id="deleted-mid-job"),
        pytest.param(1.5, None, True, id="deleted-and-the-job-never-completed"),
        pytest.param(2.0, 2.0, False, id="deleted-at-completion"),
        pytest.param(3.0, 2.0, False, id="deleted-after-completion"),
        pytest.param(0.5, 2.0, False, id="deleted-before-the-job-started"),
    ],
)
def test_a_runner_deleted_while_its_job_runs_is_a_busy_deletion(
    deleted_at: float, completed_at: float | None, busy: bool
) -> None:
    trace = _trace(
        jobs=(_job("j1", "r1", 1.0, completed_at),),
        runners=(RunnerTrace(name="r1", created_at=0.0, registered_at=0.5, deleted_at=deleted_at),),
    )

    report = build_report(trace)

    assert report.busy_runner_deletions == (1 if busy else 0)
    assert report.busy_runner_names == (("r1",) if busy else ())
    assert report.ok is (not busy and completed_at is not None)


@pytest.mark.parametrize(
    ("deleted_at", "busy"),
    [
        pytest.param(1.5, True, id="deleted-before-the-failure"),
        pytest.param(2.5, False, id="deleted-after-the-failure"),
    ],
)
def test_a_job_that_failed_ends_at_its_failure_for_busy_deletions(
    deleted_at: float, busy: bool
) -> None:
    failed = JobTrace(
        name="j1", queued_at=0.0, started_at=1.0, ended_at=2.0, result="failed", runner="r1"
    )
    trace = _trace(
        jobs=(failed,),
        runners=(RunnerTrace(name="r1", created_at=0.0, registered_at=0.5, deleted_at=deleted_at),),
    )

    assert build_report(trace).busy_runner_deletions == (1 if busy else 0)


def test_jobs_that_never_completed_are_lost_and_the_run_is_not_ok() -> None:
    report = build_report(_trace(jobs=(_job("j1", None, None, None), _job("j2", "r", 1.0, 2.0))))

    assert (report.jobs_queued, report.jobs_completed, report.jobs_lost) == (2, 1, 1)
    assert not report.ok
    assert "FAILED" in format_report(report)
    # The soak prints the report under its own verdict (its invariants): no second one.
    header = format_report(report, verdict=False).splitlines()[0]
    assert "FAILED" not in header and "OK" not in header and "seed" in header


def test_job_wait_percentiles_use_nearest_rank_over_started_jobs() -> None:
    started = [
        JobTrace(name=f"j{i}", queued_at=10.0, started_at=10.0 + i, completed_at=30.0, runner="r")
        for i in range(1, 21)
    ]
    jobs = (*started, _job("never-started", None, None, None))

    report = build_report(_trace(jobs=jobs))

    assert (report.wait_p50, report.wait_p95, report.wait_max) == (10.0, 19.0, 20.0)
    assert percentile([], 50) is None
    assert percentile([4.0], 95) == 4.0


def test_peaks_come_from_the_samples_and_api_figures_are_per_completed_job() -> None:
    samples = (
        Sample(at=0.0, assigned_jobs=2, replicas=2, patch_id=1, marker=0, pending=2),
        Sample(at=1.0, assigned_jobs=3, replicas=3, patch_id=2, marker=0, running=2, deleting=2),
    )
    verbs = ["get", "list", "watch", "patch", "create", "create", "delete", "patch"]
    requests = [(verb, "ephemeralrunners") for verb in verbs] + [("create", "events")]
    api = count_traffic(requests, refused_writes=2)  # e.g. two 409s among the writes
    jobs = (_job("j1", "a", 1.0, 2.0), _job("j2", "b", 1.0, 2.0))

    report = build_report(_trace(jobs=jobs, samples=samples, api=api))

    assert (report.peak_runners, report.peak_demand) == (4, 3)
    assert (report.api_requests, report.api_writes) == (9, 6)
    assert (report.requests_per_job, report.writes_per_job) == (4.5, 3.0)
    assert (report.refused_writes, report.applied_writes_per_job) == (2, 2.0)
    assert "6 writes (2 refused)" in format_report(report)
    assert report.writes_by_resource == (("ephemeralrunners", 5), ("events", 1))


@pytest.mark.parametrize(
    ("final_replicas", "final_runners", "back"),
    [
        pytest.param(1, 1, True, id="replicas-and-runners-at-min"),
        pytest.param(1, 2, False, id="a-runner-left-over"),
        pytest.param(2, 1, False, id="replicas-above-min"),
    ],
)
def test_back_at_min_needs_both_the_replicas_and_the_runners_at_min(
    final_replicas: int, final_runners: int, back: bool
) -> None:
    report = build_report(
        _trace(min_runners=1, final_replicas=final_replicas, final_runners=final_runners)
    )

    assert report.back_at_min is back


def test_the_json_report_holds_the_same_figures(tmp_path: Path) -> None:
    report = build_report(_trace(jobs=(_job("j1", "r", 1.0, 2.0),)))
    path = tmp_path / "report.json"

    write_json([report], str(path))

    data = json.loads(path.read_text())
    assert data["jobs_completed"] == 1
    assert data["ok"] is True
    assert data["wait_p95"] == 1.0


def test_the_comparison_prints_both_rows_and_the_baseline_over_ours_ratios() -> None:
    ours = build_report(
        _trace(jobs=(_job("j1", "r", 1.0, 2.0),), api=count_traffic([("patch", "x")] * 4))
    )
    base = build_report(
        _trace(
            jobs=(_job("j1", "r", 2.0, 3.0),),
            runners=(RunnerTrace(name="w", created_at=0, registered_at=1, deleted_at=2),),
            api=count_traffic([("patch", "x")] * 6),
        )
    )

    text = format_comparison([ours], [base])

    wasted, wait, writes = text.splitlines()[1:4]
    assert wasted.endswith("inf (ours 0)")  # 1 against 0
    assert wait.split()[-1] == "2.00x"
    assert writes.split()[-1] == "1.50x"


def test_with_several_runs_the_comparison_uses_each_rows_medians() -> None:
    def wasted(count: int) -> Report:
        runners = tuple(
            RunnerTrace(name=f"w{i}", created_at=0, registered_at=1, deleted_at=2)
            for i in range(count)
        )
        return build_report(_trace(jobs=(_job("j1", "r", 1.0, 2.0),), runners=runners))

    text = format_comparison([wasted(1), wasted(1), wasted(9)], [wasted(2), wasted(4), wasted(3)])

    assert text.splitlines()[1].split()[-3:] == ["1", "3", "3.00x"]


def test_a_deletion_in_the_request_log_that_no_runner_record_shows_fails_the_run() -> None:
    runners = (
        RunnerTrace(name="seen", created_at=0, registered_at=1, deleted_at=3),
        RunnerTrace(name="unseen", created_at=0, registered_at=1),
    )
    jobs = (_job("j1", "seen", 1.0, 2.0), _job("j2", "unseen", 1.0, 2.0))
    trace = replace(
        _trace(jobs=jobs, runners=runners), deleted_in_log=frozenset({"seen", "unseen"})
    )

    report = build_report(trace)

    assert (report.runner_deletions, report.unseen_deletions) == (2, 1)
    assert not report.ok
    assert "1 UNSEEN" in format_report(report)


@pytest.mark.parametrize(
    ("verb", "resource", "subresource", "body", "kind"),
    [
        pytest.param("create", "ephemeralrunners", None, {}, "runner create", id="runner-create"),
        pytest.param("delete", "ephemeralrunners", None, {}, "runner delete", id="runner-delete"),
        pytest.param(
            "patch",
            "ephemeralrunnersets",
            "status",
            {"status": {"finishedRunnerCleanupPatchID": 4, "currentReplicas": 1}},
            "marker",
            id="marker-with-counts",
        ),
        pytest.param(
            "patch",
            "ephemeralrunnersets",
            "status",
            {"status": {"currentReplicas": 1}},
            "set status",
            id="counts",
        ),
        pytest.param("patch", "events", None, {"count": 2}, "events", id="event-count"),
        pytest.param(
            "patch",
            "ephemeralrunnersets",
            None,
            {"spec": {"replicas": 3, "patchID": 7}},
            "listener patches",
            id="listener-spec",
        ),
        pytest.param(
            "patch",
            "ephemeralrunners",
            "status",
            {"status": {"jobRequestId": 3, "jobId": "j"}},
            "listener patches",
            id="listener-job-info",
        ),
        pytest.param(
            "patch",
            "ephemeralrunnersets",
            None,
            {"metadata": {"finalizers": ["f"]}},
            "finalizers",
            id="finalizer",
        ),
        pytest.param(
            "patch",
            "autoscalingrunnersets",
            None,
            {"metadata": {"finalizers": ["f"], "resourceVersion": "3"}},
            "finalizers",
            id="scale-set-finalizer",
        ),
        pytest.param(
            "patch",
            "autoscalingrunnersets",
            "status",
            {"status": {"phase": "Running"}},
            "scale set status",
            id="scale-set-status",
        ),
        pytest.param(
            "create", "ephemeralrunnersets", None, {"spec": {"replicas": 0}}, "other", id="set"
        ),
        pytest.param("patch", "ephemeralrunnersets", None, {}, "other", id="listener-check"),
        pytest.param("update", "leases", None, {}, "leader election", id="lease"),
        pytest.param("create", "pods", None, {}, "runner controller", id="pod"),
        pytest.param(
            "patch",
            "ephemeralrunners",
            "status",
            {"status": {"phase": "Running"}},
            "runner controller",
            id="runner-phase",
        ),
        pytest.param(
            "patch",
            "ephemeralrunners",
            "status",
            [
                {"op": "test", "path": "/status/phase", "value": "Pending"},
                {"op": "add", "path": "/status/jobId", "value": "job-1"},
                {"op": "add", "path": "/status/phase", "value": "Running"},
            ],
            "listener patches",
            id="runner-job-json-patch",
        ),
        pytest.param("get", "ephemeralrunners", None, {}, None, id="a-read-is-no-write"),
    ],
)
def test_each_write_is_counted_for_what_it_was_for(
    verb: str, resource: str, subresource: str | None, body: Any, kind: str | None
) -> None:
    assert write_kind(verb, resource, subresource, body) == kind
    traffic = count_traffic([(verb, resource)], write_kinds=[kind])
    assert traffic.writes_by_kind == (((kind, 1),) if kind else ())


def test_the_report_prints_each_kind_of_write_per_job_with_why_it_is_needed() -> None:
    requests = [("create", "ephemeralrunners")] * 2 + [("patch", "ephemeralrunnersets")] * 8
    kinds = ["runner create"] * 2 + ["listener patches"] * 7 + ["marker"]
    jobs = (_job("j1", "a", 1.0, 2.0), _job("j2", "b", 1.0, 2.0))
    report = build_report(_trace(jobs=jobs, api=count_traffic(requests, write_kinds=kinds)))

    lines = format_report(report).splitlines()

    start = lines.index("writes for      (count, per job: why)")
    rows = [line.split(None, 3) for line in lines[start + 1 : start + 4]]
    assert [row[:3] for row in rows] == [
        ["runner", "create", "2"],
        ["listener", "patches", "7"],
        ["marker", "1", "0.50"],
    ]
    assert lines[start + 1].split()[3:5] == ["1.00", "one"], "per job, then why"
    assert all(
        WRITE_KINDS[kind] in lines[start + 1 + i] for i, kind in enumerate(dict.fromkeys(kinds))
    )


def test_every_kind_of_write_says_why_it_is_needed() -> None:
    assert all(why.strip() for why in WRITE_KINDS.values())
    assert {write_kind("patch", r, s, {}) for r, s in (("x", None), ("leases", None))} <= set(
        WRITE_KINDS
    )
