"""The informer store, its owner index, and the cached reader over it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ersctl.api import EphemeralRunnerSet
from ersctl.arcclient.cache import CachedReader
from ersctl.kube.copies import json_copy
from ersctl.kube.store import OWNER_UID_INDEX, Store, controller_owner_uid


def doc(
    name: str,
    *,
    ns: str = "ns",
    owner: str | None = None,
    rv: str = "1",
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "resourceVersion": rv,
        "uid": f"{name}-uid",
        "creationTimestamp": created,
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {"kind": "EphemeralRunnerSet", "name": owner, "uid": f"{owner}-uid", "controller": True}
        ]
    return {"metadata": meta, "status": {"phase": "Running"}}


def indexed_store() -> Store:
    return Store(indexers={OWNER_UID_INDEX: controller_owner_uid})


def names(objs: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def test_the_owner_index_follows_adds_owner_changes_and_deletes() -> None:
    store = indexed_store()
    store.upsert(doc("r1", owner="a"))
    store.upsert(doc("r2", owner="a"))
    store.upsert(doc("r3", owner="b"))
    store.upsert(doc("r4"))  # no controller owner: in no index bucket

    assert names(store.by_index(OWNER_UID_INDEX, "a-uid")) == ["r1", "r2"]
    store.upsert(doc("r2", owner="b", rv="2"))
    store.delete(doc("r1"))

    assert names(store.by_index(OWNER_UID_INDEX, "a-uid")) == []
    assert names(store.by_index(OWNER_UID_INDEX, "b-uid")) == ["r2", "r3"]
    assert len(store) == 3


def test_a_relist_reports_adds_updates_and_vanished_objects_but_not_unchanged_ones() -> None:
    store = indexed_store()
    store.replace([doc("kept"), doc("changed"), doc("gone", owner="a")])

    deltas = store.replace([doc("kept"), doc("changed", rv="2"), doc("new")])

    summary = sorted(
        (
            "add" if d.old is None else "delete" if d.new is None else "update",
            (d.new or d.old or {})["metadata"]["name"],
        )
        for d in deltas
    )
    assert summary == [("add", "new"), ("delete", "gone"), ("update", "changed")]
    assert store.by_index(OWNER_UID_INDEX, "a-uid") == []
    assert names(store.values()) == ["changed", "kept", "new"]


def test_the_cached_reader_hands_out_copies_that_do_not_write_back() -> None:
    sets, runners = indexed_store(), indexed_store()
    sets.upsert(doc("set"))
    runners.upsert(doc("r1", owner="set"))
    reader = CachedReader(sets=sets, runners=runners)

    ers = reader.get_ers("ns", "set")
    assert ers is not None
    ers.finished_runner_cleanup_patch_id = 5
    owned = reader.list_owned_runners(ers)
    owned[0].phase = "Succeeded"

    assert "finishedRunnerCleanupPatchID" not in (sets.get("ns", "set") or {})["status"]
    assert (runners.get("ns", "r1") or {})["status"]["phase"] == "Running"


def test_owned_runners_come_by_owner_uid_from_the_sets_namespace_oldest_first() -> None:
    sets, runners = indexed_store(), indexed_store()
    runners.upsert(doc("young", owner="set", created="2026-01-02T00:00:00Z"))
    runners.upsert(doc("old", owner="set", created="2026-01-01T00:00:00Z"))
    runners.upsert(doc("elsewhere", ns="other", owner="set"))
    runners.upsert(doc("foreign", owner="other-set"))
    reader = CachedReader(sets=sets, runners=runners)

    owned = reader.list_owned_runners(EphemeralRunnerSet(doc("set")))

    assert [r.name for r in owned] == ["old", "young"]
    assert reader.get_ers("ns", "missing") is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


def containers(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in containers(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in containers(v))]
    return []


@given(json_values)
def test_json_copy_is_equal_and_shares_no_container_with_the_original(value: Any) -> None:
    copied = json_copy(value)
    assert copied == value
    assert not set(containers(copied)) & set(containers(value))


def test_documents_with_malformed_metadata_are_stored_without_breaking_the_index() -> None:
    store = indexed_store()
    weird: dict[str, Any] = {"metadata": {"name": "w", "namespace": "ns", "ownerReferences": "x"}}
    store.replace([{"metadata": ["not", "an", "object"]}, weird, doc("r1", owner="a")])

    assert names(store.by_index(OWNER_UID_INDEX, "a-uid")) == ["r1"]
    assert len(store) == 3
