"""Log lines (text and JSON, redacted) and the Prometheus metrics with ARC's names."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ghalistener.actions.types import (
    JobCompleted,
    JobStarted,
    RunnerId,
    RunnerRequestId,
    Statistics,
)
from ghalistener.logs import REDACTED, configure_logging
from ghalistener.metrics import COUNTED_JOBS_LIMIT, ListenerMetrics, MetricsServer, ScaleSetLabels

TOKEN = "ghp_TOPSECRETTOKEN1234"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretkeymaterialxyz\n-----END RSA PRIVATE KEY-----"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    yield stream
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "stream", None) is stream:
            root.removeHandler(handler)


def test_json_lines_carry_the_structured_fields(captured: io.StringIO) -> None:
    configure_logging(level="info", fmt="json", stream=captured)
    logging.getLogger("ghalistener.listener").info(
        "published desired runner count", extra={"fields": {"replicas": 3, "patch_id": 7}}
    )
    line = json.loads(captured.getvalue())
    assert line["msg"] == "published desired runner count"
    assert (line["replicas"], line["patch_id"], line["level"]) == (3, 7, "info")


def test_text_lines_carry_key_value_pairs(captured: io.StringIO) -> None:
    configure_logging(level="info", fmt="text", stream=captured)
    logging.getLogger("ghalistener.x").info(
        "scaled", extra={"fields": {"replicas": 2, "note": "a b"}}
    )
    assert 'scaled replicas=2 note="a b"' in captured.getvalue()


def test_the_level_filters_debug_lines(captured: io.StringIO) -> None:
    configure_logging(level="warn", fmt="text", stream=captured)
    logging.getLogger("ghalistener.x").info("quiet")
    logging.getLogger("ghalistener.x").warning("loud")
    assert "quiet" not in captured.getvalue() and "loud" in captured.getvalue()


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize(
    "leak",
    [
        pytest.param(f"token is {TOKEN}", id="a configured token in the message"),
        pytest.param(f"key {PEM}", id="a configured private key"),
        pytest.param("Authorization: Bearer abcdefgh12345678", id="an unregistered bearer token"),
        pytest.param("ghs_unregisteredinstallationtoken", id="an unregistered GitHub token"),
        pytest.param("jwt eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJl", id="a JWT"),
    ],
)
def test_no_secret_reaches_a_log_line(captured: io.StringIO, fmt: str, leak: str) -> None:
    configure_logging(level="debug", fmt=fmt, secrets=[TOKEN, PEM], stream=captured)
    log = logging.getLogger("ghalistener.x")
    log.info(leak, extra={"fields": {"detail": leak}})
    try:
        raise RuntimeError(leak)
    except RuntimeError:
        log.exception("failed")
    out = captured.getvalue()
    for secret in (
        TOKEN,
        "secretkeymaterial",
        "abcdefgh12345678",
        "unregisteredinstallation",
        "c2lnbmF0dXJl",
    ):
        assert secret not in out
    assert REDACTED in out


def job_base() -> dict[str, object]:
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
    started = JobStarted(runner_id=RunnerId(1), runner_name="r1", **job_base())  # type: ignore[arg-type]
    metrics.publish_job_started(started, message_id=1)
    metrics.publish_job_completed(JobCompleted(result="succeeded", **job_base()), message_id=2)  # type: ignore[arg-type]
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


def test_a_job_without_timestamps_is_counted_but_not_timed() -> None:
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc"))
    metrics.publish_job_completed(
        JobCompleted(runner_request_id=RunnerRequestId(1), result="canceled"), message_id=1
    )
    names = {name for name, _ in samples(metrics)}
    assert "gha_completed_jobs_total" in names
    assert "gha_job_execution_duration_seconds_count" not in names


def test_a_redelivered_message_does_not_count_its_jobs_twice() -> None:
    # The listener acks last, so a failure mid-message redelivers it; the counters and
    # histograms used to count its jobs again.
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc", organization="octo"))
    started = JobStarted(runner_id=RunnerId(1), runner_name="r1", **job_base())  # type: ignore[arg-type]
    done = JobCompleted(result="succeeded", **job_base())  # type: ignore[arg-type]
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
    done = JobCompleted(result="succeeded", **job_base())  # type: ignore[arg-type]
    for message_id in range(COUNTED_JOBS_LIMIT + 1):
        metrics.publish_job_completed(done, message_id=message_id)
    metrics.publish_job_completed(done, message_id=0)  # forgotten: counted again
    metrics.publish_job_completed(done, message_id=COUNTED_JOBS_LIMIT)  # remembered
    totals = [v for (name, _), v in samples(metrics).items() if name == "gha_completed_jobs_total"]
    assert totals == [COUNTED_JOBS_LIMIT + 2]


def test_the_server_serves_the_endpoint_and_nothing_else() -> None:
    metrics = ListenerMetrics(ScaleSetLabels(name="runners", namespace="arc"))
    metrics.publish_desired_runners(2)
    server = MetricsServer(metrics, addr="127.0.0.1:0", endpoint="/custom")
    server.start()
    try:
        response = httpx.get(server.url, timeout=5)
        assert response.status_code == 200
        assert 'gha_desired_runners{enterprise="",name="runners"' in response.text
        assert httpx.get(server.url.replace("/custom", "/metrics"), timeout=5).status_code == 404
    finally:
        server.stop()
