"""A Writer that records every runner create and delete it sends as an expectation.

The reconciler wraps its writer in :class:`ExpectingWriter` once, so every path that
creates or deletes runners (scale-up, scale-down, finished and stale cleanup, revision
rollout, set deletion) feeds ``ersctl.expectations`` without each remembering to, and
reads every runner listing through :func:`owned_runners`, which applies them. A
write is recorded only after the API server accepted it: a failed delete must not be
taken for one in flight. The set a runner belongs to is its controller ownerReference
(``namespace/name`` and uid), which every runner this controller creates carries.
"""

from __future__ import annotations

import logging
from typing import Any

from ersctl.api import ERS_KIND, EphemeralRunner, EphemeralRunnerSet
from ersctl.expectations import Expectations
from ersctl.ports import ApiReader, CachedReader, Writer

log = logging.getLogger(__name__)


class ExpectingWriter:
    """Implements ``ersctl.ports.Writer`` over ``inner``; see the module docstring."""

    def __init__(self, inner: Writer, expectations: Expectations) -> None:
        self._inner = inner
        self._expectations = expectations

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
        return self._inner.patch_ers(ers, patch)

    def patch_ers_status(
        self, ers: EphemeralRunnerSet, patch: dict[str, Any]
    ) -> EphemeralRunnerSet:
        return self._inner.patch_ers_status(ers, patch)

    def patch_runner(self, runner: EphemeralRunner, patch: dict[str, Any]) -> EphemeralRunner:
        return self._inner.patch_runner(runner, patch)


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
