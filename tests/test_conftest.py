"""The suite's own scheduling: the long tests spread through the run, none lost."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import _spread


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
