"""Copy-on-write runner views: they read like the real view, never write the cache."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ersctl.api import EphemeralRunner, FieldError
from ersctl.arcclient.cache import READ_THROUGH, CachedRunner

DERIVED = ("is_deleting", "has_job", "is_done", "key")

scalar = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["", "Running", "Succeeded", "Outdated", "7", "x", "2026-01-01T00:00:00Z"])
)
section = st.dictionaries(
    st.sampled_from(["phase", "runnerId", "runnerName", "jobId", "jobRequestId", "name",
                     "namespace", "uid", "resourceVersion", "creationTimestamp",
                     "deletionTimestamp", "ready"]),
    scalar,
)  # fmt: skip
annotation_maps = st.dictionaries(
    st.sampled_from(["actions.github.com/patch-id", "actions.github.com/actionable-revision"]),
    st.sampled_from(["0", "3", "x", ""]),
)
finalizer_lists = st.none() | st.lists(st.sampled_from(["a", "b"]), max_size=2)
documents = st.fixed_dictionaries(
    {},
    optional={
        "metadata": section.flatmap(
            lambda m: st.just(m) | annotation_maps.map(lambda a: {**m, "annotations": a})
        ).flatmap(lambda m: st.just(m) | finalizer_lists.map(lambda f: {**m, "finalizers": f})),
        "status": section,
        "spec": st.just({"githubConfigUrl": "u"}),
    },
)


def read(view: EphemeralRunner, name: str) -> Any:
    try:
        return getattr(view, name)
    except FieldError as exc:
        return ("FieldError", str(exc))


@given(documents)
def test_reads_match_the_plain_view_without_copying_or_writing_the_shared_document(
    doc: dict[str, Any],
) -> None:
    snapshot = copy.deepcopy(doc)
    cached, plain = CachedRunner(doc), EphemeralRunner(copy.deepcopy(doc))

    for name in (*READ_THROUGH, *DERIVED):
        assert read(cached, name) == read(plain, name), name
    for finalizer in ("a", "b"):  # a steady runner's reconcile asks this too
        assert cached.has_finalizer(finalizer) == plain.has_finalizer(finalizer)

    assert not cached.copied
    assert doc == snapshot


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda r: setattr(r, "phase", "Failed"), id="phase-setter"),
        pytest.param(lambda r: r.status.update(ready=True), id="status-section"),
        pytest.param(lambda r: r.finalizers.clear(), id="finalizers"),
        pytest.param(lambda r: r.labels.update(a="b"), id="labels"),
        pytest.param(lambda r: r.spec.update(githubConfigUrl="v"), id="spec"),
    ],
)
def test_every_write_lands_in_a_private_copy(mutate: Any) -> None:
    shared = {
        "metadata": {"name": "r", "namespace": "ns", "finalizers": ["f"]},
        "spec": {"githubConfigUrl": "u"},
        "status": {"phase": "Running"},
    }
    snapshot = copy.deepcopy(shared)
    runner = CachedRunner(shared)

    mutate(runner)

    assert runner.copied
    assert shared == snapshot
    assert runner.to_dict() != snapshot
    if runner.raw["status"].get("phase") == "Failed":
        assert runner.phase == "Failed"  # reads follow the private copy once it exists
