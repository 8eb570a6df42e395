"""The workload generator: seeded, ordered, bounded."""

from __future__ import annotations

import pytest
from simulation.workload import Burst, Durations, WorkloadSpec, generate, last_finish


def test_the_same_seed_gives_the_same_jobs_and_another_seed_other_jobs() -> None:
    spec = WorkloadSpec(seed=3, rate=1.0, window=20.0)

    assert generate(spec) == generate(spec)
    assert generate(spec) != generate(WorkloadSpec(seed=4, rate=1.0, window=20.0))


def test_jobs_arrive_in_order_inside_the_window_and_are_numbered_from_zero() -> None:
    jobs = generate(WorkloadSpec(seed=1, rate=2.0, window=10.0))

    assert [job.index for job in jobs] == list(range(len(jobs)))
    assert all(0 <= job.at < 10.0 for job in jobs)
    assert [job.at for job in jobs] == sorted(job.at for job in jobs)
    # 2 jobs/s over 10 s: a Poisson count this far from 20 is a broken generator.
    assert 8 <= len(jobs) <= 35


def test_a_burst_queues_its_jobs_at_one_instant() -> None:
    spec = WorkloadSpec(seed=1, rate=0.0, bursts=(Burst(at=4.0, count=5), Burst(at=1.0, count=2)))

    jobs = generate(spec)

    assert [job.at for job in jobs] == [1.0, 1.0, 4.0, 4.0, 4.0, 4.0, 4.0]
    assert [job.name for job in jobs][:2] == ["job-0000", "job-0001"]


def test_durations_stay_inside_their_bounds() -> None:
    durations = Durations(median=2.0, sigma=3.0, shortest=1.0, longest=4.0)
    jobs = generate(WorkloadSpec(seed=9, rate=5.0, window=20.0, durations=durations))

    assert all(1.0 <= job.duration <= 4.0 for job in jobs)
    assert {1.0, 4.0} <= {job.duration for job in jobs}  # the wide sigma hits both clips
    assert last_finish(jobs) == max(job.at + job.duration for job in jobs)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("5:8", Burst(at=5.0, count=8), id="seconds-and-count"),
        pytest.param("0.5:1", Burst(at=0.5, count=1), id="fractional-time"),
    ],
)
def test_a_burst_parses_from_at_colon_count(text: str, expected: Burst) -> None:
    assert Burst.parse(text) == expected


@pytest.mark.parametrize("text", ["5", "x:3", "5:0", "-1:3", "5:2.5"])
def test_a_malformed_burst_is_rejected_with_its_text_named(text: str) -> None:
    with pytest.raises(ValueError, match="burst"):
        Burst.parse(text)


def test_a_count_gives_exactly_that_many_jobs_at_the_rate() -> None:
    jobs = generate(WorkloadSpec(seed=5, rate=4.0, count=200))

    assert len(jobs) == 200
    # 200 arrivals at 4/s take about 50 s: this far off is a broken generator.
    assert 35 <= jobs[-1].at <= 65
    assert generate(WorkloadSpec(seed=5, rate=4.0, count=200)) == jobs


def test_a_count_needs_a_rate() -> None:
    with pytest.raises(ValueError, match="count"):
        WorkloadSpec(rate=0.0, count=3)
