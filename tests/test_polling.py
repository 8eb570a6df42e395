"""The suite's one polling helper."""

from __future__ import annotations

import pytest

from tests.polling import eventually


def test_it_returns_the_first_truthy_value_the_check_gives() -> None:
    answers = iter([0, None, "", "found", "later"])

    assert eventually(lambda: next(answers), interval=0) == "found"


def test_a_timeout_names_what_was_awaited_and_the_last_value() -> None:
    with pytest.raises(AssertionError, match=r"^the lease: not reached within 0 s \(last: \[\]\)$"):
        eventually(list, timeout=0, what="the lease")


def test_the_check_runs_at_least_once_even_without_time_left() -> None:
    calls: list[str] = []

    def check() -> int:
        calls.append("called")
        return len(calls)

    assert eventually(check, timeout=0) == 1
