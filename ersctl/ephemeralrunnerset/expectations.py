"""Expectations: the runner writes this controller made that its cache has not shown yet.

Pure bookkeeping (no I/O), in the spirit of the ReplicaSet controller's expectations
in Kubernetes. The informer cache learns about the controller's own creates and
deletes through watch events that arrive one by one and on their own schedule, so a
reconcile can run on a listing that lacks runners it just created (it would create
them again: runners nobody asked for) or still shows runners it just deleted as live
(it would remove them from the service and delete them again, or count them and
scale down another one).

Keyed by EphemeralRunnerSet key (``namespace/name``) and tied to the set's uid, so a
set deleted and recreated under the same name never inherits its predecessor's
expectations. Per set:

- a **create** is pending until the cache listing holds a runner of that name (any
  state: seen once is enough);
- a **delete** is pending until the cached runner of that name carries a
  ``deletionTimestamp`` or is absent, except that "absent" does not count while the
  create of that same runner is itself still pending (the cache has not seen it yet);
- either expires ``ttl`` seconds after it was recorded (5 minutes, as in Kubernetes),
  so a watch event that is never delivered cannot wedge a set: after that the cache is
  believed again. An expiry is logged as a warning, since it means the cache lost an
  event;
- a create still unseen ``confirm_after`` seconds after it was recorded (or last
  confirmed) is *overdue*: far beyond normal watch latency, so the runner may have
  been deleted before the cache ever saw it (a relist skips a short-lived object) and
  would otherwise block scale-up until the ttl. The caller asks the API server
  (one GET by name) and reports back with :meth:`Expectations.confirm_created`: gone
  drops the expectation, present keeps it for another ``confirm_after``.

The judgement is by level (the listing a reconcile reads), not by watch event, so an
event that arrives before the write is recorded is not lost. Thread-safe: creates are
recorded from several threads of one scale-up at once.

Expectations live in memory, so a new leader knows none of the old leader's creates:
:func:`confirm_runners` (before a process's first scale-up of a set) records the
runners an uncached list shows and the cache does not as expected creates, and the
cached runners the list shows gone or deleting as expected deletes. From then on the
rules above apply to them as to this process's own writes.

The reconciler feeds them through :class:`ExpectingWriter`, a Writer that records every
runner create and delete the API server accepted (a failed delete must not be taken for
one in flight), and every set write's answer (``ersctl.kube.ownwrites``), so no
path that writes has to remember to; and it reads every runner listing through :func:`owned_runners`, which applies them. The set a
runner belongs to is its controller ownerReference (``namespace/name`` and uid), which
every runner this controller creates carries.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from ersctl.api import ERS_KIND, EphemeralRunner, EphemeralRunnerSet
from ersctl.ephemeralrunnerset.ports import ApiReader, CachedReader, Writer
from ersctl.kube.ownwrites import OwnWrites

log = logging.getLogger(__name__)

DEFAULT_TTL: Final = 300.0
"""Seconds after which an unobserved expectation is dropped (Kubernetes' ExpectationsTimeout)."""
DEFAULT_CONFIRM_AFTER: Final = 10.0
"""Seconds an unseen create waits before the API server is asked whether it still exists."""


@dataclass(frozen=True, kw_only=True)
class Pending:
    """One set's writes the cache does not show yet, as of one listing.

    ``created``: runners as the API server returned them on create, not yet listed.
    ``deleted``: names of runners deleted whose listing still shows them live (or
    does not show their create yet).
    """

    created: tuple[EphemeralRunner, ...] = ()
    deleted: frozenset[str] = frozenset()
    overdue: frozenset[str] = frozenset()
    """Names among ``created`` due for a confirmation GET (see the module docstring)."""

    @property
    def satisfied(self) -> bool:
        """True when the listing already reflects every write (nothing pending)."""
        return not self.created and not self.deleted


@dataclass
class _Create:
    at: float
    raw: dict[str, Any]
    checked: float  # when it was recorded or last confirmed present


@dataclass
class _Entry:
    owner_uid: str
    created: dict[str, _Create] = field(default_factory=dict)
    deleted: dict[str, float] = field(default_factory=dict)


class Expectations:
    """See the module docstring. ``clock`` is monotonic seconds (injectable for tests)."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        confirm_after: float = DEFAULT_CONFIRM_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl
        self._confirm_after = confirm_after
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def expect_created(self, key: str, owner_uid: str, runner: EphemeralRunner) -> None:
        """Record that ``runner`` (the create response) was created for set ``key``."""
        raw = runner.to_dict()
        with self._lock:
            now = self._clock()
            self._entry(key, owner_uid).created[runner.name] = _Create(now, raw, now)

    def expect_deleted(self, key: str, owner_uid: str, name: str) -> None:
        """Record that the runner ``name`` of set ``key`` was deleted (the request succeeded)."""
        with self._lock:
            self._entry(key, owner_uid).deleted[name] = self._clock()

    def observe(self, key: str, owner_uid: str, listing: Iterable[EphemeralRunner]) -> Pending:
        """Judge set ``key``'s expectations against the cache ``listing`` of its runners.

        Drops the satisfied and the expired ones (and all of them when ``owner_uid`` is
        not the uid they were recorded for), and returns what is still pending. Costs
        nothing beyond a dict lookup when nothing is recorded for ``key``.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return Pending()
            if entry.owner_uid != owner_uid:
                del self._entries[key]
                return Pending()
            pending = self._judge(key, entry, {r.name: r.is_deleting for r in listing})
            if pending.satisfied:
                del self._entries[key]
            return pending

    def confirm_created(self, key: str, owner_uid: str, name: str, *, exists: bool) -> None:
        """Record what the API server said about the overdue create ``name`` of set ``key``.

        ``exists`` False: the runner is gone, so neither its create nor a delete of it is
        pending any more. True: keep waiting for the cache, and ask again only after
        another ``confirm_after``.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.owner_uid != owner_uid or name not in entry.created:
                return
            if exists:
                entry.created[name].checked = self._clock()
            else:
                log.info("%s: runner %s was deleted before the cache saw it", key, name)
                del entry.created[name]
                entry.deleted.pop(name, None)

    def unsatisfied(self, key: str) -> bool:
        """True while anything unexpired is recorded for ``key`` (no listing needed)."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False
            stamps = [c.at for c in entry.created.values()] + list(entry.deleted.values())
            return any(now - at < self._ttl for at in stamps)

    def forget(self, key: str) -> None:
        """Drop everything recorded for ``key`` (the set is gone)."""
        with self._lock:
            self._entries.pop(key, None)

    def _entry(self, key: str, owner_uid: str) -> _Entry:
        entry = self._entries.get(key)
        if entry is None or entry.owner_uid != owner_uid:
            entry = self._entries[key] = _Entry(owner_uid=owner_uid)
        return entry

    def _judge(self, key: str, entry: _Entry, listed: dict[str, bool]) -> Pending:
        now = self._clock()
        for name, create in list(entry.created.items()):
            if name in listed or self._expired(key, "create", name, create.at, now):
                del entry.created[name]
        for name, at in list(entry.deleted.items()):
            # Absent counts as deleted only once the create itself was seen.
            gone = listed.get(name, name not in entry.created)
            if gone or self._expired(key, "delete", name, at, now):
                del entry.deleted[name]
        created = tuple(EphemeralRunner.from_dict(c.raw) for c in entry.created.values())
        overdue = frozenset(
            name
            for name, create in entry.created.items()
            if now - create.checked >= self._confirm_after
        )
        return Pending(created=created, deleted=frozenset(entry.deleted), overdue=overdue)

    def _expired(self, key: str, write: str, name: str, at: float, now: float) -> bool:
        if now - at < self._ttl:
            return False
        log.warning(
            "%s: the cache never showed the %s of runner %s within %gs; believing the cache",
            key,
            write,
            name,
            self._ttl,
        )
        return True


class ExpectingWriter:
    """Implements ``ersctl.ephemeralrunnerset.ports.Writer`` over ``inner``; see the module docstring."""

    def __init__(
        self,
        inner: Writer,
        expectations: Expectations,
        set_writes: OwnWrites[EphemeralRunnerSet] | None = None,
    ) -> None:
        self._inner = inner
        self._expectations = expectations
        self._set_writes = set_writes or OwnWrites[EphemeralRunnerSet]()

    def create_runner(self, body: dict[str, Any]) -> EphemeralRunner:
        runner = self._inner.create_runner(body)
        owner = _owner(runner)
        if owner is not None:
            self._expectations.expect_created(owner[0], owner[1], runner)
        return runner

    def delete_runner(self, runner: EphemeralRunner) -> None:
        self._inner.delete_runner(runner)
        owner = _owner(runner)
        if owner is not None:
            self._expectations.expect_deleted(owner[0], owner[1], runner.name)

    def patch_ers(self, ers: EphemeralRunnerSet, patch: dict[str, Any]) -> EphemeralRunnerSet:
        return self._set_writes.written(ers, self._inner.patch_ers(ers, patch))

    def patch_ers_status(
        self, ers: EphemeralRunnerSet, patch: dict[str, Any]
    ) -> EphemeralRunnerSet:
        return self._set_writes.written(ers, self._inner.patch_ers_status(ers, patch))

    def patch_runner(self, runner: EphemeralRunner, patch: dict[str, Any]) -> EphemeralRunner:
        return self._inner.patch_runner(runner, patch)

    def create_secret(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._inner.create_secret(body)

    def patch_secret(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self._inner.patch_secret(namespace, name, patch)

    def delete_secret(self, namespace: str, name: str) -> None:
        self._inner.delete_secret(namespace, name)


def _owner(runner: EphemeralRunner) -> tuple[str, str] | None:
    """(set key, set uid) of the runner's controlling EphemeralRunnerSet, if it has one."""
    ref = runner.controller_owner()
    if ref is None or ref.get("kind") != ERS_KIND or not ref.get("name") or not ref.get("uid"):
        return None
    return f"{runner.namespace}/{ref['name']}", str(ref["uid"])


def owned_runners(
    cache: CachedReader, api: ApiReader, expectations: Expectations, ers: EphemeralRunnerSet
) -> tuple[list[EphemeralRunner], frozenset[str]]:
    """``ers``'s cached runners plus its unobserved creates, and its unobserved deletes' names.

    Overdue creates (``Expectations`` ``confirm_after``) are first confirmed with one
    API-reader GET each; with nothing expected, no request is sent.
    """
    cached = cache.list_owned_runners(ers)
    pending = expectations.observe(ers.key, ers.uid, cached)
    if pending.overdue:
        _confirm_overdue(api, expectations, ers, pending.overdue)
        pending = expectations.observe(ers.key, ers.uid, cached)
    if pending.satisfied:
        return cached, pending.deleted
    log.debug(
        "%s: %d creates and %d deletes not in the cache yet",
        ers.key,
        len(pending.created),
        len(pending.deleted),
    )
    return [*cached, *pending.created], pending.deleted


def _confirm_overdue(
    api: ApiReader, expectations: Expectations, ers: EphemeralRunnerSet, names: frozenset[str]
) -> None:
    # Unseen for far longer than watch latency: the runner may be long gone, deleted
    # before the cache ever listed it. One GET each settles it.
    for name in sorted(names):
        live = api.get_runner(ers.namespace, name)
        exists = live is not None and (live.controller_owner() or {}).get("uid") == ers.uid
        expectations.confirm_created(ers.key, ers.uid, name, exists=exists)


def confirm_runners(
    cache: CachedReader, api: ApiReader, expectations: Expectations, ers: EphemeralRunnerSet
) -> None:
    """Record ``ers``'s runners that one uncached list shows and its cache does not (yet)
    as expected creates, and cached runners the list shows gone or deleting as expected
    deletes. One LIST request."""
    live = {runner.name: runner for runner in api.list_owned_runners(ers)}
    cached = {runner.name: runner for runner in cache.list_owned_runners(ers)}
    unseen = [runner for name, runner in live.items() if name not in cached]
    for runner in unseen:
        expectations.expect_created(ers.key, ers.uid, runner)
    for name, runner in cached.items():
        gone = live.get(name)
        if not runner.is_deleting and (gone is None or gone.is_deleting):
            expectations.expect_deleted(ers.key, ers.uid, name)
    if unseen:
        log.info(
            "%s: %d runners exist that the cache does not show yet (a previous leader's "
            "creates); counting them",
            ers.key,
            len(unseen),
        )


class ConfirmedSets:
    """The sets (key and uid) whose runners this process has confirmed. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, str] = {}

    def check(self, key: str, uid: str) -> bool:
        """True once :meth:`add` recorded set ``key`` with this ``uid``."""
        with self._lock:
            return self._sets.get(key) == uid

    def add(self, key: str, uid: str) -> None:
        with self._lock:
            self._sets[key] = uid

    def forget(self, key: str) -> None:
        with self._lock:
            self._sets.pop(key, None)
