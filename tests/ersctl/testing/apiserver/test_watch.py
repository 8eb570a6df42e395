"""Watch over HTTP with ``kubernetes.watch.Watch``: replay from a resourceVersion in
commit order, 410 for an expired one, a future one waited for (a LIST refuses it with
504), bookmarks carrying the resource's own version, selectors, and the watch delay
hook."""

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
from tests.ersctl.testing.apiserver.objects import Objects, er_body, ers_body
from tests.kubeapi import KubeApi
from tests.kubeclient import WatchStream, new_watch, status_of
from tests.polling import eventually


def _events(objects: Objects, count: int, **kwargs: Any) -> list[tuple[str, str, int]]:
    """The first ``count`` events of ``objects``' resource in its namespace, as (type,
    name, resourceVersion)."""
    kwargs.setdefault("timeout_seconds", 5)
    stream = new_watch()
    seen = []
    for event in stream.stream(objects.list_call, **kwargs):
        meta = event["object"]["metadata"]
        seen.append((event["type"], meta["name"], int(meta["resourceVersion"])))
        if len(seen) == count:
            stream.stop()
    return seen


def test_watch_from_a_resource_version_replays_later_events_in_commit_order(
    ers: Objects,
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    ers.create(ers_body("a"))
    ers.patch("a", {"spec": {"replicas": 2}})
    ers.create(ers_body("b"))
    ers.delete("a")

    seen = _events(ers, 4, resource_version=start)

    assert [(kind, name) for kind, name, _ in seen] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    versions = [rv for _, _, rv in seen]
    assert versions == sorted(versions) and len(set(versions)) == 4


def test_watch_without_resource_version_starts_with_the_current_objects(
    ers: Objects,
) -> None:
    ers.create(ers_body("a"))
    ers.create(ers_body("b"))

    seen = _events(ers, 2)

    assert [(kind, name) for kind, name, _ in seen] == [("ADDED", "a"), ("ADDED", "b")]


def test_a_live_watch_sees_writes_made_after_it_started(
    ers: Objects,
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    writer = threading.Timer(0.1, lambda: ers.create(ers_body("late")))
    writer.start()

    seen = _events(ers, 1, resource_version=start)

    writer.join()
    assert seen[0][:2] == ("ADDED", "late")


@pytest.mark.embedded_only("a history limit of 3 events")
def test_a_resource_version_older_than_the_history_gets_410_expired() -> None:
    with ApiServer(history_limit=3) as server:
        api_client = server.api_client()
        objects = Objects(client.CustomObjectsApi(api_client), api.ERS_PLURAL, "default")
        start = objects.list()["metadata"]["resourceVersion"]
        objects.create(ers_body("a"))
        for replicas in range(2, 6):
            objects.patch("a", {"spec": {"replicas": replicas}})

        with pytest.raises(ApiException) as caught:
            _events(objects, 1, resource_version=start)
        recent = _events(
            objects,
            1,
            resource_version=str(int(objects.get("a")["metadata"]["resourceVersion"]) - 1),
        )
        api_client.close()

    assert caught.value.status == 410
    assert "Expired" in str(caught.value.reason)
    assert recent[0][0] == "MODIFIED"


def test_label_selector_turns_updates_into_added_and_deleted(ers: Objects) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    ers.create(ers_body("a"))
    ers.patch("a", {"metadata": {"labels": {"team": "x"}}})
    ers.patch("a", {"spec": {"replicas": 4}})
    ers.patch("a", {"metadata": {"labels": {"team": "y"}}})

    seen = _events(ers, 3, resource_version=start, label_selector="team=x")

    assert [kind for kind, _, _ in seen] == ["ADDED", "MODIFIED", "DELETED"]


SELECTORS = pytest.mark.parametrize(
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


def labelled_sets() -> list[dict[str, Any]]:
    """Sets a and b, labelled as the selector cases expect, and c with no labels."""
    a = ers_body("a", labels={"team": "x"})
    b = ers_body("b", labels={"team": "y", "tier": "1"})
    return [a, b, ers_body("c")]


@SELECTORS
def test_list_filters_by_label_selector(ers: Objects, selector: str, expected: list[str]) -> None:
    for body in labelled_sets():
        ers.create(body)

    listed = ers.list(label_selector=selector)

    assert [item["metadata"]["name"] for item in listed["items"]] == expected


@SELECTORS
def test_the_object_helpers_list_what_a_selector_selects(
    kube: KubeApi, selector: str, expected: list[str]
) -> None:
    # What the simulation's kubelets poll through: the embedded server's own method
    # (copying only what is selected) and, on an existing cluster, the HTTP list.
    for body in labelled_sets():
        kube.create_object(api.ERS_PLURAL, body)
    stores: list[Any] = [kube]
    if kube.embedded is not None:
        stores.append(kube.embedded)
    for store in stores:
        listed = store.list_objects(api.ERS_PLURAL, kube.namespace, label_selector=selector)
        assert [item["metadata"]["name"] for item in listed] == expected, store


def test_list_filters_by_field_selector_and_reports_its_resource_version(ers: Objects) -> None:
    ers.create(ers_body("a"))
    last = ers.create(ers_body("b"))

    listed = ers.list(field_selector="metadata.name=b")

    assert [item["metadata"]["name"] for item in listed["items"]] == ["b"]
    # At least as new as the last write (other writers may move the server's version).
    assert int(listed["metadata"]["resourceVersion"]) >= int(last["metadata"]["resourceVersion"])


def _watch_in_background(
    objects: Objects, start: str
) -> tuple[queue.Queue[tuple[str, float]], WatchStream]:
    arrivals: queue.Queue[tuple[str, float]] = queue.Queue()
    stream = new_watch()

    def run() -> None:
        for event in stream.stream(objects.list_call, resource_version=start, timeout_seconds=5):
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


@pytest.mark.embedded_only("the watch delay hook")
def test_the_watch_delay_hook_delays_only_the_chosen_resource(
    delayed: ApiServer, ers: Objects, runners: Objects
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    ers_events, _ = _watch_in_background(ers, start)
    er_events, _ = _watch_in_background(runners, start)
    eventually(lambda: watching(delayed) >= {api.ERS_PLURAL, api.ER_PLURAL}, what="both watches")

    written = time.monotonic()
    ers.create(ers_body("set"))
    runners.create(er_body(name="runner"))

    er_name, er_at = er_events.get(timeout=5)
    ers_name, ers_at = ers_events.get(timeout=5)
    assert (er_name, ers_name) == ("runner", "set")
    assert er_at - written < 0.4
    assert ers_at - written >= 0.5
    assert ers.get("set")  # reads are not delayed, only watch delivery


@pytest.mark.embedded_only("the watch delay hook")
def test_a_watch_resumed_from_a_resource_version_still_sees_the_delay(
    delayed: ApiServer, ers: Objects
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    written = time.monotonic()
    ers.create(ers_body("set"))

    arrivals, _ = _watch_in_background(ers, start)

    name, arrived = arrivals.get(timeout=5)
    assert name == "set"
    assert arrived - written >= 0.5


def test_a_watch_from_a_resource_version_the_server_has_not_reached_waits_without_error(
    ers: Objects,
) -> None:
    # The watch cache answers 200 and sends nothing (no ERROR event) until the server
    # gets there or the watch times out: a client cannot tell it from an idle watch.
    future = str(int(ers.list()["metadata"]["resourceVersion"]) + 1000)

    seen = _all_events(ers, resource_version=future, timeout_seconds=1)

    assert seen == []


@pytest.mark.embedded_only("the request log, and resourceVersions no other writer moves")
def test_a_watch_from_a_future_version_delivers_only_what_comes_after_it(
    apiserver: ApiServer, ers: Objects, namespace: str
) -> None:
    # The namespace's ServiceAccount is made in the background (as a real cluster's
    # controller makes it): made after this read, it would take one of the versions
    # counted below, and "second" would come after the watch's version.
    eventually(
        lambda: apiserver.get_object("serviceaccounts", namespace, "default") is not None,
        what="the namespace's default ServiceAccount",
    )
    start = int(ers.list()["metadata"]["resourceVersion"])
    arrivals, _ = _watch_in_background(ers, str(start + 2))
    eventually(lambda: api.ERS_PLURAL in watching(apiserver), what="the watch")

    for name in ("first", "second", "third"):  # resourceVersions start+1, +2, +3
        ers.create(ers_body(name))

    name, _ = arrivals.get(timeout=5)
    assert name == "third"


def test_a_list_from_a_resource_version_the_server_has_not_reached_is_504(
    ers: Objects,
) -> None:
    future = int(ers.list()["metadata"]["resourceVersion"]) + 1000

    with pytest.raises(ApiException) as caught:
        ers.list(resource_version=str(future))

    assert caught.value.status == 504
    status = status_of(caught.value)
    assert status["reason"] == "Timeout"
    # What client-go's reflector recognises (IsTooLargeResourceVersion): it relists.
    assert [c["reason"] for c in status["details"]["causes"]] == ["ResourceVersionTooLarge"]
    assert status["message"].startswith(f"Timeout: Too large resource version: {future}, current: ")


def test_a_resource_without_events_can_be_watched_from_any_past_resource_version(
    ers: Objects, core: client.CoreV1Api, namespace: str
) -> None:
    listed = core.list_namespaced_pod(namespace).metadata
    assert listed is not None and listed.resource_version is not None
    ers.create(ers_body("a"))  # moves the server's resourceVersion, no pod events
    stream = new_watch()

    events = list(
        stream.stream(
            core.list_namespaced_pod,
            namespace,
            resource_version=listed.resource_version,
            timeout_seconds=1,
        )
    )

    assert events == []


def _all_events(objects: Objects, **kwargs: Any) -> list[tuple[str, int]]:
    stream = new_watch()
    return [
        (event["type"], int(event["object"]["metadata"]["resourceVersion"]))
        for event in stream.stream(objects.list_call, allow_watch_bookmarks=True, **kwargs)
    ]


def test_an_idle_watch_gets_only_bookmarks_never_behind_it_while_other_resources_change(
    ers: Objects, runners: Objects
) -> None:
    # What any server guarantees; when bookmarks come, and which version they claim, is
    # its own choice (a real one sends them about a minute apart, at the version of
    # etcd's progress notifications).
    start = ers.list()["metadata"]["resourceVersion"]
    runners.create(er_body(name="r"))

    seen = _all_events(ers, resource_version=start, timeout_seconds=3)

    assert all(kind == "BOOKMARK" for kind, _ in seen), seen
    versions = [rv for _, rv in seen]
    assert versions == sorted(versions) and all(rv >= int(start) for rv in versions)


@pytest.mark.embedded_only("its own bookmark timing: 2 s before the watch ends")
def test_an_idle_watch_gets_no_bookmark_while_only_other_resources_change(
    ers: Objects, runners: Objects
) -> None:
    start = ers.list()["metadata"]["resourceVersion"]
    runners.create(er_body(name="r"))  # moves the server's version, not the sets'

    seen = _all_events(ers, resource_version=start, timeout_seconds=3)

    assert seen == []


@pytest.mark.embedded_only("its own bookmark timing: 2 s before the watch ends")
def test_a_bookmark_carries_the_resources_own_version_once_it_moved_past_the_watcher(
    ers: Objects, runners: Objects, custom: client.CustomObjectsApi, kube: KubeApi
) -> None:
    # A set written in another namespace moves the sets' version but is no event of
    # this watch; a runner written after it moves only the server's.
    start = ers.list()["metadata"]["resourceVersion"]
    elsewhere = Objects(custom, api.ERS_PLURAL, kube.create_namespace())
    moved = int(elsewhere.create(ers_body("elsewhere"))["metadata"]["resourceVersion"])
    runners.create(er_body(name="r"))

    seen = _all_events(ers, resource_version=start, timeout_seconds=3)

    assert seen == [("BOOKMARK", moved)]


@pytest.mark.embedded_only("the watch delay hook")
def test_a_bookmark_never_claims_a_version_whose_event_is_still_delayed(
    apiserver: ApiServer, ers: Objects
) -> None:
    apiserver.set_watch_delay(api.ERS_PLURAL, 10.0)
    start = ers.list()["metadata"]["resourceVersion"]
    created = int(ers.create(ers_body("late"))["metadata"]["resourceVersion"])

    seen = _all_events(ers, resource_version=start, timeout_seconds=3)

    assert all(rv < created for _, rv in seen)


def test_concurrent_writers_are_seen_by_a_watcher_in_commit_order_without_loss(
    ers: Objects,
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

    seen = _events(ers, 4 * 15, resource_version=start)
    versions = [rv for _, _, rv in seen]
    assert versions == sorted(versions) and len(set(versions)) == len(versions) == 60
    assert {name for _, name, _ in seen} == set(names)
    assert versions[-1] <= int(ers.list()["metadata"]["resourceVersion"])
