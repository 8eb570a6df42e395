"""The service's JSON <-> ``ghalistener.actions.types`` values.

Every function raises ``MessageParseError`` naming the field that is missing or has
the wrong type; none of them includes secret values in the error text. The one
exception is a queue message's job list: job messages are parsed one by one and a bad
one is reported in ``RunnerScaleSetMessage.skipped`` instead (see ``parse_message``).
Pure: no I/O.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from ghalistener.actions.errors import MessageParseError
from ghalistener.actions.types import (
    RUNNER_SCALE_SET_JOB_MESSAGES,
    JitConfig,
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobMessage,
    JobStarted,
    Label,
    MessageId,
    RunnerGroup,
    RunnerID,
    RunnerReference,
    RunnerRequestId,
    RunnerScaleSet,
    RunnerScaleSetMessage,
    RunnerScaleSetSession,
    RunnerSetting,
    ScaleSetId,
    SessionId,
    Statistics,
)

T = TypeVar("T")
JsonObject = dict[str, Any]
BOM = b"\xef\xbb\xbf"
_JOB_KINDS = frozenset({"JobAvailable", "JobAssigned", "JobStarted", "JobCompleted"})


def decode_json(content: bytes, *, what: str) -> Any:
    """Decode a response body (a leading UTF-8 BOM is stripped)."""
    if content.startswith(BOM):
        content = content[len(BOM) :]
    try:
        return json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MessageParseError(
            f"{what}: the body is not JSON ({exc.__class__.__name__})"
        ) from None


def as_object(value: Any, *, what: str) -> JsonObject:
    """``value`` as a JSON object, or MessageParseError."""
    if not isinstance(value, dict):
        raise MessageParseError(f"{what}: expected a JSON object, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _field(obj: JsonObject, name: str, kind: type[T], *, what: str, default: T | None = None) -> T:
    value = obj.get(name)
    if type(value) is kind:  # what json.loads makes (no bool for int): checked first, as a
        return value  # 50-job message has 700 fields and this was most of its parsing
    if value is None:
        if default is not None:
            return default
        raise MessageParseError(f"{what}: field {name!r} is missing")
    # bool is an int in Python; the wire never means one for the other.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise MessageParseError(
            f"{what}: field {name!r} must be {kind.__name__}, got {_kind(value)}"
        )
    return value


def _time(obj: JsonObject, name: str, *, what: str) -> datetime | None:
    value = obj.get(name)
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise MessageParseError(f"{what}: field {name!r} must be an RFC 3339 time")
    try:
        return _rfc3339(value)
    except ValueError:
        raise MessageParseError(f"{what}: field {name!r} is not an RFC 3339 time") from None


@functools.lru_cache(maxsize=256)
def _rfc3339(value: str) -> datetime | None:
    """The time, None for Go's zero time ("not set"); ValueError when it is none.

    Cached: each job message carries four times, most of them the zero time or a time
    its neighbours carry too."""
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return None if parsed.year <= 1 else parsed


def parse_statistics(value: Any, *, what: str = "statistics") -> Statistics:
    """Decode a Statistics object; absent counters are 0."""
    obj = as_object(value, what=what)

    def count(name: str) -> int:
        return _field(obj, name, int, what=what, default=0)

    return Statistics(
        total_available_jobs=count("totalAvailableJobs"),
        total_acquired_jobs=count("totalAcquiredJobs"),
        total_assigned_jobs=count("totalAssignedJobs"),
        total_running_jobs=count("totalRunningJobs"),
        total_registered_runners=count("totalRegisteredRunners"),
        total_busy_runners=count("totalBusyRunners"),
        total_idle_runners=count("totalIdleRunners"),
    )


def parse_scale_set(value: Any, *, what: str = "runner scale set") -> RunnerScaleSet:
    """Decode a RunnerScaleSet (``id`` and ``name`` required)."""
    obj = as_object(value, what=what)
    labels = _field(obj, "labels", list, what=what, default=[])
    setting = as_object(obj.get("runnerSetting") or {}, what=f"{what} runnerSetting")
    stats = obj.get("statistics")
    created = _time(obj, "createdOn", what=what)
    return RunnerScaleSet(
        id=ScaleSetId(_field(obj, "id", int, what=what)),
        name=_field(obj, "name", str, what=what),
        runner_group_id=_field(obj, "runnerGroupId", int, what=what, default=0),
        runner_group_name=_field(obj, "runnerGroupName", str, what=what, default=""),
        labels=tuple(_label(item, what=f"{what} label") for item in labels),
        runner_setting=RunnerSetting(
            ephemeral=bool(setting.get("ephemeral", True)),
            disable_update=bool(setting.get("disableUpdate", False)),
        ),
        enabled=obj.get("enabled") if isinstance(obj.get("enabled"), bool) else None,
        created_on=created,
        statistics=None if stats is None else parse_statistics(stats, what=f"{what} statistics"),
    )


def _label(value: Any, *, what: str) -> Label:
    obj = as_object(value, what=what)
    return Label(
        name=_field(obj, "name", str, what=what),
        type=_field(obj, "type", str, what=what, default="System"),
    )


def parse_list(value: Any, item: Callable[[Any], T], *, what: str) -> list[T]:
    """Decode the service's ``{"count", "value": [...]}`` envelope."""
    obj = as_object(value, what=what)
    items = _field(obj, "value", list, what=what, default=[])
    return [item(entry) for entry in items]


def parse_runner_group(value: Any) -> RunnerGroup:
    """Decode a runner group."""
    what = "runner group"
    obj = as_object(value, what=what)
    return RunnerGroup(
        id=_field(obj, "id", int, what=what),
        name=_field(obj, "name", str, what=what),
        size=_field(obj, "size", int, what=what, default=0),
        is_default_group=bool(obj.get("isDefaultGroup", False)),
    )


def parse_session(value: Any) -> RunnerScaleSetSession:
    """Decode a message session (queue URL and token required)."""
    what = "message session"
    obj = as_object(value, what=what)
    scale_set = obj.get("runnerScaleSet")
    stats = obj.get("statistics")
    return RunnerScaleSetSession(
        session_id=SessionId(_field(obj, "sessionId", str, what=what)),
        owner_name=_field(obj, "ownerName", str, what=what, default=""),
        runner_scale_set=None if scale_set is None else parse_scale_set(scale_set),
        message_queue_url=_field(obj, "messageQueueUrl", str, what=what),
        message_queue_access_token=_field(obj, "messageQueueAccessToken", str, what=what),
        statistics=Statistics() if stats is None else parse_statistics(stats),
    )


def parse_jit_config(value: Any) -> JitConfig:
    """Decode a generatejitconfig answer."""
    what = "JIT config"
    obj = as_object(value, what=what)
    runner = as_object(obj.get("runner"), what=f"{what} runner")
    return JitConfig(
        runner_id=RunnerID(_field(runner, "id", int, what=f"{what} runner")),
        runner_name=_field(runner, "name", str, what=f"{what} runner"),
        runner_scale_set_id=ScaleSetId(
            _field(runner, "runnerScaleSetId", int, what=f"{what} runner", default=0)
        ),
        encoded_jit_config=_field(obj, "encodedJITConfig", str, what=what),
    )


def parse_runner(value: Any) -> RunnerReference:
    """Decode a runner ("agent") reference."""
    what = "runner"
    obj = as_object(value, what=what)
    status = obj.get("status")
    return RunnerReference(
        id=RunnerID(_field(obj, "id", int, what=what)),
        name=_field(obj, "name", str, what=what),
        runner_scale_set_id=ScaleSetId(_field(obj, "runnerScaleSetId", int, what=what, default=0)),
        busy=bool(obj.get("busy", False)),
        status=status if isinstance(status, str) else "",
    )


def parse_acquired_ids(value: Any) -> list[int]:
    """Decode acquire-jobs' ``{"count", "value": [ids]}``."""
    what = "acquired jobs"
    ids = parse_list(value, lambda v: v, what=what)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise MessageParseError(f"{what}: field 'value' must hold integers")
    return ids


def parse_message(value: Any) -> RunnerScaleSetMessage:
    """Decode a queue message; its ``body`` is a JSON *string* holding the job list.

    The envelope must be usable: messageType RunnerScaleSetJobMessages, an integer
    messageId and statistics, else MessageParseError. The body is parsed one job
    message at a time: a job message that cannot be parsed (or a body that is not a
    JSON list) does not fail the message; its reason lands in ``skipped``, so the
    rest is handled and the message can be acked instead of being redelivered (and
    failing) forever. An empty body means no jobs; job messages of unknown type are
    skipped silently (the service may add kinds).
    """
    what = "message"
    obj = as_object(value, what=what)
    message_type = _field(obj, "messageType", str, what=what)
    if message_type != RUNNER_SCALE_SET_JOB_MESSAGES:
        raise MessageParseError(
            f"{what}: unsupported messageType {message_type[:64]!r} "
            f"(expected {RUNNER_SCALE_SET_JOB_MESSAGES!r})"
        )
    message_id = _field(obj, "messageId", int, what=what)
    if "statistics" not in obj:
        raise MessageParseError(f"{what}: field 'statistics' is missing")
    statistics = parse_statistics(obj["statistics"], what=f"{what} statistics")
    try:
        body = _field(obj, "body", str, what=what, default="")
        jobs, skipped = parse_job_messages(body)
    except MessageParseError as exc:
        jobs, skipped = [], [str(exc)]
    return RunnerScaleSetMessage(
        message_id=MessageId(message_id),
        statistics=statistics,
        jobs=tuple(jobs),
        skipped=tuple(skipped),
        message_type=message_type,
    )


def parse_job_messages(body: str) -> tuple[list[JobMessage], list[str]]:
    """Decode the job list inside a message body, each entry on its own.

    Returns the parsed jobs and, for every entry that could not be parsed, the reason
    (it names the entry and the field, never a value). Raises MessageParseError only
    when the body as a whole is not a JSON list; an empty string is no jobs.
    """
    if not body.strip():
        return [], []
    decoded = decode_json(body.encode("utf-8"), what="message body")
    if not isinstance(decoded, list):
        raise MessageParseError(f"message body: expected a JSON list, got {_kind(decoded)}")
    jobs: list[JobMessage] = []
    skipped: list[str] = []
    for index, entry in enumerate(decoded):
        try:
            job = parse_job_message(entry, what=f"job message #{index}")
        except MessageParseError as exc:
            skipped.append(str(exc))
            continue
        if job is not None:
            jobs.append(job)
    return jobs, skipped


def parse_job_message(value: Any, *, what: str = "job message") -> JobMessage | None:
    """Decode one job message; None for a messageType we do not know."""
    obj = as_object(value, what=what)
    kind = _field(obj, "messageType", str, what=what)
    if kind not in _JOB_KINDS:
        return None
    common = _common_job_fields(obj, what=f"{what} ({kind})")
    if kind == "JobAvailable":
        url = _field(obj, "acquireJobUrl", str, what=what, default="")
        return JobAvailable(acquire_job_url=url, **common)
    if kind == "JobAssigned":
        return JobAssigned(**common)
    if kind == "JobStarted":
        return JobStarted(
            runner_id=RunnerID(_field(obj, "runnerId", int, what=what)),
            runner_name=_field(obj, "runnerName", str, what=what),
            **common,
        )
    if kind == "JobCompleted":
        return JobCompleted(
            result=_field(obj, "result", str, what=what, default=""),
            runner_id=RunnerID(_field(obj, "runnerId", int, what=what, default=0)),
            runner_name=_field(obj, "runnerName", str, what=what, default=""),
            **common,
        )
    return None


def _common_job_fields(obj: JsonObject, *, what: str) -> dict[str, Any]:
    labels = _field(obj, "requestLabels", list, what=what, default=[])
    return {
        "runner_request_id": RunnerRequestId(_field(obj, "runnerRequestId", int, what=what)),
        "repository_name": _field(obj, "repositoryName", str, what=what, default=""),
        "owner_name": _field(obj, "ownerName", str, what=what, default=""),
        "job_id": _field(obj, "jobId", str, what=what, default=""),
        "job_workflow_ref": _field(obj, "jobWorkflowRef", str, what=what, default=""),
        "job_display_name": _field(obj, "jobDisplayName", str, what=what, default=""),
        "workflow_run_id": _field(obj, "workflowRunId", int, what=what, default=0),
        "event_name": _field(obj, "eventName", str, what=what, default=""),
        "request_labels": tuple(str(label) for label in labels),
        "queue_time": _time(obj, "queueTime", what=what),
        "scale_set_assign_time": _time(obj, "scaleSetAssignTime", what=what),
        "runner_assign_time": _time(obj, "runnerAssignTime", what=what),
        "finish_time": _time(obj, "finishTime", what=what),
    }


def encode_scale_set(scale_set: RunnerScaleSet) -> JsonObject:
    """The wire form of a scale set for create/update (labels default to type System)."""
    return {
        "name": scale_set.name,
        "runnerGroupId": scale_set.runner_group_id,
        "labels": [
            {"name": label.name, "type": label.type or "System"} for label in scale_set.labels
        ],
        "runnerSetting": {
            "ephemeral": scale_set.runner_setting.ephemeral,
            "disableUpdate": scale_set.runner_setting.disable_update,
        },
        **({"id": scale_set.id} if scale_set.id else {}),
        **({"enabled": scale_set.enabled} if scale_set.enabled is not None else {}),
    }
