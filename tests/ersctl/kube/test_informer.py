"""Informers against the embedded API server: list, watch, and recovery by relisting."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from ersctl.api import ER_PLURAL, ERS_PLURAL, GROUP, VERSION, EphemeralRunnerSet
from ersctl.arcclient.cache import CachedReader
from ersctl.kube.informer import Informer
from ersctl.kube.queue import Backoff
from ersctl.kube.resources import Resource
from ersctl.kube.store import OWNER_UID_INDEX, Store, controller_owner_uid
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.ports import unused_port
from tests.ersctl.kube.conftest import ers_body, runner_body
from tests.kubeapi import KubeApi
from tests.polling import eventually

ERS = Resource(group=GROUP, version=VERSION, plural=ERS_PLURAL)
FAST = Backoff(base=0.02, cap=0.2)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def on_add(self, obj: dict[str, Any]) -> None:
        self._record("add", obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._record("update", new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._record("delete", obj)

    def _record(self, kind: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self.events.append((kind, obj["metadata"]["name"]))

    def seen(self, kind: str, name: str) -> bool:
        with self._lock:
            return (kind, name) in self.events


def start(informer: Informer) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()
    assert informer.wait_for_sync(5)
    return stop, thread


Started = list[tuple[Informer, threading.Event, threading.Thread]]


@pytest.fixture
def running() -> Iterator[Started]:
    started: Started = []
    yield started
    stop_informers(started)


def stop_informers(started: Started) -> None:
    while started:
        informer, stop, thread = started.pop()
        stop.set()
        informer.interrupt()
        thread.join(5)


@contextmanager
def own_server(running: Started, **options: Any) -> Iterator[ApiServer]:
    """A started server of the test's own (no GC). The test's informers stop before it
    does: one left relisting against it logged a refused connection between the test's
    phases, where pytest captures nothing, onto the run's progress line."""
    server = ApiServer(gc=False, **options).start()
    try:
        yield server
    finally:
        stop_informers(running)
        server.stop()


def make(
    server: KubeApi | ApiServer, running: list[Any], **kwargs: Any
) -> tuple[Informer, Recorder]:
    """A started informer of the sets (in the test's namespace, for a KubeApi)."""
    if isinstance(server, KubeApi):
        kwargs.setdefault("namespace", server.namespace)
    informer = Informer(server.api_client(), ERS, backoff=FAST, **kwargs)
    recorder = Recorder()
    informer.add_handler(recorder)
    stop, thread = start(informer)
    running.append((informer, stop, thread))
    return informer, recorder


def lists(server: ApiServer, resource: str = ERS_PLURAL) -> int:
    return sum(
        1 for r in server.request_log.records() if r.verb == "list" and r.resource == resource
    )


def test_the_store_follows_adds_updates_and_deletes(kube: KubeApi, running: list[Any]) -> None:
    kube.create_object(ERS_PLURAL, ers_body("before"))
    informer, recorder = make(kube, running)
    assert recorder.seen("add", "before")

    kube.create_object(ERS_PLURAL, ers_body("after"))
    kube.patch_object(ERS_PLURAL, kube.namespace, "before", {"spec": {"replicas": 4}})
    kube.delete_object(ERS_PLURAL, kube.namespace, "after")

    eventually(lambda: recorder.seen("delete", "after"))
    assert recorder.events == [
        ("add", "before"),
        ("add", "after"),
        ("update", "before"),
        ("delete", "after"),
    ]
    stored = informer.store.get(kube.namespace, "before")
    assert stored is not None and stored["spec"]["replicas"] == 4
    assert informer.store.get(kube.namespace, "after") is None


def test_a_namespaced_informer_sees_only_its_namespace(kube: KubeApi, running: list[Any]) -> None:
    other = kube.create_namespace("other")
    kube.create_object(ERS_PLURAL, ers_body("mine"))
    kube.create_object(ERS_PLURAL, ers_body("theirs", namespace=other))
    informer, recorder = make(kube, running, namespace=kube.namespace)
    kube.create_object(ERS_PLURAL, ers_body("theirs-too", namespace=other))
    kube.create_object(ERS_PLURAL, ers_body("mine-too"))

    eventually(lambda: recorder.seen("add", "mine-too"))
    assert sorted(name for _, name in informer.store.list_keys()) == ["mine", "mine-too"]


@pytest.mark.embedded_only("a history limit of 3 events, fault injection")
def test_a_watch_answered_with_410_expired_relists_and_catches_up(running: list[Any]) -> None:
    with own_server(running, history_limit=3) as server:
        server.create_object(ERS_PLURAL, ers_body("old"))
        # Hold the first watch back while more changes than the history keeps happen.
        server.inject_fault(verb="watch", resource=ERS_PLURAL, latency=0.6)
        informer, recorder = make(server, running)
        for i in range(6):
            server.create_object(ERS_PLURAL, ers_body(f"new-{i}"))
        server.delete_object(ERS_PLURAL, "default", "old")

        eventually(lambda: informer.store.get("default", "old") is None, timeout=5)
        expired = [r for r in server.request_log.records() if r.verb == "watch"]
        assert lists(server) == 2
        assert len(informer.store) == 6
        assert recorder.seen("delete", "old") and recorder.seen("add", "new-5")
        assert expired  # the informer watched (and was told 410) before relisting


@pytest.mark.embedded_only("a server stopped and restarted mid-test")
def test_a_dropped_connection_relists_with_backoff_and_replays_what_was_missed(
    running: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    with own_server(running, port=unused_port()) as server:
        server.create_object(ERS_PLURAL, ers_body("stays"))
        server.create_object(ERS_PLURAL, ers_body("goes"))
        informer, recorder = make(server, running)
        eventually(informer.has_synced, what="the first list")

        with caplog.at_level(logging.WARNING, logger="ersctl.kube.informer"):
            before = len(caplog.records)
            server.stop()  # every connection drops; the informer keeps retrying
            # Down until the informer has found it so: a server back before its next
            # request let it watch on from where it was, with no relist (seen under load).
            eventually(
                lambda: any("relisting in" in r.getMessage() for r in caplog.records[before:]),
                what="the informer failing to reach the stopped server",
            )
        server.create_object(ERS_PLURAL, ers_body("born-while-down"))
        server.delete_object(ERS_PLURAL, "default", "goes")
        server.start()

        eventually(lambda: recorder.seen("add", "born-while-down"), timeout=5)
        eventually(lambda: recorder.seen("delete", "goes"), timeout=5)
        assert sorted(name for _, name in informer.store.list_keys()) == [
            "born-while-down",
            "stays",
        ]
        assert lists(server) >= 2
        # The store stays live: the watch resumed after the relist.
        server.patch_object(ERS_PLURAL, "default", "stays", {"spec": {"replicas": 2}})
        eventually(lambda: recorder.seen("update", "stays"))


@pytest.mark.embedded_only("a server replaced by an empty one mid-test")
def test_a_server_restarted_with_lower_resource_versions_is_relisted_not_waited_for(
    running: list[Any],
) -> None:
    # The informer's resourceVersion is newer than anything the new server has: a watch
    # from it would wait (a real server sends no ERROR for it), so the informer must not
    # resume watching; the dropped connection makes it relist instead.
    port = unused_port()
    old = ApiServer(port=port, gc=False).start()
    for i in range(20):
        old.create_object(ERS_PLURAL, ers_body(f"old-{i}"))
    informer, recorder = make(old, running)
    # Its watch open before the server goes: a watch request still on its way would be
    # sent again by urllib3 on its own, to the new server, from the old version (and
    # wait, as the test shows the informer must not); seen once in CI.
    eventually(
        lambda: any(r.verb == "watch" for r in old.request_log.records()),
        what="the informer watching the old server",
    )
    old.stop()
    with own_server(running, port=port) as new:
        new.create_object(ERS_PLURAL, ers_body("fresh"))

        eventually(lambda: recorder.seen("add", "fresh"), timeout=10)
        assert [name for _, name in informer.store.list_keys()] == ["fresh"]
        new.create_object(ERS_PLURAL, ers_body("fresher"))  # the watch after the relist
        eventually(lambda: recorder.seen("add", "fresher"))


def test_runners_are_indexed_by_their_controller_owner_as_events_arrive(
    kube: KubeApi, running: list[Any]
) -> None:
    owner = kube.create_object(ERS_PLURAL, ers_body("set"))
    informer = Informer(
        kube.api_client(),
        Resource(group=GROUP, version=VERSION, plural=ER_PLURAL),
        namespace=kube.namespace,
        store=Store(indexers={OWNER_UID_INDEX: controller_owner_uid}),
        backoff=FAST,
    )
    stop, thread = start(informer)
    running.append((informer, stop, thread))
    kube.create_object(ER_PLURAL, runner_body("r1", owner))
    kube.create_object(ER_PLURAL, runner_body("orphan", None))

    uid = owner["metadata"]["uid"]
    eventually(lambda: informer.store.by_index(OWNER_UID_INDEX, uid))
    assert [r["metadata"]["name"] for r in informer.store.by_index(OWNER_UID_INDEX, uid)] == ["r1"]


def test_equal_runner_specs_are_stored_once_and_handed_out_as_separate_copies(
    kube: KubeApi, running: list[Any]
) -> None:
    owner = kube.create_object(ERS_PLURAL, ers_body("set"))
    for name in ("r1", "r2"):
        kube.create_object(ER_PLURAL, runner_body(name, owner))
    informer = Informer(
        kube.api_client(),
        Resource(group=GROUP, version=VERSION, plural=ER_PLURAL),
        namespace=kube.namespace,
        store=Store(indexers={OWNER_UID_INDEX: controller_owner_uid}),
        backoff=FAST,
        share_specs=True,
    )
    stop, thread = start(informer)
    running.append((informer, stop, thread))
    kube.create_object(ER_PLURAL, runner_body("r3", owner))  # through the watch
    eventually(lambda: informer.store.get(kube.namespace, "r3"))
    kube.patch_object(ER_PLURAL, kube.namespace, "r2", {"spec": {"githubConfigUrl": "other"}})
    eventually(
        lambda: (
            (informer.store.get(kube.namespace, "r2") or {}).get("spec", {}).get("githubConfigUrl")
            == "other"
        )
    )

    r1, r2, r3 = (informer.store.get(kube.namespace, n) for n in ("r1", "r2", "r3"))
    assert r1 is not None and r2 is not None and r3 is not None
    assert r1["spec"] is r3["spec"]
    assert r2["spec"] is not r1["spec"] and r1["spec"]["githubConfigUrl"] != "other"
    copies = CachedReader(sets=Store(), runners=informer.store).list_owned_runners(
        EphemeralRunnerSet(owner)
    )
    copies[0].spec["githubConfigUrl"] = "mutated"
    assert r3["spec"]["githubConfigUrl"] == "https://github.com/octo-org"


@pytest.mark.embedded_only("fault injection")
def test_a_server_that_keeps_answering_410_is_backed_off_not_hammered(
    running: list[Any],
) -> None:
    with own_server(running) as server:
        server.inject_fault(verb="watch", resource=ERS_PLURAL, code=410, times=1000)
        make(server, running)
        time.sleep(0.5)
        # base 20 ms doubling up to 200 ms: about 6 relists in half a second, not hundreds
        assert 3 <= lists(server) <= 12


@pytest.mark.embedded_only("holds a watch request in the server to open the race")
def test_a_stop_that_races_a_watch_being_opened_still_ends_that_watch(
    apiserver: ApiServer,
) -> None:
    # The stop comes while the watch request is in flight (no response to interrupt
    # yet); the response that arrives afterwards must be closed at once, not read
    # until the idle watch times out (its timeout here is a minute).
    release = threading.Event()
    held = apiserver.inject_fault(verb="watch", resource=ERS_PLURAL, hold=release)
    informer = Informer(apiserver.api_client(), ERS, backoff=FAST, watch_timeout=60)
    stop, thread = start(informer)
    try:
        assert held.taken.wait(5), "the informer opened its watch"

        stop.set()
        informer.interrupt()  # too early: nothing to interrupt yet
        release.set()  # now the watch's response arrives
        thread.join(timeout=5)

        assert not thread.is_alive(), "the informer still reads a watch opened after its stop"
    finally:
        release.set()
        stop.set()
        informer.interrupt()
        thread.join(timeout=130)
