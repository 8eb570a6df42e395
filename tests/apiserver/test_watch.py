"""Watch over HTTP with ``kubernetes.watch.Watch``: replay from a resourceVersion in
commit order, 410 for an expired one, selectors, and the watch delay hook."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from ersctl import api
from ersctl.testing.apiserver import ApiServer
from tests.apiserver.objects import RUNNER_SPEC, Objects, ers_body
from tests.kubeclient import WatchStream, new_watch
from tests.polling import eventually


def _events(
    custom: client.CustomObjectsApi, plural: str, count: int, **kwargs: Any
) -> list[tuple[str, str, int]]:
    """The first ``count`` events as (type, name, resourceVersion)."""
    kwargs.setdefault("timeout_seconds", 5)
    stream = new_watch()
    seen = []
    for event in stream.stream(
        custom.list_namespaced_custom_object, api.GROUP, api.VERSION, "default", plural, **kwargs
    ):
        meta = event["object"]["metadata"]
        seen.append((event["type"], meta["name"], int(meta["resourceVersion"])))
        if len(seen) == count:
            stream.stop()
    return seen


def test_watch_from_a_resource_version_replays_later_events_in_commit_order(
    ers: Objects, custom: client.CustomObjectsApi
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    ers.create(ers_body("a"))
    ers.patch("a", {"spec": {"replicas": 2}})
    ers.create(ers_body("b"))
    ers.delete("a")

    seen = _events(custom, api.ERS_PLURAL, 4, resource_version=start)

    assert [(kind, name) for kind, name, _ in seen] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    versions = [rv for _, _, rv in seen]
    assert versions == sorted(versions) and len(set(versions)) == 4


def test_watch_without_resource_version_starts_with_the_current_objects(
    ers: Objects, custom: client.CustomObjectsApi
) -> None:
    ers.create(ers_body("a"))
    ers.create(ers_body("b"))

    seen = _events(custom, api.ERS_PLURAL, 2)

    assert [(kind, name) for kind, name, _ in seen] == [("ADDED", "a"), ("ADDED", "b")]


def test_a_live_watch_sees_writes_made_after_it_started(
    ers: Objects, custom: client.CustomObjectsApi
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    writer = threading.Timer(0.1, lambda: ers.create(ers_body("late")))
    writer.start()

    seen = _events(custom, api.ERS_PLURAL, 1, resource_version=start)

    writer.join()
    assert seen[0][:2] == ("ADDED", "late")


def test_a_resource_version_older_than_the_history_gets_410_expired() -> None:
    with ApiServer(history_limit=3) as server:
        api_client = server.api_client()
        custom = client.CustomObjectsApi(api_client)
        objects = Objects(custom, api.ERS_PLURAL)
        start = objects.list()["metadata"]["resourceVersion"]
        objects.create(ers_body("a"))
        for replicas in range(2, 6):
            objects.patch("a", {"spec": {"replicas": replicas}})

        with pytest.raises(ApiException) as caught:
            _events(custom, api.ERS_PLURAL, 1, resource_version=start)
        recent = _events(
            custom,
            api.ERS_PLURAL,
            1,
            resource_version=str(int(objects.get("a")["metadata"]["resourceVersion"]) - 1),
        )
        api_client.close()

    assert caught.value.status == 410
    assert "Expired" in str(caught.value.reason)
    assert recent[0][0] == "MODIFIED"


def test_label_selector_turns_updates_into_added_and_deleted(
    ers: Objects, custom: client.CustomObjectsApi
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    ers.create(ers_body("a"))
    ers.patch("a", {"metadata": {"labels": {"team": "x"}}})
    ers.patch("a", {"spec": {"replicas": 4}})
    ers.patch("a", {"metadata": {"labels": {"team": "y"}}})

    seen = _events(custom, api.ERS_PLURAL, 3, resource_version=start, label_selector="team=x")

    assert [kind for kind, _, _ in seen] == ["ADDED", "MODIFIED", "DELETED"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("team=x", ["a"], id="equals"),
        pytest.param("team!=x", ["b", "c"], id="not equals (includes unlabelled)"),
        pytest.param("team in (x,y)", ["a", "b"], id="in"),
        pytest.param("team notin (x)", ["b", "c"], id="notin"),
        pytest.param("team", ["a", "b"], id="exists"),
        pytest.param("!team", ["c"], id="does not exist"),
        pytest.param("team==y,tier=1", ["b"], id="conjunction"),
    ],
)
def test_list_filters_by_label_selector(ers: Objects, selector: str, expected: list[str]) -> None:
    ers.create(ers_body("a", labels={"team": "x"}))
    ers.create(ers_body("b", labels={"team": "y", "tier": "1"}))
    ers.create(ers_body("c"))

    listed = ers.list(label_selector=selector)

    assert [item["metadata"]["name"] for item in listed["items"]] == expected


def test_list_filters_by_field_selector_and_reports_its_resource_version(ers: Objects) -> None:
    ers.create(ers_body("a"))
    last = ers.create(ers_body("b"))

    listed = ers.list(field_selector="metadata.name=b")

    assert [item["metadata"]["name"] for item in listed["items"]] == ["b"]
    assert listed["metadata"]["resourceVersion"] == last["metadata"]["resourceVersion"]


def _watch_in_background(
    custom: client.CustomObjectsApi, plural: str, start: str
) -> tuple[queue.Queue[tuple[str, float]], WatchStream]:
    arrivals: queue.Queue[tuple[str, float]] = queue.Queue()
    stream = new_watch()

    def run() -> None:
        for event in stream.stream(
            custom.list_namespaced_custom_object,
            api.GROUP,
            api.VERSION,
            "default",
            plural,
            resource_version=start,
            timeout_seconds=5,
        ):
            arrivals.put((event["object"]["metadata"]["name"], time.monotonic()))
            stream.stop()

    threading.Thread(target=run, daemon=True).start()
    return arrivals, stream


def watching(server: ApiServer) -> set[str | None]:
    """The resources the server has registered a watch on (it logs a watch request
    once its watcher is in place)."""
    return {r.resource for r in server.request_log.records() if r.verb == "watch"}


@pytest.fixture
def delayed(apiserver: ApiServer) -> ApiServer:
    apiserver.set_watch_delay(api.ERS_PLURAL, 0.5)
    return apiserver


def test_the_watch_delay_hook_delays_only_the_chosen_resource(
    delayed: ApiServer, ers: Objects, runners: Objects, custom: client.CustomObjectsApi
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    ers_events, _ = _watch_in_background(custom, api.ERS_PLURAL, start)
    er_events, _ = _watch_in_background(custom, api.ER_PLURAL, start)
    eventually(lambda: watching(delayed) >= {api.ERS_PLURAL, api.ER_PLURAL}, what="both watches")

    written = time.monotonic()
    ers.create(ers_body("set"))
    runners.create({"metadata": {"name": "runner"}, "spec": RUNNER_SPEC})

    er_name, er_at = er_events.get(timeout=5)
    ers_name, ers_at = ers_events.get(timeout=5)
    assert (er_name, ers_name) == ("runner", "set")
    assert er_at - written < 0.4
    assert ers_at - written >= 0.5
    assert ers.get("set")  # reads are not delayed, only watch delivery


def test_a_watch_resumed_from_a_resource_version_still_sees_the_delay(
    delayed: ApiServer, ers: Objects, custom: client.CustomObjectsApi
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    written = time.monotonic()
    ers.create(ers_body("set"))

    arrivals, _ = _watch_in_background(custom, api.ERS_PLURAL, start)

    name, arrived = arrivals.get(timeout=5)
    assert name == "set"
    assert arrived - written >= 0.5


def test_a_resource_version_from_the_future_gets_a_504_error_event(
    ers: Objects, custom: client.CustomObjectsApi
) -> None:
    future = str(int(ers.list()["metadata"]["resourceVersion"]) + 1000)

    with pytest.raises(ApiException) as caught:
        _events(custom, api.ERS_PLURAL, 1, resource_version=future)

    assert caught.value.status == 504
    assert "Too large resource version" in str(caught.value.reason)


def test_a_resource_without_events_can_be_watched_from_any_past_resource_version(
    ers: Objects, core: client.CoreV1Api
) -> None:
    ers.create(ers_body("a"))  # moves the global resourceVersion, no pod events
    listed = core.list_namespaced_pod("default").metadata
    assert listed is not None and listed.resource_version is not None
    start = listed.resource_version
    stream = new_watch()

    events = list(
        stream.stream(core.list_namespaced_pod, "default", resource_version="1", timeout_seconds=1)
    )

    assert events == []
    assert int(start) > 1


def _all_events(custom: client.CustomObjectsApi, **kwargs: Any) -> list[tuple[str, int]]:
    stream = new_watch()
    return [
        (event["type"], int(event["object"]["metadata"]["resourceVersion"]))
        for event in stream.stream(
            custom.list_namespaced_custom_object,
            api.GROUP,
            api.VERSION,
            "default",
            api.ERS_PLURAL,
            allow_watch_bookmarks=True,
            **kwargs,
        )
    ]


def test_an_idle_watch_that_allows_bookmarks_gets_one_before_it_times_out(
    ers: Objects, runners: Objects, custom: client.CustomObjectsApi
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    latest = runners.create({"metadata": {"name": "r"}, "spec": RUNNER_SPEC})  # not a set event

    seen = _all_events(custom, resource_version=start, timeout_seconds=3)

    assert seen == [("BOOKMARK", int(latest["metadata"]["resourceVersion"]))]


def test_a_bookmark_never_claims_a_version_whose_event_is_still_delayed(
    apiserver: ApiServer, ers: Objects, custom: client.CustomObjectsApi
) -> None:
    apiserver.set_watch_delay(api.ERS_PLURAL, 10.0)
    start = ers.list()["metadata"]["resourceVersion"]
    created = int(ers.create(ers_body("late"))["metadata"]["resourceVersion"])

    seen = _all_events(custom, resource_version=start, timeout_seconds=3)

    assert all(rv < created for _, rv in seen)


def test_concurrent_writers_are_seen_by_a_watcher_in_commit_order_without_loss(
    ers: Objects, custom: client.CustomObjectsApi
) -> None:
    names = [f"set-{i}" for i in range(4)]
    for name in names:
        ers.create(ers_body(name, replicas=0))
    start = ers.list()["metadata"]["resourceVersion"]

    def write(name: str) -> None:
        for replicas in range(1, 16):
            ers.patch(name, {"spec": {"replicas": replicas}})

    writers = [threading.Thread(target=write, args=(name,)) for name in names]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()

    seen = _events(custom, api.ERS_PLURAL, 4 * 15, resource_version=start)
    versions = [rv for _, _, rv in seen]
    assert versions == sorted(versions) and len(set(versions)) == len(versions) == 60
    assert {name for _, name, _ in seen} == set(names)
    assert versions[-1] == int(ers.list()["metadata"]["resourceVersion"])
