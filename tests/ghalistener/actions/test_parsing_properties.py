"""Whatever the service sends, parsing ends in a value or a MessageParseError, never a crash."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ghalistener.actions.errors import MessageParseError
from ghalistener.actions.messages import (
    decode_json,
    parse_acquired_ids,
    parse_jit_config,
    parse_message,
    parse_runner,
    parse_scale_set,
    parse_session,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)

VALID_JOB = {
    "messageType": "JobStarted",
    "runnerRequestId": 1,
    "runnerId": 2,
    "runnerName": "r",
    "queueTime": "2024-01-01T00:00:00Z",
    "requestLabels": ["x"],
}
VALID_MESSAGE = {
    "messageId": 1,
    "messageType": "RunnerScaleSetJobMessages",
    "body": json.dumps([VALID_JOB]),
    "statistics": {"totalAssignedJobs": 1},
}


def rejection(call: Callable[[], object]) -> str | None:
    """None when ``call`` parsed; the error text when it raised MessageParseError.

    Any other exception propagates and fails the test: that is the property.
    """
    try:
        call()
    except MessageParseError as exc:
        return str(exc)
    return None


PARSERS: list[Callable[[Any], object]] = [
    parse_message,
    parse_session,
    parse_scale_set,
    parse_jit_config,
    parse_runner,
    parse_acquired_ids,
]


@pytest.mark.parametrize("parse", [pytest.param(p, id=p.__name__) for p in PARSERS])
@settings(max_examples=150, deadline=None)
@given(value=json_values)
def test_arbitrary_json_is_parsed_or_rejected_clearly(
    parse: Callable[[Any], object], value: Any
) -> None:
    assert rejection(lambda: parse(value)) != ""


def _mutations(base: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """The valid object with one key dropped or replaced by any JSON value."""
    keys = st.sampled_from(sorted(base))
    dropped = keys.map(lambda k: {key: v for key, v in base.items() if key != k})
    replaced = st.tuples(keys, json_values).map(lambda kv: {**base, kv[0]: kv[1]})
    return dropped | replaced


@settings(max_examples=200, deadline=None)
@given(message=_mutations(VALID_MESSAGE), job=_mutations(VALID_JOB))
def test_a_damaged_message_or_job_is_parsed_or_rejected_clearly(
    message: dict[str, Any], job: dict[str, Any]
) -> None:
    for candidate in (message, {**VALID_MESSAGE, "body": json.dumps([job])}):
        assert rejection(partial(parse_message, candidate)) != ""


@settings(max_examples=200, deadline=None)
@given(content=st.binary(max_size=64))
def test_arbitrary_bytes_are_decoded_or_rejected_clearly(content: bytes) -> None:
    reason = rejection(lambda: decode_json(content, what="body"))
    assert reason is None or "body" in reason


def test_absurdly_deep_nesting_is_rejected_clearly() -> None:
    with pytest.raises(MessageParseError, match="not JSON"):
        decode_json(b"[" * 100_000 + b"]" * 100_000, what="message")


@settings(max_examples=200, deadline=None)
@given(job=_mutations(VALID_JOB) | json_values)
def test_a_damaged_job_never_fails_its_message_or_its_neighbours(job: Any) -> None:
    # Per job: the damaged entry is parsed, skipped with a reason, or (unknown type)
    # dropped; the valid neighbour is always there, and the message always parses.
    message = parse_message({**VALID_MESSAGE, "body": json.dumps([job, VALID_JOB])})
    assert len(message.jobs) + len(message.skipped) in (1, 2)
    assert message.jobs[-1].runner_request_id == 1
    assert all(reason.startswith("job message #0") for reason in message.skipped)
