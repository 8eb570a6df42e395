"""Expectations bookkeeping (pure): when a recorded create or delete counts as observed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ersctl import api
from ersctl.ephemeralrunnerset.classification import classify
from ersctl.ephemeralrunnerset.expectations import (
    DEFAULT_TTL,
    Expectations,
    ExpectingWriter,
    Pending,
    confirm_runners,
)
from ersctl.kube.errors import KubeError
from tests.clock import FakeClock
from tests.ersctl.ephemeralrunnerset.objects import runner

KEY = "arc/runners"
UID = "uid-1"


def named(name: str, *, deleting: bool = False, phase: str | None = None) -> api.EphemeralRunner:
    return runner(phase, name=name, deleting=deleting)


def pending_after(
    *, created: tuple[str, ...] = (), deleted: tuple[str, ...] = (), listing: list[Any]
) -> Pending:
    expectations = Expectations()
    for name in created:
        expectations.expect_created(KEY, UID, named(name))
    for name in deleted:
        expectations.expect_deleted(KEY, UID, name)
    return expectations.observe(KEY, UID, listing)


@pytest.mark.parametrize(
    ("created", "deleted", "listing", "still_created", "still_deleted"),
    [
        pytest.param((), (), [], set(), set(), id="nothing recorded: nothing pending"),
        pytest.param(("a", "b"), (), [named("a")], {"b"}, set(), id="a create waits until listed"),
        pytest.param(("a",), (), [named("a", phase="Succeeded")], set(), set(),
                     id="a create listed in any state is observed"),
        pytest.param(("a",), (), [named("a", deleting=True)], set(), set(),
                     id="a create listed already deleting is observed"),
        pytest.param((), ("a",), [named("a", phase="Running")], set(), {"a"},
                     id="a delete waits while the runner is listed live"),
        pytest.param((), ("a",), [named("a", deleting=True)], set(), set(),
                     id="a delete is observed by a deletionTimestamp"),
        pytest.param((), ("a",), [], set(), set(), id="a delete is observed by absence"),
        pytest.param(("a",), ("a",), [], {"a"}, {"a"},
                     id="absence proves nothing while the create is unseen too"),
        pytest.param(("a",), ("a",), [named("a", deleting=True)], set(), set(),
                     id="created then deleted, both seen at once"),
    ],
)  # fmt: skip
def test_what_a_listing_leaves_pending(
    created: tuple[str, ...],
    deleted: tuple[str, ...],
    listing: list[api.EphemeralRunner],
    still_created: set[str],
    still_deleted: set[str],
) -> None:
    pending = pending_after(created=created, deleted=deleted, listing=listing)

    assert {r.name for r in pending.created} == still_created
    assert pending.deleted == still_deleted
    assert pending.satisfied == (not still_created and not still_deleted)


def test_a_pending_create_is_handed_back_as_the_server_returned_it() -> None:
    expectations = Expectations()
    created = runner(name="a", patch_id=7)
    expectations.expect_created(KEY, UID, created)

    (pending,) = expectations.observe(KEY, UID, []).created
    assert pending.patch_id == 7
    pending.annotations[api.PATCH_ID_ANNOTATION] = "99"  # a caller's copy, not the record

    assert expectations.observe(KEY, UID, []).created[0].patch_id == 7


@pytest.mark.parametrize(
    ("elapsed", "pending"),
    [
        pytest.param(DEFAULT_TTL - 1, True, id="within the timeout: still pending"),
        pytest.param(DEFAULT_TTL, False, id="at the timeout: the cache is believed again"),
    ],
)
def test_an_expectation_the_cache_never_confirms_expires(elapsed: float, pending: bool) -> None:
    clock = FakeClock()
    expectations = Expectations(clock=clock)
    expectations.expect_created(KEY, UID, named("a"))
    expectations.expect_deleted(KEY, UID, "b")
    clock.now += elapsed

    assert expectations.unsatisfied(KEY) is pending
    result = expectations.observe(KEY, UID, [named("b", phase="Running")])

    assert (not result.satisfied) is pending
    assert expectations.unsatisfied(KEY) is pending


def test_the_timeout_runs_from_each_record() -> None:
    clock = FakeClock()
    expectations = Expectations(ttl=10, clock=clock)
    expectations.expect_created(KEY, UID, named("old"))
    clock.now += 6
    expectations.expect_created(KEY, UID, named("new"))
    clock.now += 6

    assert {r.name for r in expectations.observe(KEY, UID, []).created} == {"new"}


def test_a_recreated_set_does_not_inherit_its_predecessors_expectations() -> None:
    expectations = Expectations()
    expectations.expect_created(KEY, "old-uid", named("a"))

    assert expectations.observe(KEY, "new-uid", []).satisfied
    assert not expectations.unsatisfied(KEY)


def test_a_record_for_a_new_uid_replaces_the_old_ones() -> None:
    expectations = Expectations()
    expectations.expect_created(KEY, "old-uid", named("a"))
    expectations.expect_created(KEY, "new-uid", named("b"))

    assert {r.name for r in expectations.observe(KEY, "new-uid", []).created} == {"b"}


def test_sets_are_kept_apart_and_forget_drops_one() -> None:
    expectations = Expectations()
    expectations.expect_created(KEY, UID, named("a"))
    expectations.expect_created("arc/other", "uid-2", named("b"))

    expectations.forget(KEY)

    assert not expectations.unsatisfied(KEY)
    assert expectations.unsatisfied("arc/other")
    assert [r.name for r in expectations.observe("arc/other", "uid-2", []).created] == ["b"]


def test_satisfied_expectations_are_dropped_after_the_listing_that_shows_them() -> None:
    expectations = Expectations()
    expectations.expect_created(KEY, UID, named("a"))
    expectations.observe(KEY, UID, [named("a")])

    # Seen once is enough: the runner leaving the listing later is not a pending create.
    assert expectations.observe(KEY, UID, []).satisfied
    assert not expectations.unsatisfied(KEY)


def test_a_runner_named_as_deleting_is_classified_deleting_without_a_timestamp() -> None:
    live = runner("Running", name="going", runner_id=1)
    states = classify(
        [live, runner("Running", runner_id=2)], applied_revision=0, deleting={"going"}
    )

    assert [r.name for r in states.deleting] == ["going"]
    assert states.total == 1 and states.scale_up_total == 2


# -- the writer that records -----------------------------------------------------------


@dataclass
class FakeWriter:
    """An in-memory ``ersctl.ephemeralrunnerset.ports.Writer`` (only the runner calls matter here)."""

    fail_delete: bool = False
    counter: int = 0
    deleted: list[str] = field(default_factory=list)

    def create_runner(self, body: dict[str, Any]) -> api.EphemeralRunner:
        self.counter += 1
        doc = {**body, "metadata": {**body["metadata"], "name": f"r-{self.counter}"}}
        return api.EphemeralRunner(doc)

    def delete_runner(self, runner: api.EphemeralRunner) -> None:
        if self.fail_delete:
            raise KubeError(f"delete {runner.name}", status=500, reason="InternalError")
        self.deleted.append(runner.name)

    def patch_ers(self, ers: Any, patch: dict[str, Any]) -> Any:
        raise AssertionError("not used")

    def patch_ers_status(self, ers: Any, patch: dict[str, Any]) -> Any:
        raise AssertionError("not used")

    def patch_runner(self, runner: Any, patch: dict[str, Any]) -> Any:
        raise AssertionError("not used")

    def create_secret(self, body: dict[str, Any]) -> Any:
        raise AssertionError("not used")

    def patch_secret(self, namespace: str, name: str, patch: dict[str, Any]) -> Any:
        raise AssertionError("not used")

    def delete_secret(self, namespace: str, name: str) -> None:
        raise AssertionError("not used")


def owned_body(owner: str = "runners", uid: str = UID) -> dict[str, Any]:
    ref = {"apiVersion": api.API_VERSION, "kind": api.ERS_KIND, "name": owner, "uid": uid,
           "controller": True}  # fmt: skip
    return {"metadata": {"generateName": f"{owner}-runner-", "namespace": "arc",
                         "ownerReferences": [ref]}}  # fmt: skip


def test_the_writer_records_creates_and_deletes_for_the_controlling_set() -> None:
    expectations = Expectations()
    writer = ExpectingWriter(FakeWriter(), expectations)

    created = writer.create_runner(owned_body())
    writer.delete_runner(
        api.EphemeralRunner({"metadata": {**owned_body()["metadata"], "name": "old"}})
    )

    pending = expectations.observe(KEY, UID, [named("old", phase="Running")])
    assert [r.name for r in pending.created] == [created.name]
    assert pending.deleted == {"old"}


def test_the_writer_records_no_delete_the_server_refused() -> None:
    expectations = Expectations()
    writer = ExpectingWriter(FakeWriter(fail_delete=True), expectations)
    doomed = api.EphemeralRunner({"metadata": {**owned_body()["metadata"], "name": "a"}})

    with pytest.raises(KubeError):
        writer.delete_runner(doomed)

    assert not expectations.unsatisfied(KEY), "a refused delete must be retried, not awaited"


def test_the_writer_records_nothing_for_a_runner_without_a_controlling_set() -> None:
    expectations = Expectations()
    writer = ExpectingWriter(FakeWriter(), expectations)

    writer.create_runner({"metadata": {"generateName": "stray-", "namespace": "arc"}})

    assert not expectations.unsatisfied(KEY)
    assert expectations.observe("arc/stray", "", []).satisfied


def test_a_create_unseen_past_confirm_after_is_overdue_until_confirmed() -> None:
    clock = FakeClock()
    expectations = Expectations(confirm_after=10, clock=clock)
    expectations.expect_created(KEY, UID, named("a"))

    clock.now += 9
    assert expectations.observe(KEY, UID, []).overdue == frozenset()
    clock.now += 1
    assert expectations.observe(KEY, UID, []).overdue == {"a"}

    expectations.confirm_created(KEY, UID, "a", exists=True)
    assert expectations.observe(KEY, UID, []).overdue == frozenset(), "asked again later"
    clock.now += 10
    assert expectations.observe(KEY, UID, []).overdue == {"a"}


def test_a_create_confirmed_gone_drops_it_and_any_delete_of_it() -> None:
    expectations = Expectations(confirm_after=10)
    expectations.expect_created(KEY, UID, named("a"))
    expectations.expect_deleted(KEY, UID, "a")

    expectations.confirm_created(KEY, UID, "a", exists=False)

    assert expectations.observe(KEY, UID, []).satisfied
    assert not expectations.unsatisfied(KEY)


@dataclass
class Listing:
    """A reader whose ``list_owned_runners`` answers ``runners`` (cache or API reader)."""

    runners: list[api.EphemeralRunner]

    def list_owned_runners(self, ers: api.EphemeralRunnerSet) -> list[api.EphemeralRunner]:
        return list(self.runners)


def test_confirming_counts_live_runners_the_cache_lacks_and_cached_ones_gone_live() -> None:
    # A previous leader created c and d (the cache shows neither yet) and deleted a.
    ers = api.EphemeralRunnerSet({"metadata": {"name": "runners", "namespace": "arc", "uid": UID}})
    cached = [named("a"), named("b")]
    live = [named("b"), named("c"), named("d", deleting=True)]
    expectations = Expectations()

    confirm_runners(Listing(cached), Listing(live), expectations, ers)  # type: ignore[arg-type]
    pending = expectations.observe(KEY, UID, cached)

    assert {r.name for r in pending.created} == {"c", "d"}
    assert pending.deleted == {"a"}
    assert {r.name for r in pending.created if r.is_deleting} == {"d"}
