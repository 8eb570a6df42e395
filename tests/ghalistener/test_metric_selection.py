"""ARC's ``metrics`` block: which series, labels and buckets; one line for what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from ersctl.platform.errors import ConfigError
from ghalistener.metric_selection import (
    CATALOGUE,
    DEFAULT_BUCKETS,
    MetricsSelection,
    Selected,
    parse_metrics,
)


def test_no_block_selects_arcs_defaults() -> None:
    defaults = parse_metrics(None)
    assert defaults == MetricsSelection.defaults()
    assert set(defaults.series) == set(CATALOGUE)
    assert defaults.series["gha_assigned_jobs"].labels == (
        "enterprise",
        "organization",
        "repository",
        "name",
        "namespace",
    )
    # ARC leaves the workflow labels out of its defaults: they multiply the series.
    assert defaults.series["gha_completed_jobs_total"].labels == (
        "enterprise",
        "organization",
        "repository",
        "job_name",
        "event_name",
        "job_result",
    )
    assert defaults.series["gha_job_startup_duration_seconds"].buckets == DEFAULT_BUCKETS


def test_a_block_selects_exactly_what_it_lists() -> None:
    selection = parse_metrics(
        {
            "counters": {"gha_started_jobs_total": {"labels": ["job_workflow_name"]}},
            "gauges": {"gha_busy_runners": {"labels": None}},
            "histograms": {
                "gha_job_execution_duration_seconds": {
                    "labels": ["job_result"],
                    "buckets": [1, 2.5],
                },
                "gha_job_startup_duration_seconds": {"labels": [], "buckets": []},
            },
        }
    )
    assert selection.series == {
        "gha_started_jobs_total": Selected(labels=("job_workflow_name",)),
        "gha_busy_runners": Selected(labels=()),
        "gha_job_execution_duration_seconds": Selected(labels=("job_result",), buckets=(1.0, 2.5)),
        "gha_job_startup_duration_seconds": Selected(labels=(), buckets=DEFAULT_BUCKETS),
    }
    assert parse_metrics({}).series == {}
    assert parse_metrics({"counters": None, "gauges": {}}).series == {}


@pytest.mark.parametrize(
    ("block", "message"),
    [
        pytest.param(
            {"gauge": {}}, "metrics.gauge: unknown key; did you mean gauges?", id="a misspelt kind"
        ),
        pytest.param(
            {"counters": {"gha_started_job_total": {"labels": []}}},
            "metrics.counters.gha_started_job_total: unknown counter; "
            "did you mean gha_started_jobs_total?",
            id="a misspelt series",
        ),
        pytest.param(
            {"counters": {"gha_assigned_jobs": {"labels": []}}},
            "metrics.counters.gha_assigned_jobs: is a gauge: list it under gauges",
            id="a series under the wrong kind",
        ),
        pytest.param(
            {"gauges": {"gha_idle_runners": {"label": ["name"]}}},
            "metrics.gauges.gha_idle_runners.label: unknown key; did you mean labels?",
            id="a misspelt entry key",
        ),
        pytest.param(
            {"gauges": {"gha_idle_runners": {"labels": ["name"], "buckets": [1]}}},
            "metrics.gauges.gha_idle_runners.buckets: unknown key",
            id="buckets on a gauge",
        ),
        pytest.param(
            {"gauges": {"gha_idle_runners": {"labels": ["namspace"]}}},
            "metrics.gauges.gha_idle_runners.labels: unknown label 'namspace'; "
            "did you mean namespace?",
            id="a misspelt label",
        ),
        pytest.param(
            {"gauges": {"gha_idle_runners": {"labels": ["name", "name"]}}},
            "metrics.gauges.gha_idle_runners.labels: label 'name' is listed twice",
            id="a label twice",
        ),
        pytest.param(
            {"gauges": {"gha_idle_runners": {"labels": "name"}}},
            "metrics.gauges.gha_idle_runners.labels: must be a list of label names",
            id="labels not a list",
        ),
        pytest.param(
            {"histograms": {"gha_job_startup_duration_seconds": {"buckets": [5, 1]}}},
            "metrics.histograms.gha_job_startup_duration_seconds.buckets: "
            "must be in increasing order",
            id="buckets out of order",
        ),
        pytest.param(
            {"histograms": {"gha_job_startup_duration_seconds": {"buckets": [1, True]}}},
            "metrics.histograms.gha_job_startup_duration_seconds.buckets: "
            "must be a list of numbers",
            id="a bucket that is no number",
        ),
        pytest.param(
            {"gauges": {"gha_idle_runners": None}},
            "metrics.gauges.gha_idle_runners: must be an object with labels",
            id="an entry that is null",
        ),
        pytest.param(
            ["gha_idle_runners"],
            "metrics: must be an object with counters, gauges and histograms",
            id="a block that is a list",
        ),
    ],
)
def test_what_arc_would_skip_or_guess_is_one_line_naming_the_entry(
    block: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_metrics(block)
    assert str(caught.value) == message
