"""A Writer that records every runner create and delete it sends as an expectation.

The reconciler wraps its writer in :class:`ExpectingWriter` once, so every path that
creates or deletes runners (scale-up, scale-down, finished and stale cleanup, revision
rollout, set deletion) feeds ``ersctl.expectations`` without each remembering to. A
write is recorded only after the API server accepted it: a failed delete must not be
taken for one in flight. The set a runner belongs to is its controller ownerReference
(``namespace/name`` and uid), which every runner this controller creates carries.
"""

from __future__ import annotations

from typing import Any

from ersctl.api import ERS_KIND, EphemeralRunner, EphemeralRunnerSet
from ersctl.expectations import Expectations
from ersctl.ports import Writer


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
