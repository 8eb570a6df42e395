"""Log setup: JSON lines, and the leader election library's chatter vs its failures."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from ersctl.logs import configure_logging


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root, election = logging.getLogger(), logging.getLogger("leaderelection")
    handlers, level, filters = list(root.handlers), root.level, list(election.filters)
    yield
    root.handlers[:], election.filters[:] = handlers, filters
    root.setLevel(level)


def test_json_logs_are_one_object_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(log_format="json", level="info")
    logging.getLogger("ersctl.test").warning("reconcile %s failed", "ns/a")

    (line,) = capsys.readouterr().err.splitlines()
    doc = json.loads(line)
    assert (doc["level"], doc["logger"], doc["msg"]) == (
        "warning",
        "ersctl.test",
        "reconcile ns/a failed",
    )


def test_election_chatter_is_dropped_and_its_failures_become_one_line_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(log_format="text", level="info")
    election = logging.getLogger("leaderelection")
    election.info("yet to finish lease_duration, lease held by other and has not expired")
    election.info("Failed to create lock as (404)\nReason: Not Found\nHTTP response body: {}")

    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].endswith(
        "WARNING leaderelection: Failed to create lock as (404) Reason: Not Found"
    )


def test_configuring_twice_keeps_one_handler(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(log_format="text")
    configure_logging(log_format="json")
    logging.getLogger("ersctl.test").warning("once")

    assert len(capsys.readouterr().err.splitlines()) == 1
