"""A failing Lease call is one WARNING line, ours, naming the server: the leader election
library's own lines (its narration, and each failure again as a multi-line exception)
stay below INFO."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest
from kubernetes import client

from ersctl.kube.leader import LeaderElectionConfig, LeaderElector
from ersctl.platform.logs import configure_logging
from ersctl.testing.ports import unused_port
from tests.polling import eventually


@pytest.fixture
def chatter_policy() -> Iterator[None]:
    """The programs' logging setup (it demotes the library's lines), undone afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging(level="debug")
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def ours(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """This test's Lease warnings (an elector another test left running may log too)."""
    return [
        r
        for r in caplog.records
        if r.name == "ersctl.kube.leader" and r.levelno >= 30 and "/quiet:" in r.getMessage()
    ]


def test_each_failed_lease_read_is_one_warning_naming_the_server(
    caplog: pytest.LogCaptureFixture, chatter_policy: None
) -> None:
    caplog.set_level(logging.DEBUG)
    server = f"http://127.0.0.1:{unused_port()}"
    configuration = client.Configuration()
    configuration.host = server
    configuration.retries = 0
    config = LeaderElectionConfig(
        namespace="default", name="quiet", identity="me",
        lease_duration=2, renew_deadline=1.5, retry_period=1.0,
    )  # fmt: skip
    elector = LeaderElector(
        client.ApiClient(configuration),
        config,
        on_started_leading=lambda: None,
        on_stopped_leading=lambda: None,
    )
    stop = threading.Event()
    campaign = threading.Thread(target=elector.run, args=(stop,), daemon=True)
    campaign.start()
    try:
        eventually(lambda: len(ours(caplog)) >= 2, timeout=10, what="two failed Lease reads")
    finally:
        stop.set()
        campaign.join(5)

    library = [
        r for r in caplog.records if r.name == "leaderelection" and " quiet " in r.getMessage()
    ]
    attempts = [r for r in library if r.getMessage().startswith("Error retrieving resource lock")]
    assert {r.levelno for r in library} == {logging.DEBUG}, "the library says nothing above DEBUG"
    assert len(ours(caplog)) in (len(attempts), len(attempts) + 1)  # the last may race the stop
    for record in ours(caplog):
        assert record.getMessage().startswith(
            f"leader election: get leases/default/quiet: no response from {server}: "
        ), record.getMessage()
        assert "\n" not in record.getMessage()
