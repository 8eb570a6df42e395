"""The jobs a simulation runs: when each is queued and how long it takes. Pure.

A workload is a Poisson arrival process (``rate`` jobs per second over ``window``
seconds, or exactly ``count`` arrivals at ``rate`` however long they take) plus bursts (``count`` jobs queued at once at time ``at``); each job's
duration is drawn from a log-normal distribution around ``median`` clipped to
``[shortest, longest]``. The same spec and seed always give the same jobs.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Burst:
    """``count`` jobs queued together ``at`` seconds after the start."""

    at: float
    count: int

    @classmethod
    def parse(cls, text: str) -> Burst:
        """Parse ``AT:COUNT`` (e.g. ``5:8``). Raises ValueError naming the problem."""
        at_text, sep, count_text = text.partition(":")
        try:
            burst = cls(at=float(at_text), count=int(count_text))
        except ValueError:
            raise ValueError(f"burst {text!r}: expected AT:COUNT, e.g. 5:8") from None
        if not sep or not 0 <= burst.at < math.inf or burst.count < 1:
            raise ValueError(f"burst {text!r}: expected AT >= 0 (finite) and COUNT >= 1")
        return burst


@dataclass(frozen=True, kw_only=True)
class Durations:
    """Log-normal job durations (seconds) with ``median`` and ``sigma``, clipped."""

    median: float = 3.0
    sigma: float = 0.5
    shortest: float = 0.5
    longest: float = 10.0

    def draw(self, rng: random.Random) -> float:
        value = rng.lognormvariate(math.log(self.median), self.sigma)
        return round(min(max(value, self.shortest), self.longest), 3)


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    """Everything that decides the jobs of one run."""

    seed: int = 7
    rate: float = 0.6
    window: float = 20.0
    bursts: tuple[Burst, ...] = ()
    durations: Durations = Durations()
    count: int | None = None
    """Exactly this many Poisson arrivals (``window`` then does not apply)."""

    def __post_init__(self) -> None:
        if self.rate < 0 or self.window < 0:
            raise ValueError("workload: rate and window must be >= 0")
        if self.count is not None and (self.count < 0 or (self.count and self.rate <= 0)):
            raise ValueError("workload: count must be >= 0, and needs a rate > 0")


@dataclass(frozen=True, kw_only=True)
class JobArrival:
    """One job: queued ``at`` seconds after the start, running for ``duration`` seconds."""

    index: int
    at: float
    duration: float

    @property
    def name(self) -> str:
        return f"job-{self.index:04d}"


def generate(spec: WorkloadSpec) -> tuple[JobArrival, ...]:
    """The jobs of ``spec`` ordered by arrival time (ties keep burst order), numbered from 0."""
    rng = random.Random(spec.seed)
    if spec.count is None:
        times = _poisson_times(rng, spec.rate, spec.window)
    else:
        times = _poisson_count(rng, spec.rate, spec.count)
    for burst in spec.bursts:
        times.extend([burst.at] * burst.count)
    times.sort()
    return tuple(
        JobArrival(index=i, at=round(at, 3), duration=spec.durations.draw(rng))
        for i, at in enumerate(times)
    )


def _poisson_times(rng: random.Random, rate: float, window: float) -> list[float]:
    if rate <= 0:
        return []
    times: list[float] = []
    at = rng.expovariate(rate)
    while at < window:
        times.append(at)
        at += rng.expovariate(rate)
    return times


def _poisson_count(rng: random.Random, rate: float, count: int) -> list[float]:
    times: list[float] = []
    at = 0.0
    for _ in range(count):
        at += rng.expovariate(rate)
        times.append(at)
    return times


def last_finish(jobs: tuple[JobArrival, ...]) -> float:
    """The earliest time every job could have finished (arrival + duration), 0 when none."""
    return max((job.at + job.duration for job in jobs), default=0.0)
