"""The soak's fault schedule: seeded, complete, spaced."""

from __future__ import annotations

import itertools

from simulation.faults import HEALTH_KINDS, SOAK_KINDS, FaultKind, SoakFaults, soak_plan


def test_the_same_seed_gives_the_same_plan_and_another_seed_another() -> None:
    assert soak_plan(300.0, seed=3) == soak_plan(300.0, seed=3)
    assert soak_plan(300.0, seed=3) != soak_plan(300.0, seed=4)


def test_every_kind_lands_at_least_once_inside_the_window_in_time_order() -> None:
    plan = soak_plan(40.0, seed=8)

    assert {fault.kind for fault in plan} == set(SOAK_KINDS)
    assert all(0.05 * 40.0 <= fault.at <= 0.95 * 40.0 for fault in plan)
    assert [fault.at for fault in plan] == sorted(fault.at for fault in plan)


def test_a_long_window_gets_about_one_fault_per_period_and_keeps_kinds_apart() -> None:
    settings = SoakFaults(every=5.0)
    plan = soak_plan(500.0, seed=2, faults=settings)

    assert 60 <= len(plan) <= 100  # 100 candidates, a few dropped for spacing
    for kind, gap in settings.apart:
        moments = [fault.at for fault in plan if fault.kind == kind]
        assert len(moments) >= 2, kind
        assert all(b - a >= gap for a, b in itertools.pairwise(moments)), kind
    assert sum(1 for f in plan if f.kind is FaultKind.LEADER_KILL) <= 500 / 25 + 1


def test_a_long_window_gets_every_runner_health_fault_three_times_a_short_one_once() -> None:
    long_plan, short_plan = soak_plan(400.0, seed=1), soak_plan(25.0, seed=3)

    for kind in HEALTH_KINDS:
        assert sum(1 for fault in long_plan if fault.kind == kind) >= 3, kind
        assert sum(1 for fault in short_plan if fault.kind == kind) >= 1, kind
