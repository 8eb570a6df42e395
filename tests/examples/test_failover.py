"""A leader failover measured from the API server's request log (``orchestrate.failover``)."""

from __future__ import annotations

import json

from simulation.orchestrate import failover

from ersctl.testing.apiserver import RequestRecord


def _record(
    at: float, verb: str, resource: str, body: object = None, status: int = 200
) -> RequestRecord:
    return RequestRecord(
        method="PUT",
        path=f"/{resource}",
        query={},
        content_type="application/json",
        body=b"" if body is None else json.dumps(body).encode(),
        status=status,
        verb=verb,
        resource=resource,
        at=at,
    )


def _lease(at: float, holder: str, status: int = 200) -> RequestRecord:
    return _record(at, "update", "leases", {"spec": {"holderIdentity": holder}}, status)


def test_the_takeover_is_the_first_lease_write_by_another_holder_then_its_first_write() -> None:
    records = [
        _lease(101.0, "a"),
        _lease(102.0, "a"),  # the last renewal before the kill at 102.5
        _record(103.0, "get", "leases"),
        _lease(104.0, "b", status=409),  # refused: the Lease has not expired yet
        _lease(107.5, "b"),
        _record(107.6, "patch", "ephemeralrunnersets", {"spec": {"replicas": 3}}),  # listener
        _record(107.7, "create", "events", {"reason": "x"}),
        _record(108.0, "create", "ephemeralrunners", {"metadata": {"generateName": "r-"}}),
    ]

    measured = failover(records, killed_at=102.5, killed="a", origin=100.0)

    assert (measured.killed_at, measured.acquired_at, measured.first_write_at) == (2.5, 7.5, 8.0)


def test_a_lease_never_taken_over_has_no_takeover() -> None:
    records = [_lease(101.0, "a"), _lease(103.0, "a")]  # the holder's renewals only

    measured = failover(records, killed_at=102.0, killed="a", origin=100.0)

    assert (measured.acquired_at, measured.first_write_at) == (None, None)
