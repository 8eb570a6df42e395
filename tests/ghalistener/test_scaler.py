"""The patch ID contract, producer side: table tests per rule and properties."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ersctl.api import MAX_PATCH_ID
from ghalistener.scaler import Scaler, tells_nothing_new


@dataclass(frozen=True)
class Call:
    """One desired-count call, optionally preceded by job events."""

    assigned: int
    started: int = 0
    completed: int = 0


def run(scaler: Scaler, calls: list[Call]) -> list[tuple[int, int]]:
    published: list[tuple[int, int]] = []
    for call in calls:
        for _ in range(call.started):
            scaler.job_started()
        for _ in range(call.completed):
            scaler.job_completed()
        decision = scaler.desired_count(call.assigned)
        published.append((decision.replicas, decision.patch_id))
    return published


@pytest.mark.parametrize(
    ("min_runners", "max_runners", "calls", "expected"),
    [
        pytest.param(0, 10, [Call(0)], [(0, 0)], id="the first call after a start publishes 0"),
        pytest.param(
            2, 10, [Call(3)], [(5, 0)], id="the first call publishes 0 even away from the minimum"
        ),
        pytest.param(
            0,
            10,
            [Call(0), Call(0), Call(0)],
            [(0, 0), (0, 0), (0, 0)],
            id="idle at the minimum with nothing dirty keeps publishing 0",
        ),
        pytest.param(
            1,
            10,
            [Call(0), Call(0)],
            [(1, 0), (1, 0)],
            id="idle at a non-zero minimum publishes 0",
        ),
        pytest.param(
            0,
            10,
            [Call(0), Call(2), Call(2), Call(0)],
            [(0, 0), (2, 1), (2, 2), (0, 3)],
            id="away from the minimum every call publishes its sequence value",
        ),
        pytest.param(
            0,
            10,
            [Call(0), Call(1), Call(0), Call(0)],
            [(0, 0), (1, 1), (0, 2), (0, 0)],
            id="returning to the minimum publishes a fresh ID once, then 0",
        ),
        pytest.param(
            0,
            10,
            [Call(0), Call(0, completed=1), Call(0)],
            [(0, 0), (0, 1), (0, 0)],
            id="a completed job at the minimum yields a fresh ID, then 0 again",
        ),
        pytest.param(
            0,
            10,
            [Call(0), Call(0, started=1), Call(0)],
            [(0, 0), (0, 1), (0, 0)],
            id="a started job at the minimum yields a fresh ID",
        ),
        pytest.param(
            0,
            10,
            [Call(0, completed=1)],
            [(0, 0)],
            id="the first call publishes 0 even when dirty",
        ),
        pytest.param(
            0,
            3,
            [Call(0), Call(7), Call(7)],
            [(0, 0), (3, 1), (3, 2)],
            id="the target is capped at max_runners",
        ),
        pytest.param(
            3,
            3,
            [Call(0), Call(5), Call(0)],
            [(3, 0), (3, 0), (3, 0)],
            id="min equal to max is always idle at the minimum",
        ),
        pytest.param(
            2,
            10,
            [Call(0), Call(-4)],
            [(2, 0), (2, 0)],
            id="a negative assigned count counts as zero",
        ),
        pytest.param(
            0,
            10,
            [Call(0), Call(0, started=1, completed=1), Call(0, completed=2)],
            [(0, 0), (0, 1), (0, 2)],
            id="dirty from several events is cleared by one call",
        ),
    ],
)
def test_published_sequence_follows_the_contract(
    min_runners: int, max_runners: int, calls: list[Call], expected: list[tuple[int, int]]
) -> None:
    assert run(Scaler(min_runners=min_runners, max_runners=max_runners), calls) == expected


def test_a_new_instance_starts_the_sequence_again() -> None:
    first = Scaler(min_runners=0, max_runners=5)
    assert run(first, [Call(0), Call(2), Call(3)]) == [(0, 0), (2, 1), (3, 2)]
    restarted = Scaler(min_runners=0, max_runners=5)
    assert run(restarted, [Call(3), Call(3)]) == [(3, 0), (3, 1)]


def test_after_the_largest_int32_comes_one() -> None:
    scaler = Scaler(min_runners=0, max_runners=5)
    scaler.desired_count(1)
    # Fast-forward the sequence; the only way to get there otherwise is 2**31 calls.
    scaler._sequence = MAX_PATCH_ID - 1
    ids = [scaler.desired_count(1).patch_id for _ in range(3)]
    assert ids == [MAX_PATCH_ID, 1, 2]


def test_the_wrap_happens_before_the_increment_even_when_idle() -> None:
    scaler = Scaler(min_runners=0, max_runners=5)
    scaler.desired_count(0)
    scaler._sequence = MAX_PATCH_ID
    decision = scaler.desired_count(0)
    assert (decision.sequence, decision.patch_id) == (1, 0)
    scaler.job_completed()
    assert scaler.desired_count(0).patch_id == 2


@pytest.mark.parametrize(
    ("min_runners", "max_runners"),
    [pytest.param(-1, 3, id="negative minimum"), pytest.param(4, 3, id="minimum above maximum")],
)
def test_impossible_bounds_are_refused(min_runners: int, max_runners: int) -> None:
    with pytest.raises(ValueError, match="min_runners"):
        Scaler(min_runners=min_runners, max_runners=max_runners)


# --- properties over random event sequences ---------------------------------------

bounds = st.tuples(st.integers(0, 20), st.integers(0, 20)).map(sorted)
events = st.lists(
    st.one_of(
        st.just("started"),
        st.just("completed"),
        st.integers(-3, 60).map(lambda n: ("count", n)),
    ),
    max_size=80,
)
start_sequence = st.sampled_from([None, MAX_PATCH_ID - 3, MAX_PATCH_ID])


@dataclass(frozen=True)
class Observation:
    patch_id: int
    sequence: int
    replicas: int
    dirty_before: bool
    first: bool


def observe(
    min_runners: int, max_runners: int, script: list[object], start: int | None
) -> list[Observation]:
    scaler = Scaler(min_runners=min_runners, max_runners=max_runners)
    seen: list[Observation] = []
    dirty = False
    for step in script:
        if step == "started":
            scaler.job_started()
            dirty = True
        elif step == "completed":
            scaler.job_completed()
            dirty = True
        else:
            assert isinstance(step, tuple)
            first = not seen
            decision = scaler.desired_count(step[1])
            seen.append(
                Observation(decision.patch_id, decision.sequence, decision.replicas, dirty, first)
            )
            dirty = False
            if first and start is not None:
                scaler._sequence = start
    return seen


@given(bounds, events, start_sequence)
def test_every_published_id_is_zero_or_the_current_sequence_value(
    mm: list[int], script: list[object], start: int | None
) -> None:
    for seen in observe(mm[0], mm[1], script, start):
        assert seen.patch_id in (0, seen.sequence)
        assert 0 <= seen.patch_id <= MAX_PATCH_ID


@given(bounds, events, start_sequence)
def test_a_job_event_before_any_call_but_the_first_yields_a_non_zero_id(
    mm: list[int], script: list[object], start: int | None
) -> None:
    for seen in observe(mm[0], mm[1], script, start):
        if seen.dirty_before and not seen.first:
            assert seen.patch_id != 0


@given(bounds, events)
def test_the_first_call_after_a_start_always_publishes_zero(
    mm: list[int], script: list[object]
) -> None:
    observed = observe(mm[0], mm[1], script, None)
    if observed:
        assert observed[0].patch_id == 0


@given(bounds, events, start_sequence)
def test_the_target_never_leaves_the_bounds(
    mm: list[int], script: list[object], start: int | None
) -> None:
    for seen in observe(mm[0], mm[1], script, start):
        assert mm[0] <= seen.replicas <= mm[1]


@given(bounds, events, start_sequence)
def test_the_sequence_advances_by_one_and_wraps_to_one(
    mm: list[int], script: list[object], start: int | None
) -> None:
    observed = observe(mm[0], mm[1], script, start)
    for before, after in itertools.pairwise(observed):
        base = start if (before.first and start is not None) else before.sequence
        assert after.sequence == (1 if base == MAX_PATCH_ID else base + 1)


# --- the completions each count leaves out ---------------------------------------------


def test_a_completion_is_named_by_every_decision_after_it_in_order() -> None:
    scaler = Scaler(min_runners=0, max_runners=4)
    scaler.desired_count(2)
    scaler.job_completed(11)
    scaler.job_completed(0)  # a job canceled before it ran: no runner to name
    scaler.job_completed(12)
    assert scaler.desired_count(0).completed_runners == (11, 12)
    scaler.job_completed(11)  # the same message delivered again
    assert scaler.desired_count(0).completed_runners == (11, 12)


def test_an_older_count_does_not_name_the_completions_handled_since() -> None:
    scaler = Scaler(min_runners=0, max_runners=4)
    scaler.job_completed(11)
    assert scaler.desired_count(2, accounts=False).completed_runners == ()
    assert scaler.desired_count(1).completed_runners == (11,)


def test_only_the_newest_completions_are_kept() -> None:
    scaler = Scaler(min_runners=0, max_runners=20)
    assert scaler.completions_kept == 40
    for runner_id in range(1, 46):
        scaler.job_completed(runner_id)
    assert scaler.desired_count(0).completed_runners == tuple(range(6, 46))
    assert Scaler(min_runners=0, max_runners=1).completions_kept == 32


def test_a_new_incarnation_names_what_its_predecessor_named() -> None:
    scaler = Scaler(min_runners=0, max_runners=4, completed=[7, 8])
    assert scaler.desired_count(0).completed_runners == (7, 8)


# -- what is worth publishing after a message -------------------------------------------


def test_only_a_fresh_id_is_nothing_new_and_every_other_change_is_news() -> None:
    scaler = Scaler(min_runners=1, max_runners=5)
    first = scaler.desired_count(0)  # (1, 0): idle at the minimum
    assert not tells_nothing_new(first, None), "the first count is always news"
    assert tells_nothing_new(scaler.desired_count(0), first), "0 again, the same count"
    up = scaler.desired_count(3)
    assert not tells_nothing_new(up, first), "a new count"
    again = scaler.desired_count(3)
    assert again.patch_id != up.patch_id and tells_nothing_new(again, up), "a fresh ID alone"
    scaler.job_started()
    assert not tells_nothing_new(scaler.desired_count(3), up), "a job started"
    scaler.job_completed(runner_id=7)
    done = scaler.desired_count(3)
    assert not tells_nothing_new(done, up), "a job completed"
    scaler.job_completed(runner_id=8)
    older = scaler.desired_count(3, accounts=False)  # an older count: 8 not named yet
    named = scaler.desired_count(3)
    assert not named.dirty and named.completed_runners != older.completed_runners
    assert not tells_nothing_new(named, older), "the completions it names changed"
    down = scaler.desired_count(0)
    idle = scaler.desired_count(0)
    assert down.patch_id != 0 and idle.patch_id == 0
    assert not tells_nothing_new(idle, down), "back to 0 at the minimum forces the state"
