"""The listener's Prometheus metrics, with ARC's names."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TypedDict

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ghalistener.actions.types import (
    JobCompleted,
    JobStarted,
    RunnerID,
    RunnerRequestId,
    Statistics,
)
from ghalistener.metric_selection import parse_metrics
from ghalistener.metrics import (
    COUNTED_JOBS_LIMIT,
    ListenerMetrics,
    ScaleSetLabels,
    workflow_ref_labels,
)


class JobFields(TypedDict):
    """The fields the job messages of these tests share."""

    runner_request_id: RunnerRequestId
    owner_name: str
    repository_name: str
    job_display_name: str
    event_name: str
    scale_set_assign_time: datetime
    runner_assign_time: datetime
    finish_time: datetime


def job_base() -> JobFields:
    assign = datetime(2026, 1, 1, tzinfo=UTC)
    return {
        "runner_request_id": RunnerRequestId(1),
        "owner_name": "octo",
        "repository_name": "app",
        "job_display_name": "build",
        "event_name": "push",
        "scale_set_assign_time": assign,
        "runner_assign_time": assign + timedelta(seconds=4),
        "finish_time": assign + timedelta(seconds=64),
    }


def samples(metrics: ListenerMetrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


SCALE_SET = frozenset(
    {
        "name": "runners",
        "namespace": "arc",
        "repository": "",
        "organization": "octo",
        "enterprise": "",
    }.items()
)


def test_the_gauges_follow_every_statistics_and_leave_out_unselected_series() -> None:
    selection = parse_metrics({"gauges": {"gha_assigned_jobs": {}}})
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc"), selection)
    for assigned, running in ((3, 2), (7, 1), (0, 0)):
        metrics.publish_statistics(
            Statistics(total_assigned_jobs=assigned, total_running_jobs=running)
        )
        metrics.publish_desired_runners(assigned)
        assert samples(metrics) == {("gha_assigned_jobs", frozenset()): assigned}


def test_metrics_use_arc_names_and_labels() -> None:
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc", organization="octo"))
    metrics.publish_static(min_runners=1, max_runners=9)
    metrics.publish_statistics(
        Statistics(
            total_available_jobs=5,
            total_acquired_jobs=4,
            total_assigned_jobs=3,
            total_running_jobs=2,
            total_registered_runners=6,
            total_busy_runners=2,
            total_idle_runners=4,
        )
    )
    metrics.publish_desired_runners(4)
    started = JobStarted(runner_id=RunnerID(1), runner_name="r1", **job_base())
    metrics.publish_job_started(started, message_id=1)
    metrics.publish_job_completed(JobCompleted(result="succeeded", **job_base()), message_id=2)
    found = samples(metrics)
    expected_gauges = {
        "gha_min_runners": 1,
        "gha_max_runners": 9,
        "gha_available_jobs": 5,
        "gha_acquired_jobs": 4,
        "gha_assigned_jobs": 3,
        "gha_running_jobs": 2,
        "gha_registered_runners": 6,
        "gha_busy_runners": 2,
        "gha_idle_runners": 4,
        "gha_desired_runners": 4,
    }
    for name, value in expected_gauges.items():
        assert found[(name, SCALE_SET)] == value, name
    job = {
        "repository": "app",
        "organization": "octo",
        "enterprise": "",
        "job_name": "build",
        "event_name": "push",
    }
    assert found[("gha_started_jobs_total", frozenset(job.items()))] == 1
    done = frozenset({**job, "job_result": "succeeded"}.items())
    assert found[("gha_completed_jobs_total", done)] == 1
    assert found[("gha_job_startup_duration_seconds_sum", frozenset(job.items()))] == 4
    assert found[("gha_job_execution_duration_seconds_sum", done)] == 60


def test_a_job_without_a_finish_time_is_counted_but_not_timed() -> None:
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc"))
    unfinished = replace(JobCompleted(result="failed", **job_base()), finish_time=None)
    metrics.publish_job_completed(unfinished, message_id=1)
    names = {name for name, _ in samples(metrics)}
    assert "gha_completed_jobs_total" in names
    assert "gha_job_execution_duration_seconds_count" not in names


def test_a_job_no_runner_was_assigned_is_not_counted_as_completed() -> None:
    # ARC's rule: a job canceled before it reached a runner ends with a JobCompleted
    # that has no runnerAssignTime; it is no completed job of this scale set's runners.
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc"))
    queued = JobCompleted(
        runner_request_id=RunnerRequestId(1), result="canceled", runner_assign_time=None
    )
    metrics.publish_job_completed(queued, message_id=1)
    names = {name for name, _ in samples(metrics)}
    assert "gha_completed_jobs_total" not in names
    assert "gha_job_execution_duration_seconds_count" not in names
    ran = JobCompleted(result="canceled", **job_base())
    metrics.publish_job_completed(ran, message_id=2)
    totals = [v for (name, _), v in samples(metrics).items() if name == "gha_completed_jobs_total"]
    assert totals == [1]


def test_a_redelivered_message_does_not_count_its_jobs_twice() -> None:
    # The listener acks last, so a failure mid-message redelivers it; the counters and
    # histograms used to count its jobs again.
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc", organization="octo"))
    started = JobStarted(runner_id=RunnerID(1), runner_name="r1", **job_base())
    done = JobCompleted(result="succeeded", **job_base())
    for _ in range(2):  # message 5 delivered twice
        metrics.publish_job_started(started, message_id=5)
        metrics.publish_job_completed(done, message_id=5)
    found = samples(metrics)
    job = frozenset(
        {
            "repository": "app",
            "organization": "octo",
            "enterprise": "",
            "job_name": "build",
            "event_name": "push",
        }.items()
    )
    result = frozenset({*job, ("job_result", "succeeded")})
    assert found[("gha_started_jobs_total", job)] == 1
    assert found[("gha_completed_jobs_total", result)] == 1
    assert found[("gha_job_startup_duration_seconds_count", job)] == 1
    assert found[("gha_job_execution_duration_seconds_count", result)] == 1
    # The same request in another message is another event (e.g. a job taken back
    # and assigned again): it counts.
    metrics.publish_job_completed(done, message_id=6)
    assert samples(metrics)[("gha_completed_jobs_total", result)] == 2


def test_the_memory_of_counted_jobs_is_bounded() -> None:
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc", organization="octo"))
    done = JobCompleted(result="succeeded", **job_base())
    for message_id in range(COUNTED_JOBS_LIMIT + 1):
        metrics.publish_job_completed(done, message_id=message_id)
    metrics.publish_job_completed(done, message_id=0)  # forgotten: counted again
    metrics.publish_job_completed(done, message_id=COUNTED_JOBS_LIMIT)  # remembered
    totals = [v for (name, _), v in samples(metrics).items() if name == "gha_completed_jobs_total"]
    assert totals == [COUNTED_JOBS_LIMIT + 2]


def test_a_metrics_block_exports_only_its_series_labels_and_buckets() -> None:
    selection = parse_metrics(
        {
            "counters": {
                "gha_completed_jobs_total": {
                    "labels": ["job_workflow_name", "job_workflow_target", "job_result"]
                }
            },
            "gauges": {"gha_assigned_jobs": {"labels": ["namespace"]}, "gha_max_runners": {}},
            "histograms": {
                "gha_job_execution_duration_seconds": {
                    "labels": ["job_workflow_ref", "name"],
                    "buckets": [30, 120],
                }
            },
        }
    )
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc"), selection)
    metrics.publish_static(min_runners=1, max_runners=9)
    metrics.publish_statistics(Statistics(total_assigned_jobs=3, total_running_jobs=2))
    metrics.publish_desired_runners(4)
    ref = "octo/app/.github/workflows/ci.yaml@refs/tags/v1.2"
    started = JobStarted(runner_id=RunnerID(1), runner_name="r", job_workflow_ref=ref, **job_base())
    metrics.publish_job_started(started, message_id=1)
    done = JobCompleted(result="succeeded", job_workflow_ref=ref, **job_base())
    metrics.publish_job_completed(done, message_id=2)

    completed = frozenset(
        {
            ("job_workflow_name", "ci"),
            ("job_workflow_target", "tags/v1.2"),
            ("job_result", "succeeded"),
        }
    )
    # "name" is a scale-set label: a job series carries it empty, as in ARC.
    timed = {("job_workflow_ref", ref), ("name", "")}
    exported = {key: v for key, v in samples(metrics).items() if not key[0].endswith("_created")}
    assert exported == {
        ("gha_assigned_jobs", frozenset({("namespace", "arc")})): 3,
        ("gha_max_runners", frozenset()): 9,
        ("gha_completed_jobs_total", completed): 1,
        ("gha_job_execution_duration_seconds_bucket", frozenset({*timed, ("le", "30.0")})): 0,
        ("gha_job_execution_duration_seconds_bucket", frozenset({*timed, ("le", "120.0")})): 1,
        ("gha_job_execution_duration_seconds_bucket", frozenset({*timed, ("le", "+Inf")})): 1,
        ("gha_job_execution_duration_seconds_count", frozenset(timed)): 1,
        ("gha_job_execution_duration_seconds_sum", frozenset(timed)): 60,
    }


def test_an_empty_metrics_block_exports_nothing() -> None:
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc"), parse_metrics({}))
    metrics.publish_static(min_runners=1, max_runners=9)
    metrics.publish_job_completed(JobCompleted(result="succeeded", **job_base()), message_id=2)
    assert samples(metrics) == {}


@pytest.mark.parametrize(
    ("ref", "name", "target"),
    [
        # ARC's cases (cmd/ghalistener/metrics/metrics_integration_test.go).
        ("actions/runner/.github/workflows/build.yml@refs/heads/main", "build", "heads/main"),
        (
            "myorg/myrepo/.github/workflows/ci-cd-pipeline.yml@refs/heads/feature/new-metrics",
            "ci-cd-pipeline",
            "heads/feature/new-metrics",
        ),
        (
            "actions/runner/.github/workflows/pr-checks.yml@refs/pull/123/merge",
            "pr-checks",
            "pull/123",
        ),
        ("actions/runner/.github/workflows/release.yml@refs/tags/v1.2.3", "release", "tags/v1.2.3"),
        ("o/r/.github/workflows/deploy.yaml@0123abcd", "deploy", ""),
        ("o/r/.github/workflows/x.yml@refs/pull/7", "x", ""),
        ("o/r/.github/workflows/x.yml", "", ""),
        ("a@b@c", "", ""),
        ("", "", ""),
    ],
)
def test_the_workflow_labels_are_read_from_the_ref_as_arc_reads_them(
    ref: str, name: str, target: str
) -> None:
    assert workflow_ref_labels(ref) == (name, target)
