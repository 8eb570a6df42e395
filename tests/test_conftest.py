"""The suite's own scheduling: the long tests spread through the run, none lost."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import _spread


@given(st.lists(st.booleans(), max_size=60))
def test_the_marked_tests_are_spread_evenly_and_every_test_kept_in_order(
    marks: list[bool],
) -> None:
    items = cast(list[pytest.Item], list(enumerate(marks)))

    def marked(item: Any) -> bool:
        return bool(item[1])

    spread = cast(list[tuple[int, bool]], _spread(items, marked))

    assert sorted(spread) == list(enumerate(marks))
    chosen = [index for index, mark in spread if mark]
    rest = [index for index, mark in spread if not mark]
    assert chosen == sorted(chosen) and rest == sorted(rest)
    positions = [position for position, (_, mark) in enumerate(spread) if mark]
    if chosen:
        # Marked test i sits at i * len/marked: each worker's range of a work-stealing
        # split holds its share of them.
        step = len(items) / len(chosen)
        assert positions == [round(i * step) for i in range(len(chosen))]
