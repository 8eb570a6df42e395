"""The switch, both ways: a live ARC 0.14.2 or 0.15.1 install (``live_arc.py``: as ARC's
charts and controller leave it, one runner busy and one idle, ARC's listener holding
the scale set's session) gets the controller Deployment of ARC's chart with only its
image replaced, run as that Deployment says (``chart_manager.py``, under the chart's
RBAC), then the image set back.

- ersctl adopts: no listener, ServiceAccount, Role, RoleBinding, Secret or Pod made or
  replaced (every uid the same), ARC's listener keeps running (its Pod, its image, its
  session), no scale set registered, the busy runner untouched until it finishes its
  job, the idle runner not rebuilt; scaling goes on (a queued job gets a runner that
  runs it) with the guard on (each cleanup records the patch ID it serviced, or the
  listener's count in force named the runner's completion: the listener here is this
  project's, which names them, standing in for ARC's).
- Stopped (the image set back to ARC's), what it leaves is what ARC's controller
  expects (``arc_expects.py``).
- Deleting the ARS afterwards, with ours running again, leaves nothing of the scale
  set in the cluster or at GitHub.

For 0.14, ARC's CRDs are replaced by ours server-side first (README: ARC 0.14's prune
the guard's fields); ARC 0.15.1's carry them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

from ersctl import api
from ersctl.api import EphemeralRunnerSet
from ersctl.autoscalinglistener.objects import LISTENER_HASH_ANNOTATION
from ersctl.testing.apiserver import ApiServer
from ghalistener.testing import GitHubSimulator, serve
from tests.deploy.arc_expects import what_arc_would_not_find
from tests.deploy.arc_objects import ARS, CHART_OBJECTS, GITHUB_SECRET
from tests.deploy.chart_manager import (
    CONTROLLER_NS,
    DEGRADED,
    RUNNERS_NS,
    SERVICE_ACCOUNT,
    WAIT,
    arc_image,
    chart_manager,
    deployment,
    install_chart,
    switched,
)
from tests.deploy.live_arc import LiveArc, live_arc
from tests.deploy.rbac import BoundRules
from tests.kubeapi import install_crds
from tests.polling import eventually

pytestmark = [
    pytest.mark.embedded_only("a server of its own, enforcing the chart's RBAC"),
    pytest.mark.slow,
]

ADOPTED: Final = (
    api.AL_PLURAL,
    api.ERS_PLURAL,
    api.ER_PLURAL,
    "serviceaccounts",
    "roles",
    "rolebindings",
    "secrets",
    "pods",
)

Inventory = dict[str, dict[tuple[str, str], str]]


def inventory(server: ApiServer) -> Inventory:
    """plural -> (namespace, name) -> uid of every object a switch could duplicate."""
    return {
        plural: {
            (o["metadata"]["namespace"], o["metadata"]["name"]): o["metadata"]["uid"]
            for o in server.list_objects(plural)
        }
        for plural in ADOPTED
    }


@pytest.mark.parametrize("version", ["0.14.2", "0.15.1"])
def test_a_live_arc_install_switched_to_our_image_and_back(
    version: str, unpacked: Path, sim: GitHubSimulator, tmp_path: Path
) -> None:
    with ApiServer(crds=False) as server, serve(sim, port=0) as github:
        docs = install_chart(server, version, crds="arc")
        with live_arc(server, sim, version, github_url=github.url, workdir=tmp_path) as live:
            assert what_arc_would_not_find(live) == []  # the install is ARC's by the same rules
            before, sessions = inventory(server), _sessions(sim)
            if live.line == "0.14":
                with server.api_client() as api_client:
                    install_crds(api_client)  # README: ours, server-side, first
            ours = switched(deployment(docs))
            server.patch_object(
                "deployments", CONTROLLER_NS, ours["metadata"]["name"], {"spec": ours["spec"]}
            )
            server.authorize(
                BoundRules.of(docs, namespace=CONTROLLER_NS, name=SERVICE_ACCOUNT).denied
            )
            with chart_manager(
                server, ours, unpacked=unpacked, workdir=tmp_path / "ours"
            ) as manager:
                _adopted(live, before, sessions)
                _busy_runner_finishes(live, before)
                _scaling_goes_on(live, before)
            assert manager.code == 0, manager.output[-3000:]
            # The image set back: ARC finds its own.
            assert what_arc_would_not_find(live) == [], manager.output[-3000:]
            _unchanged(live, before, api.AL_PLURAL, "serviceaccounts", "roles", "rolebindings")
            with chart_manager(
                server, ours, unpacked=unpacked, workdir=tmp_path / "again"
            ) as again:
                _deleted_to_the_last_object(live)
            assert again.code == 0, again.output[-3000:]
        refused = {(r.resource, r.verb) for r in server.request_log.records() if r.status == 403}
    assert refused == DEGRADED


def _sessions(sim: GitHubSimulator) -> list[str]:
    return [s["sessionId"] for s in sim.state()["sessions"]]


def _adopted(live: LiveArc, before: Inventory, sessions: list[str]) -> None:
    """Ours has taken everything over, and nothing was made or replaced."""
    seq = max((e["seq"] for e in live.sim.events), default=0)

    def taken_over() -> bool:
        live.step()
        ars = live.get(api.ARS_PLURAL, RUNNERS_NS, ARS)
        pod = live.get("pods", CONTROLLER_NS, live.listener)
        return (ars.get("status") or {}).get("phase") == "Running" and LISTENER_HASH_ANNOTATION in (
            pod["metadata"].get("annotations") or {}
        )

    eventually(taken_over, timeout=WAIT, what="the scale set taken over")
    assert inventory(live.server) == before
    # ARC's listener runs on: its Pod, its image, its session; nothing registered.
    assert live.kubelet.started == [live.listener]
    pod = live.get("pods", CONTROLLER_NS, live.listener)
    assert [c["image"] for c in pod["spec"]["containers"]] == [arc_image(live.version)]
    assert _sessions(live.sim) == sessions
    kinds = {e["kind"] for e in live.sim.events_since(seq)}
    assert not kinds & {
        "scaleset.created",
        "runner.registered",
        "runner.removed",
        "session.created",
    }
    busy = live.get(api.ER_PLURAL, RUNNERS_NS, live.busy)
    assert busy["status"]["jobId"] and not busy["metadata"].get("deletionTimestamp")


def _guarded(live: LiveArc, runner_id: int, marker: int) -> None:
    """The set's cleanup of runner ``runner_id`` went through the guard: the marker
    recorded the patch ID it serviced (ARC's rule), or the listener's count in force had
    named that runner's completion (ours: its slot refilled at once, no marker)."""
    ers = EphemeralRunnerSet(live.get(api.ERS_PLURAL, RUNNERS_NS, live.ers))
    named = runner_id in ers.completed_runner_ids
    assert named or ers.finished_runner_cleanup_patch_id > marker, (named, ers.status)


def _marker(live: LiveArc) -> int:
    ers = EphemeralRunnerSet(live.get(api.ERS_PLURAL, RUNNERS_NS, live.ers))
    return ers.finished_runner_cleanup_patch_id


def _busy_runner_finishes(live: LiveArc, before: Inventory) -> None:
    """The busy runner's job ends at GitHub and its runner exits 0: ours cleans it up
    under the guard."""
    marker = _marker(live)
    runner_id = int(live.get(api.ER_PLURAL, RUNNERS_NS, live.busy)["status"]["runnerId"])
    live.sim.complete_job(live.job)
    live.pods.exit(live.busy, 0)
    eventually(
        _gone(live, api.ER_PLURAL, RUNNERS_NS, live.busy), timeout=WAIT, what="the busy runner done"
    )
    _guarded(live, runner_id, marker)
    _unchanged(live, before, api.ER_PLURAL, only=live.idle)


def _scaling_goes_on(live: LiveArc, before: Inventory) -> None:
    """A queued job: ARC's listener scales the set up, ours makes a runner (ARC-shaped),
    it runs the job, and is cleaned up; the idle runner is never touched."""
    marker = _marker(live)
    job = live.sim.enqueue_job(live.scale_set_id)

    def new_runner() -> str | None:
        names = {o["metadata"]["name"] for o in live.server.list_objects(api.ER_PLURAL, RUNNERS_NS)}
        fresh = names - {live.idle, live.busy}
        pod = next(iter(fresh), None)
        return pod if pod and live.server.get_object("pods", RUNNERS_NS, pod) else None

    name = str(eventually(new_runner, timeout=WAIT, what="a runner for the queued job"))
    assert what_arc_would_not_find(live) == []  # the runner ours made is ARC's shape
    runner_id = live.pods.start(name)
    eventually(lambda: _assigned(live, job), timeout=WAIT, what="the job assigned")
    live.sim.start_job(runner_id, job)
    live.sim.complete_job(job)
    live.pods.exit(name, 0)
    eventually(_gone(live, api.ER_PLURAL, RUNNERS_NS, name), timeout=WAIT, what="its runner done")
    _guarded(live, runner_id, marker)
    _unchanged(live, before, api.ER_PLURAL, only=live.idle)
    _unchanged(live, before, "pods", only=live.idle)


def _assigned(live: LiveArc, job: int) -> bool:
    return any(j["requestId"] == job and j["state"] == "assigned" for j in live.sim.state()["jobs"])


def _unchanged(live: LiveArc, before: Inventory, *plurals: str, only: str = "") -> None:
    now = inventory(live.server)
    for plural in plurals:
        then = {k: v for k, v in before[plural].items() if not only or k[1] == only}
        assert {k: now[plural].get(k) for k in then} == then, plural


def _gone(live: LiveArc, plural: str, namespace: str, name: str) -> Callable[[], bool]:
    def gone() -> bool:
        live.step()
        return live.server.get_object(plural, namespace, name) is None

    return gone


def _deleted_to_the_last_object(live: LiveArc) -> None:
    """The ARS deleted with ours running: everything of the scale set goes, in the
    cluster (ARC's chart objects only lose ARC's cleanup finalizer) and at GitHub."""
    live.server.delete_object(api.ARS_PLURAL, RUNNERS_NS, ARS)

    def nothing_left() -> list[Any]:
        live.step()
        left: list[Any] = [
            (p, o["metadata"]["name"])
            for p in (api.ARS_PLURAL, api.AL_PLURAL, api.ERS_PLURAL, api.ER_PLURAL, "pods")
            for o in live.server.list_objects(p)
        ]
        left += [
            (p, name)
            for p, name in ((p, live.rbac_name) for p in ("roles", "rolebindings"))
            if live.server.get_object(p, RUNNERS_NS, name)
        ]
        left += [
            ("serviceaccounts", o["metadata"]["name"])
            for o in live.server.list_objects("serviceaccounts", CONTROLLER_NS)
            if o["metadata"]["name"] == live.rbac_name
        ]
        left += [
            ("secrets", o["metadata"]["name"])
            for o in live.server.list_objects("secrets")
            if o["metadata"]["name"] != GITHUB_SECRET
        ]
        left += [(p, n) for p, n in CHART_OBJECTS.values() if _protected(live, p, n)]
        left += [("secrets", GITHUB_SECRET)] if _protected(live, "secrets", GITHUB_SECRET) else []
        state = live.sim.state()
        left += [
            ("github", k, len(state[k])) for k in ("scaleSets", "runners", "sessions") if state[k]
        ]
        return left

    eventually(lambda: not nothing_left(), timeout=WAIT, what=f"nothing left ({nothing_left()})")


def _protected(live: LiveArc, plural: str, name: str) -> bool:
    obj = live.server.get_object(plural, RUNNERS_NS, name) or {}
    return api.CLEANUP_PROTECTION_FINALIZER in (obj.get("metadata", {}).get("finalizers") or [])
