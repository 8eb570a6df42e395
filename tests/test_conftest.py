"""The suite's own set-up: the long tests spread through the run, none lost; the
programs the tests start get SIGINT as a terminal gives it."""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import _spread, pytest_configure


@given(st.lists(st.booleans(), max_size=80), st.integers(min_value=2, max_value=6))
def test_each_workers_share_of_the_run_holds_its_share_of_the_marked_tests(
    marks: list[bool], workers: int
) -> None:
    items = cast(list[pytest.Item], list(enumerate(marks)))

    def marked(item: Any) -> bool:
        return bool(item[1])

    spread = cast(list[tuple[int, bool]], _spread(items, marked))

    # Every test kept, each kind in its own order.
    assert sorted(spread) == list(enumerate(marks))
    chosen = [index for index, mark in spread if mark]
    rest = [index for index, mark in spread if not mark]
    assert chosen == sorted(chosen) and rest == sorted(rest)
    # Work stealing first splits the run into equal contiguous ranges, one per worker:
    # each holds its share of the marked tests, give or take one.
    size = len(spread) / workers
    for worker in range(workers):
        share = spread[round(worker * size) : round((worker + 1) * size)]
        held = sum(mark for _, mark in share)
        assert abs(held - len(chosen) * len(share) / max(len(spread), 1)) <= 1.5, (worker, spread)


def test_a_suite_started_with_sigint_ignored_starts_its_programs_with_it_at_its_default(
    pytestconfig: pytest.Config,
) -> None:
    # As a background job of a script starts the suite: its programs would inherit the
    # ignored signal, and a Ctrl-C a test sends before they install a handler is lost.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        pytest_configure(pytestconfig)
        said = subprocess.run(
            [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        signal.signal(signal.SIGINT, previous)
    assert said.strip() == str(signal.default_int_handler)
