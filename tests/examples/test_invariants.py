"""The soak's invariants computed from trace records: each row by its stated definition."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from simulation.invariants import Row, capacity_restored, check, format_table
from simulation.trace import Failover, JobTrace, Mark, RunnerTrace, Sample, SoakTrace, Trace

TTL = 10.0


def _healthy() -> Trace:
    """Two jobs on two runners, one leader kill taken over in 6 s, everything cleaned up."""
    return Trace(
        label="soak",
        seed=1,
        min_runners=0,
        max_runners=5,
        elapsed=30.0,
        jobs=(
            JobTrace(
                name="a",
                queued_at=0,
                started_at=1,
                completed_at=3,
                ended_at=3,
                runner="r1",
                starts=1,
            ),
            JobTrace(
                name="b",
                queued_at=0,
                started_at=2,
                completed_at=4,
                ended_at=4,
                runner="r2",
                starts=1,
            ),
        ),
        runners=(
            RunnerTrace(name="r1", created_at=0.5, registered_at=0.6, deleted_at=3.5),
            RunnerTrace(name="r2", created_at=0.5, registered_at=0.6, deleted_at=4.5),
        ),
        deleted_in_log=frozenset({"r1", "r2"}),
        teardown=(),
        soak=SoakTrace(
            failovers=(Failover(killed_at=10.0, acquired_at=16.0, first_write_at=16.5),),
            failed_runner_ttl=TTL,
            lease_duration=5.0,
        ),
    )


def _rows(trace: Trace) -> dict[str, Row]:
    return {row.name: row for row in check(trace, retry_period=1.0)}


def _failing(trace: Trace) -> set[str]:
    return {name for name, row in _rows(trace).items() if not row.ok}


def _soak(trace: Trace, **changes: Any) -> Trace:
    assert trace.soak is not None
    return replace(trace, soak=replace(trace.soak, **changes))


def test_a_healthy_run_holds_every_invariant() -> None:
    rows = _rows(_healthy())

    assert [name for name, row in rows.items() if not row.ok] == []
    assert rows["leader failover"].value == "1 kills: max 6.0s, median 6.0s"


def test_a_job_that_never_completed_is_lost_unless_the_injector_failed_it() -> None:
    trace = _healthy()
    failed = replace(trace.jobs[1], completed_at=None, result="failed")
    trace = replace(trace, jobs=(trace.jobs[0], failed))

    assert _failing(trace) == {"jobs lost"}
    assert _failing(_soak(trace, failed_jobs=frozenset({"b"}))) == set()


def test_a_job_started_twice_fails_its_row() -> None:
    trace = _healthy()
    trace = replace(trace, jobs=(replace(trace.jobs[0], starts=2), trace.jobs[1]))

    assert _failing(trace) == {"jobs run twice"}


@pytest.mark.parametrize(
    "runner",
    [
        pytest.param(RunnerTrace(name="r1", created_at=0.5, deleted_at=2.0), id="deleted-mid-job"),
        pytest.param(RunnerTrace(name="r1", created_at=0.5), id="deletion-unseen"),
    ],
)
def test_a_runner_deleted_while_busy_or_unseen_fails_its_row(runner: RunnerTrace) -> None:
    trace = _healthy()
    trace = replace(trace, runners=(runner, trace.runners[1]))

    assert _failing(trace) == {"busy runners deleted"}


def test_wasted_runners_are_bounded_by_one_percent_and_injected_ones_do_not_count() -> None:
    trace = _healthy()
    idle = RunnerTrace(name="idle", created_at=1.0, registered_at=1.1, deleted_at=9.0)
    trace = replace(
        trace, runners=(*trace.runners, idle), deleted_in_log=frozenset({"r1", "r2", "idle"})
    )

    assert _failing(trace) == {"wasted runners"}  # 1 > 1% of 2 jobs
    assert _failing(_soak(trace, injected_runners=frozenset({"idle"}))) == set()
    many_jobs = replace(trace, jobs=trace.jobs * 50)  # 100 jobs: 1 wasted is allowed
    assert "wasted runners" not in _failing(many_jobs)


def test_a_slow_or_missing_takeover_fails_the_failover_row() -> None:
    slow = Failover(killed_at=10.0, acquired_at=19.5)  # 9.5 s > 5 + 2 x 1 + 2
    missing = Failover(killed_at=10.0)

    assert _failing(_soak(_healthy(), failovers=(slow,))) == {"leader failover"}
    assert _failing(_soak(_healthy(), failovers=(missing,))) == {"leader failover"}
    assert _failing(_soak(_healthy(), failovers=())) == {"leader failover"}


def test_not_drained_or_left_above_minimum_fails_back_at_minimum() -> None:
    assert _failing(_soak(_healthy(), drained=False)) == {"back at minimum"}
    assert _failing(replace(_healthy(), final_runners=1)) == {"back at minimum"}


def test_objects_stuck_in_deletion_or_left_after_teardown_fail_the_finalizer_row() -> None:
    assert _failing(_soak(_healthy(), stuck=("ephemeralrunners/r9",))) == {"no stuck finalizer"}
    assert _failing(replace(_healthy(), teardown=("pods/r9",))) == {"no stuck finalizer"}
    assert _failing(replace(_healthy(), teardown=None)) == {"no stuck finalizer"}


def test_a_failed_runner_seen_past_the_ttl_and_its_grace_fails_its_row() -> None:
    # The grace: a failover (the Lease 5 s + 2 retry periods of 1 s) + 5 s.
    kept = _soak(_healthy(), failed_runner_ages=(("r7", TTL + 11.5),))
    overdue = _soak(_healthy(), failed_runner_ages=(("r7", TTL + 12.5),))

    assert _failing(kept) == set()
    assert _failing(overdue) == {"no Failed runner older than the TTL"}


def test_the_table_says_ok_or_fail_per_row() -> None:
    table = format_table(check(_soak(_healthy(), drained=False), retry_period=1.0))

    assert table.splitlines()[0].split()[:4] == ["invariant", "value", "bound", "result"]
    assert [line.split()[-1] for line in table.splitlines()[1:]].count("FAIL") == 1


def test_a_runner_unable_to_take_a_job_past_the_health_bound_is_a_zombie() -> None:
    # Bound: the health deadline 9 + the Lease 5 + 2 retry periods + 5 s grace = 21 s.
    trace = _soak(_healthy(), health_deadline=9.0, zombie_ages=(("r1", 20.9), ("r2", 3.0)))
    row = _rows(trace)["no zombie runner"]
    assert (row.value, row.bound, row.ok) == ("longest 20.9s (r1)", "<= 21s", True)

    assert "no zombie runner" in _failing(_soak(trace, zombie_ages=(("r1", 21.5),)))


def sample(at: float, *, replicas: int, pending: int = 0, running: int = 0) -> Sample:
    return Sample(
        at=at, assigned_jobs=0, replicas=replicas, patch_id=0, marker=0, pending=pending,
        running=running,
    )  # fmt: skip


def test_capacity_is_restored_when_pending_and_running_runners_reach_the_desired_count() -> None:
    trace = replace(
        _soak(_healthy(), health_deadline=9.0),
        marks=(Mark(at=10.0, label="node-lost"),),
        samples=(
            sample(9.0, replicas=3, pending=3),  # before the last fault: not counted
            sample(12.0, replicas=3, pending=1, running=1),  # a slot still held
            sample(40.0, replicas=4, pending=2, running=2),
        ),
    )
    row = _rows(trace)["capacity restored"]
    assert (row.value, row.bound, row.ok) == ("30.0s after the last fault", "<= 31s", True)
    assert capacity_restored(replace(trace, samples=trace.samples[:2])) is None
    assert "capacity restored" in _failing(replace(trace, samples=trace.samples[:2]))
    assert capacity_restored(replace(trace, marks=())) == 0.0


def test_capacity_after_a_listener_kill_waits_for_its_successors_takeover() -> None:
    """A successor that got 409 just before the killed listener's session expired asks
    again only after the listener's 409 interval: 1 + 5 + 30 s, then its Pod is made,
    starts and publishes (5 s)."""
    trace = replace(
        _soak(_healthy(), health_deadline=9.0, listener_takeover=36.0),
        marks=(Mark(at=10.0, label="listener-kill"),),
        samples=(sample(45.0, replicas=3, pending=1), sample(45.5, replicas=3, pending=3)),
    )
    row = _rows(trace)["capacity restored"]
    assert (row.value, row.ok) == ("35.5s after the last fault", True)
    assert row.bound == "<= 41s (listener 36s + 5s after its kill)"

    late = replace(trace, samples=(sample(51.5, replicas=3, pending=3),))
    assert "capacity restored" in _failing(late)
    unkilled = _soak(trace, listener_takeover=0.0)  # no listener killed: the runner side
    assert _rows(unkilled)["capacity restored"].bound == "<= 31s"
    # A kill long before the last fault (a runner fault at 60 s) bounds nothing: its
    # successor held the session well before; the runner side's 31 s hold.
    early = replace(trace, marks=(*trace.marks, Mark(at=60.0, label="pod-evicted")))
    assert _rows(early)["capacity restored"].bound == "<= 31s"
    # A kill 2 s before the last fault: its successor may take 41 - 2 s more.
    close = replace(trace, marks=(*trace.marks, Mark(at=12.0, label="pod-evicted")))
    assert _rows(close)["capacity restored"].bound == "<= 39s (listener 36s + 5s after its kill)"
