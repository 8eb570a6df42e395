"""The ersctl CLI against the embedded API server: status, rollout, --once, and two
controller processes of which only the lease holder reconciles."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner

from ersctl.api import API_VERSION, ARS_KIND, ARS_PLURAL, ER_PLURAL, ERS_PLURAL
from ersctl.cli import main
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.ports import unused_port
from tests.ersctl.kube.conftest import ers_body, runner_body
from tests.kubeapi import KubeApi
from tests.leases import refused_campaigns
from tests.polling import eventually

LEASE = "ersctl-leader"  # the default of ersctl reconcile --lease-name


@pytest.fixture
def kubeconfig(kube: KubeApi, tmp_path: Path) -> str:
    return str(kube.write_kubeconfig(tmp_path / "kubeconfig"))


def invoke(*args: str) -> tuple[int, str]:
    """Exit code and stdout (stdout and stderr when it failed)."""
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout if result.exit_code == 0 else result.output


def test_status_prints_one_row_per_set_with_runner_counts_and_guard_fields(
    kube: KubeApi, kubeconfig: str
) -> None:
    ns = kube.namespace
    owner = kube.create_object(ERS_PLURAL, ers_body("web", replicas=3, patch_id=7))
    kube.patch_object(ERS_PLURAL, ns, "web", {"status": {
        "phase": "Running", "finishedRunnerCleanupPatchID": 6, "appliedActionableRevision": 2,
        "currentReplicas": 0,
    }}, subresource="status")  # fmt: skip
    for name, phase in [("r1", "Running"), ("r2", "Pending"), ("r3", "Succeeded")]:
        kube.create_object(ER_PLURAL, runner_body(name, owner))
        kube.patch_object(ER_PLURAL, ns, name, {"status": {"phase": phase}}, subresource="status")
    kube.create_object(ERS_PLURAL, ers_body("idle"))

    code, out = invoke("status", "--namespace", ns, "--kubeconfig", kubeconfig)

    assert code == 0, out
    header, idle, web = out.splitlines()
    assert header.split() == [
        "NAMESPACE", "NAME", "DESIRED", "CURRENT", "PENDING", "RUNNING", "FAILED", "FINISHED",
        "DELETING", "PATCH-ID", "MARKER", "APPLIED-REV", "PHASE",
    ]  # fmt: skip
    assert idle.split() == [ns, "idle", *"0" * 10, "-"]
    assert web.split() == [ns, "web", "3", "2", "1", "1", "0", "1", "0", "7", "6", "2", "Running"]


def test_status_lists_failed_runners_with_their_last_reason_and_the_failing_condition(
    kube: KubeApi, kubeconfig: str
) -> None:
    ns = kube.namespace
    owner = kube.create_object(ERS_PLURAL, ers_body("web", replicas=2))
    message = "3 of the last 3 runners failed, latest r0 (TooManyPodFailures: ...)"
    kube.patch_object(ERS_PLURAL, ns, "web", {"status": {"currentReplicas": 1, "conditions": [{
        "type": "RunnersFailing", "status": "True", "reason": "RunnersFailing",
        "message": message, "lastTransitionTime": "2030-01-01T00:00:00Z",
    }]}}, subresource="status")  # fmt: skip
    kube.create_object(ER_PLURAL, runner_body("r1", owner))
    kube.patch_object(ER_PLURAL, ns, "r1", {"status": {
        "phase": "Failed", "reason": "TooManyPodFailures",
        "message": "the runner pod failed 5 times; last: ImagePullBackOff: image not found",
    }}, subresource="status")  # fmt: skip

    code, out = invoke("status", f"{ns}/web", "--kubeconfig", kubeconfig)

    assert code == 0, out
    _, row, *notes = out.splitlines()
    assert row.split()[2:7] == ["2", "1", "0", "0", "1"], "DESIRED CURRENT PENDING RUNNING FAILED"
    assert notes == [
        f"{ns}/web: Failed runner r1 (TooManyPodFailures: the runner pod failed 5 times; "
        "last: ImagePullBackOff: image not found)",
        f"{ns}/web: RunnersFailing=True: {message}",
    ]


def test_status_names_a_malformed_field_and_still_prints_the_others(
    kube: KubeApi, kubeconfig: str
) -> None:
    kube.create_object(ERS_PLURAL, ers_body("bad", replicas=-1))
    kube.create_object(ERS_PLURAL, ers_body("good", replicas=1))

    code, out = invoke("status", "--namespace", kube.namespace, "--kubeconfig", kubeconfig)

    assert code == 0, out
    assert f"{kube.namespace}/bad: invalid: spec.replicas: must be >= 0, got -1" in out
    assert any(line.split()[:3] == [kube.namespace, "good", "1"] for line in out.splitlines())


def scale_set_with_its_set(kube: KubeApi) -> None:
    """An AutoscalingRunnerSet ``arc`` (registered as scale set 12, Running) owning the
    set ``arc-x7k2p`` with one running runner, and the set ``loose`` of no ARS."""
    ars = kube.create_object(ARS_PLURAL, {
        "apiVersion": API_VERSION, "kind": ARS_KIND,
        "metadata": {"name": "arc", "annotations": {"runner-scale-set-id": "12"}},
        "spec": {
            "githubConfigUrl": "https://github.com/octo-org", "githubConfigSecret": "gh",
            "minRunners": 1,
            "template": {"spec": {"containers": [{"name": "runner", "image": "r"}]}},
        },
    })  # fmt: skip
    kube.patch_object(
        ARS_PLURAL, kube.namespace, "arc", {"status": {"phase": "Running", "state": "Running"}},
        subresource="status",
    )  # fmt: skip
    owned = ers_body("arc-x7k2p", replicas=1, patch_id=3)
    owned["metadata"]["ownerReferences"] = [{
        "apiVersion": API_VERSION, "kind": ARS_KIND, "name": "arc",
        "uid": ars["metadata"]["uid"], "controller": True,
    }]  # fmt: skip
    owner = kube.create_object(ERS_PLURAL, owned)
    kube.create_object(ER_PLURAL, runner_body("arc-x7k2p-r1", owner))
    kube.patch_object(
        ER_PLURAL, kube.namespace, "arc-x7k2p-r1", {"status": {"phase": "Running"}},
        subresource="status",
    )  # fmt: skip
    kube.create_object(ERS_PLURAL, ers_body("loose"))


def test_status_shows_the_autoscaling_runner_sets_with_the_set_each_owns(
    kube: KubeApi, kubeconfig: str
) -> None:
    scale_set_with_its_set(kube)
    ns = kube.namespace

    code, out = invoke("status", "--namespace", ns, "--kubeconfig", kubeconfig)

    assert code == 0, out
    sets, scale_sets = out.split("\n\n")
    assert [line.split()[:2] for line in sets.splitlines()[1:]] == [
        [ns, "arc-x7k2p"], [ns, "loose"]
    ]  # fmt: skip
    header, arc = scale_sets.splitlines()
    assert header.split() == [
        "NAMESPACE", "NAME", "MIN", "MAX", "SCALE-SET-ID", "RUNNER-SET", "PHASE", "STATE"
    ]  # fmt: skip
    assert arc.split() == [ns, "arc", "1", "-", "12", "arc-x7k2p", "Running", "Running"]

    code, out = invoke("status", f"{ns}/loose", "--kubeconfig", kubeconfig)
    assert code == 0 and "SCALE-SET-ID" not in out, out  # an ARS shows with its own set


def test_status_json_has_stable_keys_and_null_for_what_is_not_known(
    kube: KubeApi, kubeconfig: str
) -> None:
    scale_set_with_its_set(kube)
    kube.create_object(ERS_PLURAL, ers_body("bad", replicas=-1))
    ns = kube.namespace

    code, out = invoke("status", "-o", "json", "--namespace", ns, "--kubeconfig", kubeconfig)

    assert code == 0, out
    doc = json.loads(out)
    assert list(doc) == ["ephemeralRunnerSets", "autoscalingRunnerSets"]
    owned, bad, loose = doc["ephemeralRunnerSets"]
    assert owned == {
        "namespace": ns, "name": "arc-x7k2p", "desired": 1, "current": 1, "pending": 0,
        "running": 1, "failed": 0, "finished": 0, "deleting": 0, "patchID": 3,
        "finishedRunnerCleanupPatchID": 0, "appliedActionableRevision": 0, "phase": None,
        "problem": None, "notes": [],
    }  # fmt: skip
    assert list(bad) == list(owned) == list(loose)
    assert (bad["desired"], bad["running"]) == (None, None)
    assert bad["problem"] == "spec.replicas: must be >= 0, got -1"
    (arc,) = doc["autoscalingRunnerSets"]
    assert arc == {
        "namespace": ns, "name": "arc", "minRunners": 1, "maxRunners": None,
        "runnerScaleSetId": 12, "ephemeralRunnerSet": "arc-x7k2p", "phase": "Running",
        "state": "Running", "problem": None, "notes": [],
    }  # fmt: skip


def test_status_of_a_missing_set_is_one_line_and_exit_1(kube: KubeApi, kubeconfig: str) -> None:
    code, out = invoke("status", f"{kube.namespace}/nope", "--kubeconfig", kubeconfig)
    assert code == 1
    assert out.strip() == f"ersctl: EphemeralRunnerSet {kube.namespace}/nope not found"


@pytest.mark.embedded_only("fault injection, the request log")
def test_rollout_bumps_the_actionable_revision_with_a_resource_version_precondition(
    apiserver: ApiServer, kubeconfig: str
) -> None:
    apiserver.create_object(ERS_PLURAL, ers_body("web", namespace="default", actionableRevision=4))
    apiserver.inject_fault(verb="patch", resource=ERS_PLURAL, code=409)  # lost one race
    apiserver.request_log.clear()

    code, out = invoke("rollout", "default/web", "--kubeconfig", kubeconfig)

    assert code == 0, out
    assert out.strip() == "default/web: actionableRevision 4 -> 5"
    web = apiserver.get_object(ERS_PLURAL, "default", "web")
    assert web is not None and web["spec"]["actionableRevision"] == 5
    patches = [r for r in apiserver.request_log.records() if r.verb == "patch"]
    assert [p.status for p in patches] == [409, 200]
    assert all(json.loads(p.body)["metadata"]["resourceVersion"] for p in patches)
    assert patches[0].content_type == "application/merge-patch+json"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["rollout", "no-slash"], "expected NAMESPACE/NAME", id="rollout-bad-key"),
        pytest.param(["reconcile", "--once", "a/b/c"], "expected NAMESPACE/NAME", id="once-bad-key"),
        pytest.param(["status", "--kubeconfig", "/nonexistent/kubeconfig"],
                     "kubeconfig: /nonexistent/kubeconfig: no such file", id="missing-kubeconfig"),
    ],
)  # fmt: skip
def test_bad_input_is_one_clear_line_and_a_non_zero_exit(args: list[str], message: str) -> None:
    code, out = invoke(*args)
    assert code != 0
    assert message in out


def test_reconcile_once_prints_its_decision_and_acts_once(kube: KubeApi, kubeconfig: str) -> None:
    kube.create_object(ERS_PLURAL, ers_body("web", replicas=2, patch_id=1))
    key = f"{kube.namespace}/web"

    first = invoke("reconcile", "--once", key, "--kubeconfig", kubeconfig)
    second = invoke("reconcile", "--once", key, "--kubeconfig", kubeconfig)

    assert first == (0, f"{key}: finalizer-added\n")
    assert second[0] == 0 and second[1].startswith(f"{key}: scale-up")
    assert len(kube.list_objects(ER_PLURAL, kube.namespace)) == 2


def test_reconcile_once_of_a_missing_set_is_one_line_and_exit_1(
    kube: KubeApi, kubeconfig: str
) -> None:
    key = f"{kube.namespace}/nope"
    code, out = invoke("reconcile", "--once", key, "--kubeconfig", kubeconfig)
    assert (code, out.strip().splitlines()[-1]) == (
        1,
        f"ersctl: EphemeralRunnerSet {key} not found",
    )
    assert kube.list_objects(ER_PLURAL, kube.namespace) == []


@pytest.mark.embedded_only("injects a 503 into the start-up check")
def test_a_5xx_in_the_start_up_check_is_tried_again_not_a_crash(
    apiserver: ApiServer, kubeconfig: str
) -> None:
    apiserver.create_object(ERS_PLURAL, ers_body("web", namespace="default", replicas=0))
    apiserver.inject_fault(verb="get", resource="customresourcedefinitions", code=503)

    result = CliRunner().invoke(
        main, ["reconcile", "--once", "default/web", "--kubeconfig", kubeconfig]
    )

    assert (result.exit_code, result.stdout) == (0, "default/web: finalizer-added\n"), result.output
    assert result.stderr.count("start-up check:") == 1 and "HTTP 503" in result.stderr


# -- two controller processes -----------------------------------------------------------


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
        text = resp.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def reconciles(port: int) -> float:
    return sum(v for k, v in scrape(port).items() if k.startswith("ersctl_reconcile_total"))


@pytest.fixture
def controllers(kubeconfig: str) -> Iterator[list[tuple[subprocess.Popen[str], int]]]:
    procs: list[tuple[subprocess.Popen[str], int]] = []
    for _ in range(2):
        port = unused_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "ersctl", "reconcile", "--kubeconfig", kubeconfig,
             "--namespace", "default", "--lease-duration", "4", "--renew-deadline", "3",
             "--retry-period", "1", "--metrics-addr", f"127.0.0.1:{port}",
             "--log-format", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        procs.append((proc, port))
    yield procs
    for proc, _ in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def cached_runners(port: int) -> float:
    """The runners of the set ``web`` in the cache of the controller at ``port``: the sum
    of its ``gha_controller_*_ephemeral_runners`` gauges, counted from its cache."""
    return sum(
        value
        for key, value in scrape(port).items()
        if key.startswith("gha_controller_")
        and key.partition("{")[0].endswith("_ephemeral_runners")
        and 'name="web"' in key
    )


def reconciled_after_caching(apiserver: ApiServer, port: int, runners: int) -> None:
    """Wait until the controller at ``port`` has reconciled ``web`` with ``runners``
    runners in its cache: once its cache counts them, a label on the set (a change that
    decides nothing) brings one more reconcile."""
    eventually(
        lambda: cached_runners(port) == runners,
        timeout=30,
        what=f"{runners} runners in the cache of the controller at {port}",
    )
    seen = reconciles(port)
    apiserver.patch_object(ERS_PLURAL, "default", "web", {"metadata": {"labels": {"seen": "y"}}})
    eventually(lambda: reconciles(port) > seen, timeout=10, what="a reconcile after that")


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as resp:
            status: int = resp.status
            return status == 200
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.embedded_only("the request log shows the follower's refused campaigns")
def test_two_controller_processes_only_the_lease_holder_reconciles(
    apiserver: ApiServer, controllers: list[tuple[subprocess.Popen[str], int]]
) -> None:
    for _, port in controllers:
        eventually(partial(ready, port), timeout=20, interval=0.1)
    apiserver.create_object(
        ERS_PLURAL, ers_body("web", namespace="default", replicas=2, patch_id=1)
    )
    eventually(lambda: len(apiserver.list_objects(ER_PLURAL)) == 2, timeout=10)
    lease = apiserver.get_object("leases", "default", LEASE)
    assert lease is not None
    by_leading = sorted(controllers, key=lambda c: scrape(c[1])["ersctl_leader"], reverse=True)
    (leader, leader_port), (follower, follower_port) = by_leading

    # A 4 s lease: on 2 shared cores a loaded leader can stall for 2 s, and a shorter
    # lease would then (rightly) pass to the follower and fail this test.
    # The follower saw the set and its runners come and has campaigned since, refused.
    since = len(apiserver.request_log.records())
    eventually(
        lambda: refused_campaigns(apiserver.request_log, LEASE, since=since),
        timeout=10,
        what="a refused campaign of the follower",
    )
    assert scrape(leader_port)["ersctl_leader"] == 1.0
    assert scrape(follower_port)["ersctl_leader"] == 0.0
    assert reconciles(leader_port) >= 2
    assert reconciles(follower_port) == 0
    assert len(apiserver.list_objects(ER_PLURAL)) == 2

    leader.send_signal(signal.SIGTERM)
    assert leader.wait(timeout=10) == 0
    apiserver.patch_object(ERS_PLURAL, "default", "web", {"spec": {"replicas": 3, "patchID": 2}})
    eventually(lambda: len(apiserver.list_objects(ER_PLURAL)) == 3, timeout=10)
    eventually(lambda: reconciles(follower_port) >= 1)
    # The new leader has reconciled with the third runner in its cache: a reconcile
    # that would create one too many has run by then.
    reconciled_after_caching(apiserver, follower_port, 3)
    records = apiserver.request_log.records()
    assert len([r for r in records if (r.verb, r.resource) == ("create", ER_PLURAL)]) == 3
    assert len(apiserver.list_objects(ER_PLURAL)) == 3

    follower.send_signal(signal.SIGTERM)
    assert follower.wait(timeout=10) == 0
    _, err = follower.communicate(timeout=5)
    assert all(json.loads(line)["level"] for line in err.splitlines() if line.strip())
    # Nor did it try to act while it followed: the write fence would have refused it.
    assert "no longer holds the lease" not in err


@pytest.mark.slow
@pytest.mark.embedded_only("the watch delay makes the new leader's cache lag behind the batch")
def test_a_leader_killed_right_after_a_large_create_is_not_doubled_by_its_successor(
    apiserver: ApiServer, controllers: list[tuple[subprocess.Popen[str], int]]
) -> None:
    # Runner watch events reach both processes 15 s late: the follower's cache holds
    # none of the leader's batch when it takes over (after the 4 s lease), so only the
    # uncached confirmation of its first scale-up keeps it from creating them again.
    for _, port in controllers:
        eventually(partial(ready, port), timeout=20, interval=0.1)
    apiserver.set_watch_delay(ER_PLURAL, 15.0)
    apiserver.create_object(
        ERS_PLURAL, ers_body("web", namespace="default", replicas=40, patch_id=1)
    )
    eventually(lambda: len(apiserver.list_objects(ER_PLURAL)) == 40, timeout=20)
    by_leading = sorted(controllers, key=lambda c: scrape(c[1])["ersctl_leader"], reverse=True)
    (leader, _), (_, follower_port) = by_leading
    leader.kill()
    leader.wait(timeout=10)

    # The follower leads and reconciles the set while its cache lags, then again once
    # its cache shows the 40 runners.
    eventually(lambda: scrape(follower_port)["ersctl_leader"] == 1.0, timeout=15)
    eventually(lambda: reconciles(follower_port) >= 1, timeout=10)
    reconciled_after_caching(apiserver, follower_port, 40)

    creates = [
        r for r in apiserver.request_log.records() if (r.verb, r.resource) == ("create", ER_PLURAL)
    ]
    assert len(creates) == 40, f"{len(creates)} runners created for 40 replicas"
    assert len(apiserver.list_objects(ER_PLURAL)) == 40


@pytest.mark.embedded_only("holds the cache's list in the server so the stop comes during sync")
def test_once_stopped_while_its_caches_sync_exits_at_once_having_reconciled_nothing(
    apiserver: ApiServer, kubeconfig: str
) -> None:
    apiserver.create_object(ERS_PLURAL, ers_body("web", namespace="default", replicas=1))
    release = threading.Event()
    held = apiserver.inject_fault(verb="list", resource=ERS_PLURAL, hold=release)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ersctl", "reconcile", "--once", "default/web",
         "--kubeconfig", kubeconfig],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert held.taken.wait(30), "the --once run started listing the sets"
        proc.send_signal(signal.SIGTERM)
        assert proc.stderr is not None
        for line in iter(proc.stderr.readline, ""):  # up to the line that says it took it
            if "received SIGTERM" in line:
                break
        release.set()  # the list answers after the stop: too late to matter
        out, err = proc.communicate(timeout=30)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == 0, err
    assert out == "", "no reconcile ran, so no decision is printed"
    web = apiserver.get_object(ERS_PLURAL, "default", "web")
    assert web is not None and not web["metadata"].get("finalizers"), "nothing was written"
