"""What happened in one simulation run, as plain records. Pure.

The orchestrator fills a :class:`Trace` from the logs of the systems it ran: job
times from the GitHub simulator's event log, runner lifetimes from the API server
(creation, the first sight of a deletion), published replicas and patch IDs from
timeline samples, request counts from the API server's request log. Everything the
report and the plot say is derived from these records, never assumed.

Times are seconds since the start of the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, kw_only=True)
class JobTrace:
    """One job: queued, maybe started on ``runner`` (its name), maybe completed."""

    name: str
    queued_at: float
    started_at: float | None = None
    completed_at: float | None = None
    runner: str | None = None
    result: str | None = None
    ended_at: float | None = None
    """When the service recorded its end, whatever the result (failed included)."""
    starts: int = 0
    """How often the service recorded it started (more than once: it ran twice)."""

    @property
    def wait(self) -> float | None:
        """Queued -> started, in seconds; None when it never started."""
        return None if self.started_at is None else self.started_at - self.queued_at


@dataclass(frozen=True, kw_only=True)
class RunnerTrace:
    """One EphemeralRunner (its runner registers under the same name)."""

    name: str
    created_at: float
    patch_id: int = 0
    registered_at: float | None = None
    deleted_at: float | None = None
    """When the deletion was requested (first sight of a deletionTimestamp)."""


class SeenRunner(Protocol):
    """What an agent remembers of a runner it saw."""

    name: str
    seen_at: float
    patch_id: int
    registered_at: float | None
    deleted_at: float | None


def runner_traces(runners: Iterable[SeenRunner], *, origin: float) -> tuple[RunnerTrace, ...]:
    """One record per runner, in the order they were seen, times relative to ``origin``."""

    def rel(value: float | None) -> float | None:
        return None if value is None else round(value - origin, 3)

    return tuple(
        RunnerTrace(
            name=r.name,
            created_at=round(r.seen_at - origin, 3),
            patch_id=r.patch_id,
            registered_at=rel(r.registered_at),
            deleted_at=rel(r.deleted_at),
        )
        for r in sorted(runners, key=lambda r: r.seen_at)
    )


@dataclass(frozen=True, kw_only=True)
class Sample:
    """The system at one instant: demand, the published desired state, runners by phase."""

    at: float
    assigned_jobs: int
    replicas: int
    patch_id: int
    marker: int
    pending: int = 0
    running: int = 0
    finished: int = 0
    deleting: int = 0

    @property
    def live_runners(self) -> int:
        return self.pending + self.running + self.finished + self.deleting


@dataclass(frozen=True, kw_only=True)
class ApiTraffic:
    """Requests the API server answered for the programs under test (not the agent)."""

    requests: int = 0
    writes: int = 0
    by_verb: tuple[tuple[str, int], ...] = ()
    writes_by_resource: tuple[tuple[str, int], ...] = ()
    """Writes per ``resource[/subresource]``, most first (e.g. events, runner creates)."""
    writes_by_kind: tuple[tuple[str, int], ...] = ()
    """Writes per :data:`WRITE_KINDS` entry (what the write was for), in that order."""
    refused_writes: int = 0
    """Writes the server refused (4xx: a resourceVersion conflict, a gone object, a
    failed JSON patch test): served, counted in :attr:`writes`, nothing stored."""


WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})

WRITE_KINDS: Mapping[str, str] = {
    "runner create": "one per job: an ephemeral runner runs one job",
    "runner delete": "the runner whose job ended goes (its registration with it)",
    "listener patches": "ARC's protocol: replicas and patch ID after a message that "
    "changes the count or starts or completes a job, and on empty long polls; the job "
    "recorded on its runner (a busy runner is never deleted)",
    "marker": "the guard: the patch ID a cleanup serviced, before its delete (#4642)",
    "set status": "the set's phase when it changes; a count ARC left, cleared once",
    "scale set status": "the scale set's phase, state or message when one changes",
    "events": "what the controllers decided (a repeat only counts up)",
    "finalizers": "added once per object, removed when it goes",
    "runner controller": "per runner: registration, Pod, JIT Secret, phase, finalizers "
    "(and the listener's Pod and config)",
    "leader election": "the leader's Lease renewals",
    "other": "setup: the scale set's annotations, its set, the listener's objects and "
    "its start-up check",
}
"""What a write was for, as :func:`write_kind` tells it from the request (in the
reports' order), and why it is needed."""

_JOB_FIELDS = frozenset({"jobRequestId", "jobId", "jobRepositoryName", "workflowRunId"})


def write_kind(
    verb: str,
    resource: str | None,
    subresource: str | None,
    body: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> str | None:
    """The :data:`WRITE_KINDS` entry of one request (None: not a write).

    Told apart by resource and body (a JSON patch read as the document its ``add`` and
    ``replace`` operations write): a set status patch holding the marker is the
    guard's marker write; a set patch of ``spec.replicas``/``patchID`` and a runner status
    patch holding job fields are the listener's; Secrets, Pods and other runner writes
    are the runner controller's."""
    if verb not in WRITE_VERBS:
        return None
    if not isinstance(body, Mapping):
        body = _written_document(body)
    raw_status = body.get("status")
    status: Mapping[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    match resource, subresource:
        case "events", _:
            return "events"
        case "leases", _:
            return "leader election"
        case "ephemeralrunners", None if verb in ("create", "delete"):
            return "runner create" if verb == "create" else "runner delete"
        case "ephemeralrunnersets", "status":
            return "marker" if "finishedRunnerCleanupPatchID" in status else "set status"
        case "ephemeralrunnersets", None if verb == "patch" and _listener_spec(body):
            return "listener patches"
        case "autoscalingrunnersets", "status":
            return "scale set status"
        case (("ephemeralrunnersets" | "autoscalingrunnersets"), None) if _only_finalizers(body):
            return "finalizers"
        case "ephemeralrunners", "status" if _JOB_FIELDS & set(status):
            return "listener patches"
        case (("ephemeralrunners" | "secrets" | "pods"), _):
            return "runner controller"
    return "other"


def _written_document(operations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for operation in operations:
        if operation.get("op") not in ("add", "replace"):
            continue
        *parents, leaf = str(operation.get("path", "")).strip("/").split("/")
        node = document
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = operation.get("value")
    return document


def _listener_spec(body: Mapping[str, Any]) -> bool:
    spec = body.get("spec")
    return isinstance(spec, dict) and bool({"replicas", "patchID"} & set(spec))


def _only_finalizers(body: Mapping[str, Any]) -> bool:
    metadata = body.get("metadata")
    return set(body) == {"metadata"} and isinstance(metadata, dict) and "finalizers" in metadata


def count_traffic(
    requests: Iterable[tuple[str, str]],
    *,
    write_kinds: Iterable[str | None] = (),
    refused_writes: int = 0,
) -> ApiTraffic:
    """Count ``(verb, resource)`` requests; writes are creates, updates, patches, deletes.
    ``write_kinds`` (from :func:`write_kind`, one per request) breaks the writes down;
    ``refused_writes`` of them the server refused (:attr:`ApiTraffic.refused_writes`)."""
    verbs: Counter[str] = Counter()
    written: Counter[str] = Counter()
    for verb, resource in requests:
        verbs[verb] += 1
        if verb in WRITE_VERBS:
            written[resource] += 1
    kinds = Counter(kind for kind in write_kinds if kind is not None)
    return ApiTraffic(
        requests=verbs.total(),
        writes=written.total(),
        by_verb=tuple(sorted(verbs.items())),
        writes_by_resource=tuple(written.most_common()),
        writes_by_kind=tuple((kind, kinds[kind]) for kind in WRITE_KINDS if kinds[kind]),
        refused_writes=refused_writes,
    )


@dataclass(frozen=True, kw_only=True)
class Mark:
    """Something worth pointing at on the timeline (a fault, a restart)."""

    at: float
    label: str


@dataclass(frozen=True, kw_only=True)
class Failover:
    """One SIGKILL of the leading controller replica, and the takeover after it."""

    killed_at: float
    acquired_at: float | None = None
    """When another identity first wrote the Lease as its holder (API server's clock)."""
    first_write_at: float | None = None
    """The first controller write after that (not the Lease, an Event or the listener's)."""


@dataclass(frozen=True, kw_only=True)
class SoakTrace:
    """What a soak records beyond a simulation's trace (times since the start)."""

    failed_jobs: frozenset[str] = frozenset()
    """Jobs (names) the fault injector failed by failing their runner's Pod mid-job."""
    injected_runners: frozenset[str] = frozenset()
    """Runners whose Pods the fault injector failed (at start or mid-job)."""
    failed_runner_ages: tuple[tuple[str, float], ...] = ()
    """Per runner seen Failed: the most seconds after its failure it was still seen so."""
    failovers: tuple[Failover, ...] = ()
    stuck: tuple[str, ...] = ()
    """Objects still carrying a deletionTimestamp once the run drained."""
    replica_exits: tuple[str, ...] = ()
    """Controller replica exits the injector did not cause (each started again)."""
    drained: bool = True
    """Every job done and the set back at its minimum before the drain deadline."""
    failed_runner_ttl: float = 0.0
    lease_duration: float = 0.0
    zombie_ages: tuple[tuple[str, float], ...] = ()
    """Per runner ever seen without a running Pod or not online at GitHub while live:
    its longest such stretch (``simulation.pods.PodAgent.zombie_ages``)."""
    health_deadline: float = 0.0
    """The longest wait the runner health rules were given (timeouts and backoff)."""
    listener_takeover: float = 0.0
    """The longest a SIGKILLed listener's successor may take to hold the message
    session after its kill (``simulation.soak.LISTENER_TAKEOVER``; 0: no such bound,
    as in ``simulate.py``)."""


@dataclass(frozen=True, kw_only=True)
class Trace:
    """Everything one run recorded."""

    label: str
    seed: int
    min_runners: int
    max_runners: int
    elapsed: float
    jobs: tuple[JobTrace, ...]
    runners: tuple[RunnerTrace, ...]
    samples: tuple[Sample, ...] = ()
    api: ApiTraffic = field(default_factory=ApiTraffic)
    marks: tuple[Mark, ...] = ()
    final_replicas: int = 0
    final_runners: int = 0
    """Runners left at the end, deleting ones included."""
    deleted_in_log: frozenset[str] = frozenset()
    """Runners the API server's request log shows a successful DELETE for."""
    teardown: tuple[str, ...] | None = None
    """What was left after the AutoscalingRunnerSet's deletion (None: not deleted)."""
    cluster: tuple[str, tuple[str, ...]] | None = None
    """On an existing cluster: the run's namespace, and what was still there after its
    removal (None: the embedded server, thrown away)."""
    setup: float | None = None
    """Seconds from applying the AutoscalingRunnerSet until the controller, the scale set,
    the set and the listener were ready (None without one); job times count from then."""
    soak: SoakTrace | None = None


def jobs_by_runner(jobs: Iterable[JobTrace]) -> dict[str, list[JobTrace]]:
    by_runner: dict[str, list[JobTrace]] = {}
    for job in jobs:
        if job.runner is not None:
            by_runner.setdefault(job.runner, []).append(job)
    return by_runner


def wasted_runners(trace: Trace) -> list[RunnerTrace]:
    """Runners that registered and were deleted without ever being given a job."""
    busy = jobs_by_runner(trace.jobs)
    return [
        runner
        for runner in trace.runners
        if runner.registered_at is not None
        and runner.deleted_at is not None
        and runner.name not in busy
    ]


def unseen_deletions(trace: Trace) -> list[str]:
    """Runners deleted per the request log whose deletion no runner record shows.

    Empty when the deletion times that :func:`busy_deletions` judges cover every
    deletion the API server answered: a cross-check of two independent sources.
    """
    seen = {runner.name for runner in trace.runners if runner.deleted_at is not None}
    return sorted(trace.deleted_in_log - seen)


def busy_deletions(trace: Trace) -> list[tuple[RunnerTrace, JobTrace]]:
    """Runners whose deletion was requested while they were running a job.

    A job is running from its start until the service recorded its end (forever when it
    never ended); a deletion at or after the end is the normal cleanup.
    """
    busy = jobs_by_runner(trace.jobs)
    found: list[tuple[RunnerTrace, JobTrace]] = []
    for runner in trace.runners:
        if runner.deleted_at is None:
            continue
        for job in busy.get(runner.name, []):
            started = job.started_at if job.started_at is not None else float("inf")
            end = job.ended_at if job.ended_at is not None else job.completed_at
            ended = end if end is not None else float("inf")
            if started <= runner.deleted_at < ended:
                found.append((runner, job))
    return found
