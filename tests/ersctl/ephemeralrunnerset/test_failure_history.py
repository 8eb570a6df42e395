"""The pure rules of ``ersctl.ephemeralrunnerset.failurepolicy``: what is due, what counts as failing,
how long replacements wait."""

from __future__ import annotations

import pytest

from ersctl import api
from ersctl.ephemeralrunnerset.failurepolicy import (
    FailedRunnerPolicy,
    FailureHistory,
    due_for_collection,
    failed_at,
    record,
)
from ersctl.reasons import Reason
from tests.ersctl.ephemeralrunnerset.objects import runner

POLICY = FailedRunnerPolicy(ttl=300, window=10, min_failures=3, backoff_base=10, backoff_cap=300)


def failed(
    name: str, *, when: str = "2030-01-01T00:00:00Z", revision: int = 0
) -> api.EphemeralRunner:
    item = runner("Failed", name=name, revision=revision, created="2029-12-31T23:00:00Z")
    item.status["failures"] = {"pod-1": "2029-12-31T23:59:00Z", "pod-2": when}
    return item


def epoch(text: str) -> float:
    moment = api.parse_time(text)
    assert moment is not None
    return moment.timestamp()


def history(outcomes: str) -> FailureHistory:
    """F = failed, S = succeeded, oldest first."""
    result = FailureHistory()
    for i, kind in enumerate(outcomes):
        item = failed(f"r{i}") if kind == "F" else runner("Succeeded", name=f"r{i}")
        bucket = ([item], []) if kind == "F" else ([], [item])
        result = record(result, revision=0, failed=bucket[0], succeeded=bucket[1], window=10)
    return result


def test_a_runner_failed_at_its_latest_pod_failure_else_at_its_creation() -> None:
    assert failed_at(failed("a")) == epoch("2030-01-01T00:00:00Z")
    no_pods = runner("Failed", created="2029-12-31T23:00:00Z")
    assert failed_at(no_pods) == epoch("2029-12-31T23:00:00Z")


def test_only_runners_kept_the_full_ttl_are_due_and_the_wait_is_until_the_next() -> None:
    t = epoch("2030-01-01T00:00:00Z")
    old, young = failed("old"), failed("young", when="2030-01-01T00:02:00Z")

    due, wait = due_for_collection([old, young], now=t + 300, ttl=300)

    assert [r.name for r in due] == ["old"]
    assert wait == pytest.approx(120)
    assert due_for_collection([], now=t, ttl=300) == ((), None)


@pytest.mark.parametrize(
    ("outcomes", "failing"),
    [
        pytest.param("FF", False, id="two failures are not yet a pattern"),
        pytest.param("FFF", True, id="three of three"),
        pytest.param("FFFSSS", False, id="half is not most"),
        pytest.param("SFFFS", True, id="three of five"),
        pytest.param("FFFFFFSSSSSSS", False, id="old failures leave the window"),
    ],
)
def test_a_set_is_failing_when_most_of_its_recent_runners_failed(
    outcomes: str, failing: bool
) -> None:
    assert POLICY.failing(history(outcomes)) is failing


@pytest.mark.parametrize(
    ("failures", "backoff"),
    [(3, 10.0), (4, 20.0), (5, 40.0), (7, 160.0), (8, 300.0), (10, 300.0)],
)
def test_the_backoff_doubles_with_each_failure_and_is_capped(failures: int, backoff: float) -> None:
    assert POLICY.backoff(history("F" * failures)) == backoff


def test_a_runner_is_recorded_once_however_often_it_is_listed() -> None:
    item = failed("a")
    once = record(FailureHistory(), revision=0, failed=[item], succeeded=[], window=10)
    again = record(once, revision=0, failed=[item], succeeded=[], window=10)

    assert again.failed == 1


def test_a_new_revision_starts_afresh_and_ignores_runners_of_older_revisions() -> None:
    failing = history("FFF")

    fresh = record(failing, revision=2, failed=[failed("old", revision=1)], succeeded=[], window=10)

    assert (fresh.revision, fresh.outcomes) == (2, ())
    assert POLICY.replacements_allowed_at(fresh) == 0.0


def unused(name: str, *, job_id: str = "") -> api.EphemeralRunner:
    """A runner that exited 0 without a job, as the runner controller records it."""
    item = runner("Succeeded", name=name, job_id=job_id)
    item.status["reason"] = Reason.RUNNER_EXITED_WITHOUT_JOB
    return item


def test_runners_exiting_without_a_job_count_as_failed_and_open_their_slot_when_seen() -> None:
    now = epoch("2030-01-01T00:00:00Z")
    result = FailureHistory()
    for i in range(3):
        result = record(
            result, revision=0, failed=[], succeeded=[unused(f"u{i}")], window=10, now=now + i
        )

    assert result.failed == 3 and POLICY.failing(result)
    assert POLICY.replacements_allowed_at(result) == now + 2 + 10  # the latest one's slot
    # A job the listener recorded late: it ran one after all.
    late = record(
        FailureHistory(), revision=0, failed=[], succeeded=[unused("j", job_id="7")], window=10
    )
    assert late.failed == 0 and late.collected_at == 0.0
