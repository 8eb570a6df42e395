"""A leader election as a record of requests shows it: the embedded API server's
request log, or what candidates' clients sent (tests/kubeclient.SentRequests).

Candidates of the ``kubernetes.leaderelection`` library read the Lease every retry
period. The holder then writes it (its renewal); a follower that finds the Lease held
and unexpired leaves it alone, and that read is its refused campaign attempt. The log
does not say which process sent a request, but the holder's own requests come one
after another, a read and then its write: so between two writes, or before the first
or after the last, the holder made at most one of the reads, and any other read there
was a follower's. The one exception is the holder's first read after it acquired the
Lease, whose renewal ``ersctl.kube.leader`` skips: count from after that read (a
retry period after the acquisition).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

WRITES = ("create", "update", "patch")


class Request(Protocol):
    @property
    def verb(self) -> str: ...
    @property
    def resource(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...


class Requests(Protocol):
    def records(self) -> Sequence[Request]: ...


def refused_campaigns(log: Requests, lease: str, *, since: int = 0) -> int:
    """At least how many campaign attempts followers made on the Lease named ``lease``
    in the log's records after the first ``since`` (one fewer than a follower's own
    reads, when the log is a follower's own requests)."""
    found = reads = 0
    for record in log.records()[since:]:
        if record.resource != "leases" or record.name != lease:
            continue
        if record.verb == "get":
            reads += 1
        elif record.verb in WRITES:
            found += max(0, reads - 1)
            reads = 0
    return found + max(0, reads - 1)


class SentRecords(Protocol):
    """What one candidate's client sent (tests/kubeclient.SentRequests): with bodies."""

    def records(self) -> Sequence[Any]: ...


def lease_time(value: str) -> datetime:
    """A Lease's MicroTime (``renewTime``, ``acquireTime``)."""
    return datetime.fromisoformat(value)


def renewals(sent: SentRecords, lease: str, identity: str) -> list[datetime]:
    """The ``renewTime`` of every write of the Lease named ``lease`` that ``identity``
    made as its holder and the server accepted, in order (the acquiring one first)."""
    return [
        lease_time(record.body["spec"]["renewTime"])
        for record in sent.records()
        if record.resource == "leases"
        and record.name in (lease, None)
        and record.verb in WRITES
        and record.status in (200, 201)
        and isinstance(record.body, dict)
        and (record.body.get("spec") or {}).get("holderIdentity") == identity
    ]


def last_renewal(sent: SentRecords, lease: str, identity: str) -> datetime:
    """The ``renewTime`` of the last write of the Lease named ``lease`` that ``identity``
    made as its holder and the server accepted."""
    written = renewals(sent, lease, identity)
    assert written, f"{identity} never wrote the Lease as its holder"
    return written[-1]
